# The simulator binding (csrc/sparrow/sim/simulator.h): one call runs one simulation with the
# GIL released. sparrow_core.sim validates the configuration and turns it into the plain
# values taken here; this layer maps names to the C++ enums, checks array shapes and owns the
# output arrays.

_PLACEMENT_POLICY = {
    "random": CPlacementPolicy.Random, "per_task": CPlacementPolicy.PerTask, "batch": CPlacementPolicy.Batch,
    "sparrow": CPlacementPolicy.Sparrow, "omniscient": CPlacementPolicy.Omniscient,
    "sparrow_steal": CPlacementPolicy.SparrowSteal,
    "sparrow_pipelined": CPlacementPolicy.SparrowPipelined,
    "sparrow_steal_pipelined": CPlacementPolicy.SparrowStealPipelined,
}
_DURATION = {
    "exponential": CDurationKind.Exponential, "constant": CDurationKind.Constant,
    "bimodal": CDurationKind.Bimodal, "per_job": CDurationKind.PerJob,
}
# The simulator's placement policies and task duration distributions, by name.
PLACEMENT_POLICIES = tuple(_PLACEMENT_POLICY)
DURATIONS = tuple(_DURATION)

cdef extern from "Python.h":
    # no `except` clause: the exception a signal handler raises stays set for _raise_interrupt
    int _check_signals "PyErr_CheckSignals"()


cdef int _signal_raised(void* unused) noexcept nogil:
    """The simulator's should_stop, polled every 65,536 events: runs Python's signal handlers
    (Ctrl-C raises KeyboardInterrupt) and says whether one raised."""
    with gil:
        return _check_signals() != 0


cdef int _raise_interrupt() except -1:
    return -1  # propagates the exception left set by _signal_raised


def _simulate(dict params, dict trace=None, dict steals=None):
    """Runs one simulation; returns a dict of numpy arrays and counters.

    params: every field of sparrow::sim::SimParams by name, already validated (policy,
    duration and queue_policy by name; user_weight, user_demand and priority_share as float
    sequences; keep_task_waits as a bool).
    trace: None, or {"arrival": float64[n], "n_tasks": int64[n], "durations": float64[sum
    n_tasks]} and optionally "lines" (int64[n], for error messages), the constraints
    "job_candidates", "job_offsets" (n + 1), "task_candidates", "task_offsets" (sum n_tasks + 1),
    the dependencies "parents", "parent_offsets" (n + 1; parents are earlier job indices), and a
    replayed placement "probes", "probe_offsets" (n + 1; each job's probed workers).
    steals: None, or a steal script to replay (policy/steal_script.h): {"at": float64[k], "thief": int64[k],
    "victims": int64[...], "victim_offsets": int64[k + 1]}.
    Error handling: a configuration the C++ side rejects raises ValueError; Ctrl-C (or any signal
    handler that raises) stops the simulation within 65,536 events and raises its exception.
    """
    cdef CSimParams p
    cdef CSimOutput out
    cdef dict arrays = {}  # the trace's arrays, kept alive while the simulation reads them
    cdef int64_t n_jobs, n_tasks_total
    p.policy = _PLACEMENT_POLICY[params["policy"]]
    p.n_workers = params["n_workers"]
    p.slots = params["slots"]
    p.queue_policy = _QUEUE_POLICY[params["queue_policy"]]
    p.network_delay = params["network_delay"]
    p.launch_overhead = params["launch_overhead"]
    p.submit_delay = params["submit_delay"]
    p.result_delay = params["result_delay"]
    p.probe_ratio = params["probe_ratio"]
    p.n_schedulers = params["n_schedulers"]
    p.cancellation = params["cancellation"]
    p.seed = <uint64_t>params["seed"]
    p.steal_victims = params["steal_victims"]
    p.steal_max_take = params["steal_max_take"]
    p.steal_min_blocked = params["steal_min_blocked"]
    p.steal_wait = params["steal_wait"]
    p.steal_script_tolerance = params["steal_script_tolerance"]
    p.pipeline_after = params["pipeline_after"]
    p.pipeline_depth = params["pipeline_depth"]
    p.pipeline_gate = params["pipeline_gate"]
    p.pipeline_jit = params["pipeline_jit"]
    p.pipeline_steady = params["pipeline_steady"]
    p.n_jobs = params["n_jobs"]
    p.tasks_per_job = params["tasks_per_job"]
    p.arrival_rate = params["arrival_rate"]
    p.duration = _DURATION[params["duration"]]
    p.mean_duration = params["mean_duration"]
    p.bimodal_long_fraction = params["bimodal_long_fraction"]
    p.bimodal_ratio = params["bimodal_ratio"]
    p.user_weight = [float(w) for w in params["user_weight"]]
    p.user_demand = [float(d) for d in params["user_demand"]]
    p.priority_share = [float(s) for s in params["priority_share"]]
    p.constrained_jobs = params["constrained_jobs"]
    p.constraint_workers = params["constraint_workers"]
    p.constrained_tasks = params["constrained_tasks"]
    p.task_candidates = params["task_candidates"]
    if trace is None:
        n_jobs = p.n_jobs
        n_tasks_total = p.n_jobs * p.tasks_per_job
    else:
        n_jobs, n_tasks_total = _set_trace(p, trace, arrays)
    if steals is not None:
        _set_steal_script(p, steals, arrays)
    cdef cnp.ndarray job_arrival = np.zeros(n_jobs, dtype=np.float64)
    cdef cnp.ndarray job_response = np.zeros(n_jobs, dtype=np.float64)
    cdef cnp.ndarray job_ideal = np.zeros(n_jobs, dtype=np.float64)
    cdef cnp.ndarray job_wait = np.zeros(n_jobs, dtype=np.float64)
    cdef cnp.ndarray job_user = np.zeros(n_jobs, dtype=np.int32)
    cdef cnp.ndarray job_priority = np.zeros(n_jobs, dtype=np.int32)
    cdef cnp.ndarray task_wait = np.zeros(n_tasks_total if params["keep_task_waits"] else 0, dtype=np.float64)
    out.job_arrival = <double*>cnp.PyArray_DATA(job_arrival)
    out.job_response = <double*>cnp.PyArray_DATA(job_response)
    out.job_ideal = <double*>cnp.PyArray_DATA(job_ideal)
    out.job_wait = <double*>cnp.PyArray_DATA(job_wait)
    out.job_user = <int32_t*>cnp.PyArray_DATA(job_user)
    out.job_priority = <int32_t*>cnp.PyArray_DATA(job_priority)
    out.task_wait = <double*>cnp.PyArray_DATA(task_wait) if params["keep_task_waits"] else NULL
    p.should_stop = _signal_raised
    with nogil:
        c_simulate(p, out)
    if out.counters.interrupted:
        _raise_interrupt()
    cdef CSimCounters c = out.counters
    counters = {
        "probes": c.probes, "get_task": c.get_task, "get_task_empty": c.get_task_empty,
        "cancel_messages": c.cancel_messages, "cancelled": c.cancelled, "messages": c.messages,
        "events": c.events, "max_jobs_in_flight": c.max_jobs_in_flight,
        "steal_attempts": c.steal_attempts, "steals": c.steals, "stolen": c.stolen,
        "steal_replayed": c.steal_replayed,
        "asked_ahead": c.asked_ahead, "bound_ahead": c.bound_ahead,
    }
    return {
        "job_arrival": job_arrival, "job_response": job_response, "job_ideal": job_ideal,
        "job_wait": job_wait, "job_user": job_user, "job_priority": job_priority,
        "task_wait": task_wait, "counters": counters, "end_time": c.end_time,
    }


cdef tuple _set_trace(CSimParams& p, dict trace, dict arrays):
    """Points p at the trace's arrays (converted copies kept in `arrays`, after checking their
    lengths); returns (jobs, tasks)."""
    def array(name, dtype, length):
        values = arrays[name] = np.ascontiguousarray(trace[name], dtype=dtype)
        if values.ndim != 1 or (length is not None and values.shape[0] != length):
            raise ValueError(f"trace: {name} must be one-dimensional with {length} entries, got shape {values.shape}")
        return values

    cdef cnp.ndarray arrival = array("arrival", np.float64, None)
    cdef int64_t n_jobs = arrival.shape[0]
    cdef cnp.ndarray tasks = array("n_tasks", np.int64, n_jobs)
    cdef cnp.ndarray offsets = np.zeros(n_jobs + 1, dtype=np.int64)
    arrays["offsets"] = offsets
    np.cumsum(tasks, out=offsets[1:])
    cdef int64_t n_tasks_total = offsets[n_jobs] if n_jobs else 0
    cdef cnp.ndarray durations = array("durations", np.float64, n_tasks_total)
    p.n_trace_jobs = n_jobs
    p.trace_arrival = <const double*>cnp.PyArray_DATA(arrival)
    p.trace_tasks = <const int64_t*>cnp.PyArray_DATA(tasks)
    p.trace_offsets = <const int64_t*>cnp.PyArray_DATA(offsets)
    p.trace_durations = <const double*>cnp.PyArray_DATA(durations)
    cdef cnp.ndarray part
    if trace.get("lines") is not None:
        part = array("lines", np.int64, n_jobs)
        p.trace_lines = <const int64_t*>cnp.PyArray_DATA(part)
    if trace.get("job_offsets") is not None:
        part = array("job_offsets", np.int64, n_jobs + 1)
        p.trace_job_offsets = <const int64_t*>cnp.PyArray_DATA(part)
        part = array("job_candidates", np.int64, _span(part, "job_offsets"))
        p.trace_job_candidates = <const int64_t*>cnp.PyArray_DATA(part)
        part = array("task_offsets", np.int64, n_tasks_total + 1)
        p.trace_task_offsets = <const int64_t*>cnp.PyArray_DATA(part)
        part = array("task_candidates", np.int64, _span(part, "task_offsets"))
        p.trace_task_candidates = <const int64_t*>cnp.PyArray_DATA(part)
    if trace.get("parent_offsets") is not None:
        part = array("parent_offsets", np.int64, n_jobs + 1)
        p.trace_parent_offsets = <const int64_t*>cnp.PyArray_DATA(part)
        part = array("parents", np.int64, _span(part, "parent_offsets"))
        p.trace_parents = <const int64_t*>cnp.PyArray_DATA(part)
    if trace.get("probe_offsets") is not None:
        part = array("probe_offsets", np.int64, n_jobs + 1)
        p.trace_probe_offsets = <const int64_t*>cnp.PyArray_DATA(part)
        part = array("probes", np.int64, _span(part, "probe_offsets"))
        p.trace_probes = <const int64_t*>cnp.PyArray_DATA(part)
    return n_jobs, n_tasks_total


cdef _set_steal_script(CSimParams& p, dict steals, dict arrays):
    """Points p at the steal script's arrays (converted copies kept in `arrays`, after checking their lengths)."""
    def array(name, dtype, length):
        values = arrays["steal_" + name] = np.ascontiguousarray(steals[name], dtype=dtype)
        if values.ndim != 1 or (length is not None and values.shape[0] != length):
            raise ValueError(f"steal script: {name} must be one-dimensional with {length} entries, got shape {values.shape}")
        return values

    cdef cnp.ndarray at = array("at", np.float64, None)
    cdef int64_t n = at.shape[0]
    cdef cnp.ndarray part = array("thief", np.int64, n)
    p.n_steal_script = n
    p.steal_script_at = <const double*>cnp.PyArray_DATA(at)
    p.steal_script_thief = <const int64_t*>cnp.PyArray_DATA(part)
    part = array("victim_offsets", np.int64, n + 1)
    p.steal_script_offsets = <const int64_t*>cnp.PyArray_DATA(part)
    part = array("victims", np.int64, _span(part, "victim_offsets", "steal script"))
    p.steal_script_victims = <const int64_t*>cnp.PyArray_DATA(part)


cdef int64_t _span(cnp.ndarray offsets, str name, str owner="trace") except -1:
    """The length of the flat array that offsets (from 0, never decreasing) index; a ValueError names `owner`
    (the trace or the steal script) and `name` otherwise."""
    if offsets[0] != 0 or (offsets.shape[0] > 1 and np.diff(offsets).min() < 0):
        raise ValueError(f"{owner}: {name} must start at 0 and never decrease")
    return offsets[offsets.shape[0] - 1]
