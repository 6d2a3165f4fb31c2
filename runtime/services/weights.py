"""Users' shares under the node monitor's fair policy, and their one text form, USER=WEIGHT (a weight
is a finite number > 0): read by the `--weight` setting of the command line, and checked by
LocalCluster before it passes a dict of weights to its node monitors as those same flags.

Error handling: a bad pair raises ValueError("expected USER=WEIGHT with a weight > 0, got '...'").
"""

from __future__ import annotations

import math
from collections.abc import Mapping


def parse_weight(text: str) -> tuple[str, float]:
    """`(user, weight)` from "USER=WEIGHT" (the user may itself contain "=")."""
    user, sep, value = text.rpartition("=")
    try:
        weight = float(value)
    except ValueError:
        sep = ""
    if not sep or not user or not math.isfinite(weight) or weight <= 0:
        raise ValueError(f"expected USER=WEIGHT with a weight > 0, got {text!r}")
    return user, weight


def check_weights(weights: Mapping[str, object]) -> dict[str, float]:
    """The weights of a `{user: weight}` mapping, each as its USER=WEIGHT text would read."""
    return dict(parse_weight(f"{user}={weight}") for user, weight in weights.items())
