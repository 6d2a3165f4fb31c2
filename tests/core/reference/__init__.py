"""Pure-Python reference models of the compiled kernels (csrc/sparrow/), decision for decision.

Each module mirrors one header and the binding's Python face (sparrow_core), so one scenario
suite runs against both and property tests compare their decisions on the same operations.
They favour plain code over speed: O(n) cancels and scans are fine here.
"""

from .fit_launcher import MAX_RESOURCES as MAX_RESOURCES
from .fit_launcher import choose_launch as choose_launch
from .fit_launcher import feasible_workers as feasible_workers
from .pipeline import PipelineRule as PipelineRule
from .reservation_queue import Reservation as Reservation
from .reservation_queue import ReservationQueue as ReservationQueue
from .rng import Rng as Rng
from .sampling import InfeasibleTaskError as InfeasibleTaskError
from .sampling import probe_count as probe_count
from .sampling import sample_batch as sample_batch
from .sampling import sample_batch_many as sample_batch_many
from .sampling import sample_constrained as sample_constrained
from .sampling import sample_job as sample_job
from .sampling import sample_per_task as sample_per_task
from .steal import choose_steal as choose_steal
from .steal import choose_victims as choose_victims
from .task_table import TaskTable as TaskTable
