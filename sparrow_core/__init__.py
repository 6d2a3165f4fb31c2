"""sparrow_core: the compiled kernels of the Sparrow scheduler (probe selection, reservation
queues, the late-binding task table, work stealing, the pipelining rule, resource fit) and the
simulator built on them (sparrow_core.sim)."""

from ._core import MAX_RESOURCES as MAX_RESOURCES
from ._core import PIPELINE_JIT_MARGIN as PIPELINE_JIT_MARGIN
from ._core import PIPELINE_JIT_SPREAD as PIPELINE_JIT_SPREAD
from ._core import PIPELINE_MAX_DEPTH as PIPELINE_MAX_DEPTH
from ._core import PIPELINE_MODES as PIPELINE_MODES
from ._core import PIPELINE_RECENT as PIPELINE_RECENT
from ._core import PIPELINE_SHORT_TASK as PIPELINE_SHORT_TASK
from ._core import PIPELINE_STEADY_SPREAD as PIPELINE_STEADY_SPREAD
from ._core import PRIORITY_RANGE as PRIORITY_RANGE
from ._core import QUEUE_POLICIES as QUEUE_POLICIES
from ._core import InfeasibleTaskError as InfeasibleTaskError
from ._core import PipelineRule as PipelineRule
from ._core import Reservation as Reservation
from ._core import ReservationQueue as ReservationQueue
from ._core import Rng as Rng
from ._core import TaskTable as TaskTable
from ._core import check_probe_ratio as check_probe_ratio
from ._core import choose_launch as choose_launch
from ._core import choose_steal as choose_steal
from ._core import choose_victims as choose_victims
from ._core import feasible_workers as feasible_workers
from ._core import probe_count as probe_count
from ._core import sample_batch as sample_batch
from ._core import sample_batch_many as sample_batch_many
from ._core import sample_constrained as sample_constrained
from ._core import sample_constrained_flat as sample_constrained_flat
from ._core import sample_job as sample_job
from ._core import sample_per_task as sample_per_task
from ._version import __version__ as __version__

__all__ = [
    "MAX_RESOURCES",
    "PIPELINE_JIT_MARGIN",
    "PIPELINE_JIT_SPREAD",
    "PIPELINE_MAX_DEPTH",
    "PIPELINE_MODES",
    "PIPELINE_RECENT",
    "PIPELINE_SHORT_TASK",
    "PIPELINE_STEADY_SPREAD",
    "PRIORITY_RANGE",
    "QUEUE_POLICIES",
    "InfeasibleTaskError",
    "PipelineRule",
    "Reservation",
    "ReservationQueue",
    "Rng",
    "TaskTable",
    "check_probe_ratio",
    "choose_launch",
    "choose_steal",
    "choose_victims",
    "feasible_workers",
    "probe_count",
    "sample_batch",
    "sample_batch_many",
    "sample_constrained",
    "sample_constrained_flat",
    "sample_job",
    "sample_per_task",
]
