"""sparrow_core.sim: the discrete-event simulator of a Sparrow cluster (csrc/sparrow/sim),
deciding with the same kernels as the runtime. See docs/simulator.md."""

from ._config import DURATIONS as DURATIONS
from ._config import POLICIES as POLICIES
from ._config import QUEUE_POLICIES as QUEUE_POLICIES
from ._config import SimConfig as SimConfig
from ._result import SimResult as SimResult
from ._simulate import simulate as simulate
from ._trace import Trace as Trace
from ._trace import read_trace as read_trace

__all__ = ["DURATIONS", "POLICIES", "QUEUE_POLICIES", "SimConfig", "SimResult", "Trace", "read_trace", "simulate"]
