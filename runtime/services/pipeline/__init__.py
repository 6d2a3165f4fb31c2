"""A node monitor's pipelining policies (pipelined late binding: a busy slot asks for its next task ahead), one
mode per file behind one interface (policy.py), and the services' one set of defaults: steady, 16 deep.

The rule itself is the kernel's (csrc/sparrow/pipeline.h, `sparrow_core.PipelineRule`), shared with the
simulator; docs/pipelining.md explains each mode and its measurements."""

from __future__ import annotations

import sparrow_core

from .always import Always
from .gated import Gated
from .jit import JIT_ROUND_TRIP as JIT_ROUND_TRIP
from .jit import Jit
from .off import Off
from .policy import MAX_PIPELINE_DEPTH as MAX_PIPELINE_DEPTH
from .policy import PipelinePolicy as PipelinePolicy
from .policy import check_pipeline_depth as check_pipeline_depth
from .steady import Steady

PIPELINE_MODES: tuple[str, ...] = sparrow_core.PIPELINE_MODES  # off, gated, steady, jit, always
# The services' defaults (`sparrow node-monitor`, `sparrow local`, LocalCluster, NodeMonitorLogic): steady, 16 deep
# (docs/pipelining.md, "The default").
DEFAULT_PIPELINE_MODE = "steady"
DEFAULT_PIPELINE_DEPTH = 16

_POLICIES: dict[str, type[PipelinePolicy]] = {policy.mode: policy for policy in (Off, Gated, Steady, Jit, Always)}


def check_pipeline_mode(mode: str) -> str:
    """`mode` if it is one of PIPELINE_MODES, else ValueError naming them."""
    if mode not in _POLICIES:
        raise ValueError(f"pipeline must be one of {', '.join(PIPELINE_MODES)}, got {mode!r}")
    return mode


def make_pipeline(mode: str = DEFAULT_PIPELINE_MODE, depth: int = DEFAULT_PIPELINE_DEPTH) -> PipelinePolicy:
    """The policy of pipelining mode `mode` (PIPELINE_MODES) at `depth` (1..MAX_PIPELINE_DEPTH); ValueError
    naming a bad one."""
    return _POLICIES[check_pipeline_mode(mode)](depth)
