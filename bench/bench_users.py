"""The runtime at the user's door, as asv rows: `python -m benchtools.users` run once in a process of its own
(so that its task functions live in `__main__`, as a user's script's do), its figures read back as Sparrow's
cost over a `ProcessPoolExecutor(2)`'s measured in the same run, or over the zero-overhead floor for the
open-loop loads. Lower is better, as asv assumes. The regression gate holds the CPU ratios and the loads
(benchtools/gate.py); the rest is tracked in the history.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = ["-m", "benchtools.users", "--json", "--rounds", "1", "--systems", "sparrow,pool"]


class UsersDoor:
    """SparrowExecutor with the user's own functions, over ProcessPoolExecutor(2) in the same run."""

    timeout = 900

    def setup_cache(self) -> dict[str, float | str]:
        if not (ROOT / "benchtools" / "users.py").exists():
            return {"unavailable": "this tree has no benchtools/users.py"}
        run = subprocess.run([sys.executable, *COMMAND], cwd=ROOT, capture_output=True, text=True, timeout=850)
        if run.returncode != 0:
            return {"unavailable": f"benchtools.users failed: {run.stderr.strip()[-2000:]}"}
        out = json.loads(run.stdout.splitlines()[-1])  # its figures over the pool's: asv's process has no benchtools
        if out["module"] != "__main__":
            return {"unavailable": f"the task functions were not the script's own: {out['module']}"}
        return dict(out["versus_pool"])

    def setup(self, figures: dict[str, float | str]) -> None:
        if "unavailable" in figures:
            raise NotImplementedError(figures["unavailable"])


def _track(key: str, doc: str) -> Callable[[UsersDoor, dict[str, float]], float]:
    """A row of asv: the figure `key` of the run."""

    def track(self: UsersDoor, figures: dict[str, float]) -> float:
        if key not in figures:  # a figure of an optional system (Dask) this environment lacks
            raise NotImplementedError(f"the run measured no {key}")
        return figures[key]

    track.__doc__ = doc
    track.unit = "ratio"  # type: ignore[attr-defined]
    return track


ROWS = {
    "map_time_vs_pool": ("map", "list(ex.map(f, range(10_000))), f from __main__: time over the pool's"),
    "map_builtin_time_vs_pool": ("map_builtin", "the same map of int: time over the pool's"),
    "submit_time_vs_pool": ("submit", "a submit per task, f from __main__: time over the pool's"),
    "callbacks_time_vs_pool": ("callbacks", "jobs of 10 with done-callbacks: time over the pool's"),
    "map_cpu_vs_pool": ("map_cpu", "the map's CPU per task over the pool's"),
    "map_builtin_cpu_vs_pool": ("map_builtin_cpu", "the map of int's CPU per task over the pool's"),
    "submit_cpu_vs_pool": ("submit_cpu", "the submit loop's CPU per task over the pool's"),
    "callbacks_cpu_vs_pool": ("callbacks_cpu", "the callbacks' CPU per task over the pool's"),
    "job_p50_vs_pool": ("job_p50", "a 10-task map's p50, f from __main__, over the pool's"),
    "job_p50_builtin_vs_pool": ("job_p50_builtin", "a 10-task map of int's p50 over the pool's"),
    "dask_time_vs_pool": ("dask", "dask.compute of 2,000 delayed calls: time over Dask's processes scheduler's"),
    "dask_p50_vs_pool": ("dask_p50", "dask.compute of 10 delayed calls, p50, over Dask's processes scheduler's"),
    "ms_tasks_time_vs_nominal": ("ms_busy", "1 ms tasks on 2 slots: the nominal rate over the rate reached"),
    "load80_vs_floor": ("load80", "80% load: p50 of (response - 10 ms) over the floor's"),
    "load70_vs_floor": ("load70", "70% load: p50 of (response - 10 ms) over the floor's"),
    "load80_executor_vs_client": ("load80_executor_vs_client", "80% load: the executor's p50 over the Client's"),
}
for _name, (_key, _doc) in ROWS.items():
    setattr(UsersDoor, f"track_{_name}", _track(_key, _doc))
