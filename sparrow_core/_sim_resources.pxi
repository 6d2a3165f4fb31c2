# The resource simulator binding (csrc/sparrow/sim/resource/simulator.h): one call runs one
# simulation with the GIL released. sparrow_core.sim.simulate_resources validates the configuration
# (ResourceSimConfig) and turns it into the plain values taken here; this layer checks the arrays'
# shapes and owns the outputs.

_RESOURCE_PLACEMENT = {"sparrow": CResourcePlacement.Sparrow, "packer": CResourcePlacement.Packer}
# The resource simulator's placements, by name.
RESOURCE_PLACEMENTS = tuple(_RESOURCE_PLACEMENT)


def _simulate_resources(dict params, host_capacity, host_share, request, request_share):
    """Runs one resource simulation; returns a dict of numpy arrays and counters.

    params: the scalar fields of sparrow::sim::ResourceSimParams by name (policy by name).
    host_capacity (classes x kinds) and request (classes x kinds): int64 units, kind 0 the slots;
    host_share and request_share: each class's probability.
    Error handling: a configuration the C++ side rejects raises ValueError; Ctrl-C stops the
    simulation within 65,536 events and raises KeyboardInterrupt.
    """
    cdef CResourceSimParams p
    cdef CResourceSimOutput out
    hosts_of = np.ascontiguousarray(host_capacity, dtype=np.int64)
    requests_of = np.ascontiguousarray(request, dtype=np.int64)
    if hosts_of.ndim != 2 or requests_of.ndim != 2 or hosts_of.shape[1] != requests_of.shape[1]:
        raise ValueError(f"host_capacity and request must be two-dimensional with as many kinds, got shapes "
                         f"{hosts_of.shape} and {requests_of.shape}")
    cdef cnp.ndarray hosts = hosts_of
    cdef cnp.ndarray requests = requests_of
    cdef cnp.ndarray host_shares = np.ascontiguousarray(host_share, dtype=np.float64)
    cdef cnp.ndarray request_shares = np.ascontiguousarray(request_share, dtype=np.float64)
    if host_shares.ndim != 1 or host_shares.shape[0] != hosts.shape[0] or request_shares.ndim != 1 \
            or request_shares.shape[0] != requests.shape[0]:
        raise ValueError("one share per host class and per request class")
    p.policy = _RESOURCE_PLACEMENT[params["policy"]]
    p.n_workers = params["n_workers"]
    p.n_kinds = hosts.shape[1]
    p.n_host_classes = hosts.shape[0]
    p.host_capacity = <const int64_t*>cnp.PyArray_DATA(hosts)
    p.host_share = <const double*>cnp.PyArray_DATA(host_shares)
    p.n_request_classes = requests.shape[0]
    p.request = <const int64_t*>cnp.PyArray_DATA(requests)
    p.request_share = <const double*>cnp.PyArray_DATA(request_shares)
    p.n_jobs = params["n_jobs"]
    p.tasks_per_job = params["tasks_per_job"]
    p.arrival_rate = params["arrival_rate"]
    p.mean_duration = params["mean_duration"]
    p.probe_ratio = params["probe_ratio"]
    p.network_delay = params["network_delay"]
    p.fit_window = params["fit_window"]
    p.fit_max_skips = params["fit_max_skips"]
    p.seed = <uint64_t>params["seed"]
    cdef int64_t n_jobs = max(p.n_jobs, 0)
    cdef cnp.ndarray job_arrival = np.zeros(n_jobs, dtype=np.float64)
    cdef cnp.ndarray job_response = np.zeros(n_jobs, dtype=np.float64)
    cdef cnp.ndarray job_wait = np.zeros(n_jobs, dtype=np.float64)
    cdef cnp.ndarray job_class = np.zeros(n_jobs, dtype=np.int32)
    cdef cnp.ndarray host_class = np.zeros(max(p.n_workers, 0), dtype=np.int32)
    cdef cnp.ndarray work = np.zeros(p.n_kinds, dtype=np.float64)
    cdef cnp.ndarray held = np.zeros(p.n_kinds, dtype=np.float64)
    out.job_arrival = <double*>cnp.PyArray_DATA(job_arrival)
    out.job_response = <double*>cnp.PyArray_DATA(job_response)
    out.job_wait = <double*>cnp.PyArray_DATA(job_wait)
    out.job_class = <int32_t*>cnp.PyArray_DATA(job_class)
    out.host_class = <int32_t*>cnp.PyArray_DATA(host_class)
    out.work = <double*>cnp.PyArray_DATA(work)
    out.held = <double*>cnp.PyArray_DATA(held)
    p.should_stop = _signal_raised
    with nogil:
        c_simulate_resources(p, out)
    if out.counters.interrupted:
        _raise_interrupt()
    cdef CResourceCounters c = out.counters
    counters = {
        "probes": c.probes, "get_task": c.get_task, "get_task_empty": c.get_task_empty,
        "cancelled": c.cancelled, "skips": c.skips, "owed": c.owed, "events": c.events,
    }
    return {
        "job_arrival": job_arrival, "job_response": job_response, "job_wait": job_wait, "job_class": job_class,
        "host_class": host_class, "work": work, "held": held, "counters": counters, "end_time": c.end_time,
    }
