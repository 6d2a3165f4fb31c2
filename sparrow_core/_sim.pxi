# The simulator binding (csrc/sparrow/sim/simulator.h): one call runs one simulation with the
# GIL released. sparrow_core.sim validates the configuration and turns it into the plain
# values taken here; this layer only checks array shapes and owns the output arrays.

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


def _simulate(dict params, trace=None):
    """Runs one simulation; returns a dict of numpy arrays and counters.

    params: every field of sparrow::sim::SimParams by name, already validated (policy,
    duration and queue_policy as their enum numbers; user_weight, user_demand and
    priority_share as float sequences; keep_task_waits as a bool).
    trace: None, or (arrival float64[n], n_tasks int64[n], durations float64[sum n_tasks]).
    Error handling: a configuration the C++ side rejects raises ValueError; Ctrl-C (or any signal
    handler that raises) stops the simulation within 65,536 events and raises its exception.
    """
    cdef CSimParams p
    cdef CSimOutput out
    cdef cnp.ndarray arrival_in, tasks_in, offsets_in, durations_in
    cdef int64_t n_jobs, n_tasks_total
    p.policy = <CPlacementPolicy><int32_t>params["policy"]
    p.n_workers = params["n_workers"]
    p.slots = params["slots"]
    p.queue_policy = params["queue_policy"]
    p.network_delay = params["network_delay"]
    p.probe_ratio = params["probe_ratio"]
    p.n_schedulers = params["n_schedulers"]
    p.cancellation = params["cancellation"]
    p.seed = <uint64_t>params["seed"]
    p.n_jobs = params["n_jobs"]
    p.tasks_per_job = params["tasks_per_job"]
    p.arrival_rate = params["arrival_rate"]
    p.duration = <CDurationKind><int32_t>params["duration"]
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
        arrival_in = np.ascontiguousarray(trace[0], dtype=np.float64)
        tasks_in = np.ascontiguousarray(trace[1], dtype=np.int64)
        durations_in = np.ascontiguousarray(trace[2], dtype=np.float64)
        n_jobs = arrival_in.shape[0]
        if tasks_in.shape[0] != n_jobs:
            raise ValueError("trace: arrival and n_tasks must have one entry per job")
        offsets_in = np.zeros(n_jobs + 1, dtype=np.int64)
        np.cumsum(tasks_in, out=offsets_in[1:])
        n_tasks_total = offsets_in[n_jobs] if n_jobs else 0
        if durations_in.shape[0] != n_tasks_total:
            raise ValueError("trace: durations must have one entry per task")
        p.n_trace_jobs = n_jobs
        p.trace_arrival = <const double*>cnp.PyArray_DATA(arrival_in)
        p.trace_tasks = <const int64_t*>cnp.PyArray_DATA(tasks_in)
        p.trace_offsets = <const int64_t*>cnp.PyArray_DATA(offsets_in)
        p.trace_durations = <const double*>cnp.PyArray_DATA(durations_in)
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
    }
    return {
        "job_arrival": job_arrival, "job_response": job_response, "job_ideal": job_ideal,
        "job_wait": job_wait, "job_user": job_user, "job_priority": job_priority,
        "task_wait": task_wait, "counters": counters, "end_time": c.end_time,
    }
