"""Resource amounts (runtime/wire/resources.py): what users write becomes exact units, and every
bad amount, name or set of names is a clear ResourceError before anything is sent."""

import math

import msgspec
import pytest

from sparrow_runtime.wire import resources
from sparrow_runtime.wire.resources import ResourceError, parse_amount, parse_resources


@pytest.mark.parametrize(
    ("name", "amount", "units"),
    [
        ("cpus", 2, 2000),
        ("cpus", 0.5, 500),
        ("cpus", "0.25", 250),
        ("memory", 4e9, 4_000_000_000),
        ("memory", "4GiB", 4 * 1024**3),
        ("memory", "64G", 64 * 1000**3),
        ("memory", "512Mi", 512 * 1024**2),
        ("memory", "100", 100),
        ("gpu", 1, 1),
        ("gpu", "2", 2),
        ("license", 3, 3000),
    ],
)
def test_amounts_become_units(name, amount, units):
    assert parse_amount(name, amount) == units


@pytest.mark.parametrize(
    ("name", "amount", "message"),
    [
        ("cpus", -1, "must be >= 0"),
        ("gpu", "-1", "must be >= 0"),
        ("memory", "-4GiB", "must be >= 0"),
        ("cpus", "NaN", "finite"),
        ("memory", "-inf", "finite"),
        ("cpus", math.nan, "finite"),
        ("memory", math.inf, "finite"),
        ("memory", "4XB", "unknown unit 'XB'"),
        ("cpus", "4G", "only memory takes a unit"),
        ("gpu", 0.5, "whole devices"),
        ("cpus", 10**30, "over the limit"),
        ("memory", "9" * 30, "over the limit"),
        ("cpus", "lots", "not an amount"),
        ("cpus", True, "must be a number"),
        ("cpus", None, "must be a number"),
    ],
)
def test_bad_amounts_are_clear_errors(name, amount, message):
    with pytest.raises(ResourceError, match=message):
        parse_amount(name, amount)


def test_a_spec_string_and_a_mapping_give_the_same_units():
    """The command line's form and the API's agree; zero amounts ask for nothing."""
    spec = parse_resources("cpus=16, memory=64G,gpu=2,license=3,fpga=0")
    assert spec == {"cpus": 16000, "memory": 64 * 10**9, "gpu": 2, "license": 3000}
    assert parse_resources({"cpus": 16, "memory": "64G", "gpu": 2, "license": 3}) == spec
    assert parse_resources(None) == parse_resources("") == {}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpu", "name=amount"),
        ("gpu=1,gpu=2", "named twice"),
        ("GPU=1", "bad resource name"),
        ("slots=2", "every task takes one slot"),
        ({"x" * 500: 1}, "bad resource name 'x{64}\\.\\.\\.'"),
        ({f"r{i}": 1 for i in range(5000)}, "5000 resources named: at most 63"),
        (42, "must be a mapping"),
    ],
)
def test_bad_specs_are_clear_errors(spec, message):
    with pytest.raises(ResourceError, match=message):
        parse_resources(spec)


def test_units_print_back_as_users_write_them():
    units = parse_resources("cpus=0.5,memory=4GiB,gpu=2")
    assert resources.format_resources(units) == "cpus=0.5,gpu=2,memory=4GiB"
    assert parse_resources(resources.format_resources(units)) == units


def test_a_request_becomes_a_vector_over_the_offered_kinds():
    """One slot first, then each kind's units; a kind nobody offers is an error naming it."""
    kinds = ("slots", "cpus", "memory", "gpu")
    assert resources.to_units({"gpu": 1, "cpus": 500}, kinds) == [1, 500, 0, 1]
    assert resources.to_units({}, kinds) == [1, 0, 0, 0]
    with pytest.raises(ResourceError, match="'license' is not offered here"):
        resources.to_units({"license": 1000}, kinds)


def test_the_wire_type_bounds_names_units_and_kinds():
    """A peer's {kind: units} is checked by the decoder: bad names, negative or huge units, too many kinds."""
    decode = msgspec.msgpack.Decoder(resources.ResourceUnits).decode
    encode = msgspec.msgpack.encode
    assert decode(encode({"gpu": 1})) == {"gpu": 1}
    for bad in ({"gpu": -1}, {"gpu": 2**60}, {"Bad Name": 1}, {f"r{i}": 1 for i in range(64)}):
        with pytest.raises(msgspec.ValidationError):
            decode(encode(bad))
