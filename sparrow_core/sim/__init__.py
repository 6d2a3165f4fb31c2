"""sparrow_core.sim: the discrete-event simulator of a Sparrow cluster (csrc/sparrow/sim),
deciding with the same kernels as the runtime. See docs/simulator.md."""

from .._core import DURATIONS as DURATIONS
from .._core import PLACEMENT_POLICIES as PLACEMENT_POLICIES
from ._config import SimConfig as SimConfig
from ._resources import RESOURCE_PLACEMENTS as RESOURCE_PLACEMENTS
from ._resources import RESOURCE_WORKLOADS as RESOURCE_WORKLOADS
from ._resources import ResourceSimConfig as ResourceSimConfig
from ._resources import ResourceSimResult as ResourceSimResult
from ._resources import simulate_resources as simulate_resources
from ._result import SimResult as SimResult
from ._simulate import REPLAY_POLICIES as REPLAY_POLICIES
from ._simulate import simulate as simulate
from ._steal_script import StealScript as StealScript
from ._steal_script import read_steal_script as read_steal_script
from ._trace import Trace as Trace
from ._trace import read_trace as read_trace

__all__ = [
    "DURATIONS",
    "PLACEMENT_POLICIES",
    "REPLAY_POLICIES",
    "RESOURCE_PLACEMENTS",
    "RESOURCE_WORKLOADS",
    "ResourceSimConfig",
    "ResourceSimResult",
    "SimConfig",
    "SimResult",
    "StealScript",
    "Trace",
    "read_steal_script",
    "read_trace",
    "simulate",
    "simulate_resources",
]
