"""sparrow_core: the compiled kernels of the Sparrow scheduler (probe selection, reservation
queues, the late-binding task table) and the simulator built on them (sparrow_core.sim)."""

from ._core import Reservation as Reservation
from ._core import ReservationQueue as ReservationQueue
from ._core import Rng as Rng
from ._core import TaskTable as TaskTable
from ._core import probe_count as probe_count
from ._core import sample_batch as sample_batch
from ._core import sample_batch_many as sample_batch_many
from ._core import sample_constrained as sample_constrained
from ._core import sample_constrained_flat as sample_constrained_flat
from ._core import sample_per_task as sample_per_task

__all__ = [
    "Reservation",
    "ReservationQueue",
    "Rng",
    "TaskTable",
    "probe_count",
    "sample_batch",
    "sample_batch_many",
    "sample_constrained",
    "sample_constrained_flat",
    "sample_per_task",
]
