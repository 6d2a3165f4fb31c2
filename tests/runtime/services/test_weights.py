"""Users' fair-share weights in their one text form, USER=WEIGHT, as the CLI and LocalCluster read them."""

from __future__ import annotations

import pytest

from sparrow_runtime.services.weights import check_weights, parse_weight


def test_a_pair_reads_as_user_and_weight_and_the_user_may_hold_an_equals_sign():
    """The weight is after the last "=", so a user named "a=b" keeps its name."""
    assert parse_weight("alice=3") == ("alice", 3.0)
    assert parse_weight("a=b=0.5") == ("a=b", 0.5)
    assert check_weights({"alice": 3, "bob": 1.5}) == {"alice": 3.0, "bob": 1.5}


@pytest.mark.parametrize("text", ["alice", "=2", "alice=", "alice=x", "alice=0", "alice=-1", "alice=inf", "alice=nan"])
def test_a_bad_pair_is_refused_with_what_was_expected(text):
    """No user, no number, or a weight that is not finite and > 0: one ValueError quoting the pair."""
    with pytest.raises(ValueError, match=r"^expected USER=WEIGHT with a weight > 0, got "):
        parse_weight(text)


def test_a_bad_weight_in_a_mapping_is_refused_as_its_pair():
    """check_weights names the pair as the --weight flag it would become."""
    with pytest.raises(ValueError, match=r"got 'bob=0'$"):
        check_weights({"alice": 1, "bob": 0})
