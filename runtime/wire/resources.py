"""Resource amounts: what a task asks for and what a node monitor holds, parsed, checked and put in units.

A user writes amounts the way they think of them: `cpus=0.5`, `memory="4GiB"` or `4e9`, `gpu=1`,
`license=3`. On the wire and in the kernels every amount is a whole number of units of its kind
(sparrow_core's resource vectors, csrc/sparrow/resources.h), so fitting is exact:

- `cpus` and custom resources: thousandths (0.5 CPU is 500 units);
- `memory`: bytes (suffixes K, M, G, T, P with or without "B" are powers of 1000, Ki, Mi, Gi, Ti, Pi
  with or without "B" powers of 1024);
- `gpu`: whole devices (a task gets device ids of its own, so a fraction is an error).

Every amount is checked where it enters: a negative, NaN, infinite or over-large amount, an unknown
unit, a bad name or too many kinds is a `ResourceError` (a ValueError) naming what was wrong.
`slots` is not a resource a task may ask for: every task takes one slot.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Annotated

import msgspec

MAX_RESOURCE_KINDS = 63  # kinds one request or capacity may name (the kernels' 64 less the slot)
MAX_RESOURCE_NAME = 64  # characters of a resource's name
MAX_UNITS = 2**53  # units of one amount (exact as a float; capacities summed stay within int64)
NAME_PATTERN = r"^[a-z][a-z0-9_.\-]*$"

CPUS, MEMORY, GPU = "cpus", "memory", "gpu"
SLOTS = "slots"  # the first kind of every resource vector: every task takes one
MILLI = 1000  # units per whole CPU or custom resource

ResourceName = Annotated[str, msgspec.Meta(pattern=NAME_PATTERN, max_length=MAX_RESOURCE_NAME)]
Units = Annotated[int, msgspec.Meta(ge=0, le=MAX_UNITS)]
# A request or a capacity on the wire: {kind: units}; an empty mapping asks for a slot alone.
ResourceUnits = Annotated[dict[ResourceName, Units], msgspec.Meta(max_length=MAX_RESOURCE_KINDS)]

_NAME = re.compile(NAME_PATTERN)
_AMOUNT = re.compile(r"^\s*([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")
_NOT_FINITE = ("nan", "inf", "infinity")  # what float() reads that is no amount
_BYTES = {
    "": 1,
    "b": 1,
    **{p: 1000**i for i, p in enumerate("kmgtp", 1)},
    **{p + "b": 1000**i for i, p in enumerate("kmgtp", 1)},
    **{p + "i": 1024**i for i, p in enumerate("kmgtp", 1)},
    **{p + "ib": 1024**i for i, p in enumerate("kmgtp", 1)},
}


class ResourceError(ValueError):
    """An amount, a name or a set of resources that cannot be used: the message says which and why."""


def check_name(name: object) -> str:
    """`name` if it can name a resource (lower case letters, digits, `_.-`, at most 64 characters)."""
    if not isinstance(name, str):
        raise ResourceError(f"a resource name must be a string, got {type(name).__name__}")
    if len(name) > MAX_RESOURCE_NAME or not _NAME.match(name):
        shown = name if len(name) <= MAX_RESOURCE_NAME else name[:MAX_RESOURCE_NAME] + "..."
        raise ResourceError(
            f"bad resource name {shown!r}: lower-case letters, digits, '_', '.', '-', starting with a letter, "
            f"at most {MAX_RESOURCE_NAME} characters"
        )
    if name == SLOTS:
        raise ResourceError("'slots' is not a resource to ask for: every task takes one slot")
    return name


def _units(name: str, value: float, scale: int, whole: bool, shown: object) -> int:
    if math.isnan(value) or math.isinf(value):
        raise ResourceError(f"{name}={shown!r}: the amount must be a finite number")
    if value < 0:
        raise ResourceError(f"{name}={shown!r}: the amount must be >= 0")
    if whole and value != int(value):
        raise ResourceError(f"{name}={shown!r}: {name} is counted in whole devices")
    units = value * scale
    if units > MAX_UNITS:
        raise ResourceError(f"{name}={shown!r}: the amount is over the limit of {format_amount(name, MAX_UNITS)}")
    return round(units)


def parse_amount(name: str, amount: object) -> int:
    """The units of `amount` of the resource `name`: a number, or a string such as "0.5", "2", "4GiB"
    (memory only takes a unit suffix). Raises ResourceError for anything else."""
    check_name(name)
    whole = name == GPU
    scale = 1 if name in (MEMORY, GPU) else MILLI
    if isinstance(amount, bool) or not isinstance(amount, (int, float, str)):
        raise ResourceError(f"{name}: the amount must be a number or a string, got {type(amount).__name__}")
    if isinstance(amount, int):
        return _units(name, float(min(amount, 2 * MAX_UNITS)), scale, whole, amount)  # min: any int is a float
    if isinstance(amount, float):
        return _units(name, amount, scale, whole, amount)
    match = _AMOUNT.match(amount) if len(amount) <= 64 else None
    if match is None and amount.strip().lower().lstrip("+-") in _NOT_FINITE:
        raise ResourceError(f"{name}={amount!r}: the amount must be a finite number")
    if match is None:
        raise ResourceError(f"{name}={amount[:64]!r}: not an amount (a number, with a unit for memory: 4GiB, 512M)")
    number, unit = float(match.group(1)), match.group(2).lower()
    if name != MEMORY:
        if unit:
            raise ResourceError(f"{name}={amount!r}: only memory takes a unit")
        return _units(name, number, scale, whole, amount)
    if unit not in _BYTES:
        raise ResourceError(f"{name}={amount!r}: unknown unit {match.group(2)!r} (B, K, M, G, T, P, KiB, ..., PiB)")
    return _units(name, number * _BYTES[unit], 1, False, amount)


def parse_resources(spec: str | Mapping[str, object] | None) -> dict[str, int]:
    """{name: units} from "cpus=16,memory=64G,gpu=2" or a mapping {name: amount}; None or "" is {}.
    Amounts of zero are left out (asking for none is asking for nothing)."""
    if spec is None:
        return {}
    if isinstance(spec, str):
        pairs: list[tuple[object, object]] = []
        for part in spec.split(","):
            if not part.strip():
                continue
            written, sep, text = part.partition("=")
            if not sep:
                raise ResourceError(f"{part.strip()[:64]!r}: a resource is written name=amount (gpu=1)")
            pairs.append((written.strip(), text.strip()))
    elif isinstance(spec, Mapping):
        pairs = list(spec.items())
    else:
        raise ResourceError(f"resources must be a mapping or 'name=amount,...', got {type(spec).__name__}")
    if len(pairs) > MAX_RESOURCE_KINDS:
        raise ResourceError(f"{len(pairs)} resources named: at most {MAX_RESOURCE_KINDS}")
    units: dict[str, int] = {}
    for key, amount in pairs:
        name = check_name(key)
        if name in units:
            raise ResourceError(f"resource {name!r} named twice")
        units[name] = parse_amount(name, amount)
    return {name: amount for name, amount in units.items() if amount}


def units_problem(units: object, field: str = "resources") -> str | None:
    """Why `units` ({name: units} from a peer, as SubmitJob.resources) cannot be used, naming `field`; or None."""
    if not isinstance(units, dict):
        return f"{field}: must be a mapping of resource names to units, got {type(units).__name__}"
    if len(units) > MAX_RESOURCE_KINDS:
        return f"{field}: {len(units)} resources named, over the limit of {MAX_RESOURCE_KINDS}"
    for name, amount in units.items():
        try:
            check_name(name)
        except ResourceError as exc:
            return f"{field}: {exc}"
        if isinstance(amount, bool) or not isinstance(amount, int) or not 0 <= amount <= MAX_UNITS:
            return f"{field}: {name}={amount!r} units: must be an integer in [0, {MAX_UNITS}]"
    return None


def largest(capacities: Iterable[Mapping[str, int]], request: Mapping[str, int]) -> dict[str, int]:
    """The largest capacity seen of each kind `request` names (0 where none offers it), for the error of a
    request that nothing can hold."""
    seen = dict.fromkeys(request, 0)
    for capacity in capacities:
        for name in request:
            seen[name] = max(seen[name], capacity.get(name, 0))
    return seen


def format_amount(name: str, units: int) -> str:
    """`units` of `name` the way a user writes them (the inverse of parse_amount, for messages)."""
    if name == GPU:
        return str(units)
    if name == MEMORY:
        for suffix, size in (("PiB", 1024**5), ("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
            if units >= size and units % size == 0:
                return f"{units // size}{suffix}"
        return f"{units}B"
    return f"{units / MILLI:g}"


def format_resources(units: Mapping[str, int]) -> str:
    """The units as a user writes them, sorted by name: cpus=2,memory=4GiB ("nothing" for none)."""
    return ",".join(f"{name}={format_amount(name, units[name])}" for name in sorted(units)) or "nothing"


def to_units(request: Mapping[str, int], kinds: tuple[str, ...]) -> list[int]:
    """The request as a vector over `kinds` (the node monitor's or cluster's order, SLOTS first): one slot,
    then the units of each kind. A kind the request names that is not in `kinds` is a ResourceError:
    nothing there could ever hold it."""
    vector = [0] * len(kinds)
    index = {kind: i for i, kind in enumerate(kinds)}
    for name, amount in request.items():
        at = index.get(name)
        if at is None:
            raise ResourceError(f"resource {name!r} is not offered here (offered: {', '.join(kinds[1:]) or 'none'})")
        vector[at] = amount
    if SLOTS in index:
        vector[index[SLOTS]] = 1
    return vector
