# Probe selection (csrc/sparrow/sampling.h): which workers a job's reservations go to.

def probe_count(n_tasks, probe_ratio):
    """The number of probes of a job of n_tasks at probe ratio d: ceil(d * n_tasks).

    Example:
        >>> probe_count(100, 1.05)
        105
    """
    return c_probe_count(_as_int64(n_tasks, "n_tasks"), _as_double(probe_ratio, "probe_ratio"))


def sample_batch(Rng rng not None, n_workers, n_tasks, probe_ratio, candidates=None):
    """Batch sampling: the workers that receive a job's ceil(d*m) reservations.

    Workers are distinct while there are enough of them; otherwise every worker gets
    floor(k/n) reservations and k mod n of them one more. With `candidates` (a job
    constraint) the workers are drawn from those ids instead of range(n_workers).

    Example:
        >>> sample_batch(Rng(1), n_workers=6, n_tasks=2, probe_ratio=1.5).size
        3
    """
    cdef int64_t n = _as_int64(n_workers, "n_workers")
    cdef int64_t m = _as_int64(n_tasks, "n_tasks")
    cdef double d = _as_double(probe_ratio, "probe_ratio")
    cdef vector[int64_t] out
    cdef cnp.ndarray cand
    if n < 0:
        raise ValueError(f"n_workers must be >= 0, got {n}")
    if candidates is None:
        c_sample_batch(rng.c[0], n, m, d, out)
    else:
        cand = _int64_array(candidates, "candidates")
        c_check_candidates(<const int64_t*>cnp.PyArray_DATA(cand), cand.shape[0], n)
        c_sample_from(rng.c[0], <const int64_t*>cnp.PyArray_DATA(cand), cand.shape[0], c_probe_count(m, d), out)
    return _from_vector(out)


def sample_batch_many(Rng rng not None, n_workers, n_tasks, probe_ratio, candidates=None):
    """Batch sampling for many jobs in one call (GIL released), each job as sample_batch
    would; with `candidates` (one job constraint shared by all the jobs, checked once) the
    workers are drawn from those ids.

    Returns (flat, offsets): job j's workers are flat[offsets[j]:offsets[j + 1]].

    Example:
        >>> flat, offsets = sample_batch_many(Rng(1), 100, [2, 3], 2.0)
        >>> offsets.tolist()
        [0, 4, 10]
    """
    cdef int64_t n = _as_int64(n_workers, "n_workers")
    cdef double d = _as_double(probe_ratio, "probe_ratio")
    cdef cnp.ndarray sizes = _int64_array(n_tasks, "n_tasks")
    cdef const int64_t* m = <const int64_t*>cnp.PyArray_DATA(sizes)
    cdef Py_ssize_t n_jobs = sizes.shape[0], j
    cdef cnp.ndarray offsets = np.empty(n_jobs + 1, dtype=np.int64)
    cdef int64_t* off = <int64_t*>cnp.PyArray_DATA(offsets)
    cdef cnp.ndarray flat, cand
    cdef int64_t* out
    cdef const int64_t* c = NULL
    cdef int64_t n_cand = 0
    cdef bint constrained = candidates is not None
    if n < 0:
        raise ValueError(f"n_workers must be >= 0, got {n}")
    if constrained:
        cand = _int64_array(candidates, "candidates")
        c = <const int64_t*>cnp.PyArray_DATA(cand)
        n_cand = cand.shape[0]
        c_check_candidates(c, n_cand, n)
    with nogil:
        off[0] = 0
        for j in range(n_jobs):
            off[j + 1] = off[j] + c_probe_count(m[j], d)
    flat = np.empty(off[n_jobs], dtype=np.int64)
    out = <int64_t*>cnp.PyArray_DATA(flat)
    with nogil:
        for j in range(n_jobs):
            if constrained:
                c_sample_from_into(rng.c[0], c, n_cand, off[j + 1] - off[j], out + off[j])
            else:
                c_sample_workers_into(rng.c[0], n, off[j + 1] - off[j], out + off[j])
    return flat, offsets


def sample_per_task(Rng rng not None, n_workers, n_tasks, d):
    """Per-task sampling: d distinct probes for each task, as an (n_tasks, d) array.

    Example:
        >>> sample_per_task(Rng(1), 10, 3, 2).shape
        (3, 2)
    """
    cdef int64_t n = _as_int64(n_workers, "n_workers")
    cdef int64_t m = _as_int64(n_tasks, "n_tasks")
    cdef int64_t per_task = _as_int64(d, "d")
    cdef vector[int64_t] out
    if n < 0:
        raise ValueError(f"n_workers must be >= 0, got {n}")
    c_sample_per_task(rng.c[0], n, m, per_task, out)
    return _from_vector(out).reshape(m, per_task)


def sample_constrained(Rng rng not None, n_workers, task_candidates, probe_ratio):
    """Per-task constrained sampling for a job whose tasks may each have candidate workers.

    `task_candidates` has one entry per task: None (unconstrained) or that task's candidate
    worker ids. Each constrained task gets ceil(d) probes among its candidates; the
    unconstrained tasks together get ceil(d * m_u) probes among workers not already probed.
    Returns (workers, tasks): probe i goes to workers[i] and was made for task tasks[i]
    (-1: any unconstrained task); pass both to TaskTable.reserve.

    Example:
        >>> workers, tasks = sample_constrained(Rng(1), 6, [[0, 1, 2], None], 2.0)
        >>> tasks.tolist()
        [0, 0, -1, -1]
    """
    cdef int64_t n = _as_int64(n_workers, "n_workers")
    cdef double d = _as_double(probe_ratio, "probe_ratio")
    cdef vector[int64_t] flat, offsets, workers, tasks
    if n < 0:
        raise ValueError(f"n_workers must be >= 0, got {n}")
    _flatten_candidates(task_candidates, None, "task_candidates", flat, offsets)
    c_sample_constrained(rng.c[0], n, flat.data(), offsets.data(), offsets.size() - 1, d, workers, tasks)
    return _from_vector(workers), _from_vector(tasks)


def sample_constrained_flat(Rng rng not None, n_workers, candidates, offsets, probe_ratio):
    """sample_constrained with the candidates already flat: task t's candidate workers are
    candidates[offsets[t]:offsets[t + 1]] (an empty range: unconstrained), offsets has one
    entry per task plus one and starts at 0. The same draws as sample_constrained, without
    converting a list per task: the form for callers that keep constraints as arrays.

    Example:
        >>> workers, tasks = sample_constrained_flat(Rng(1), 6, [0, 1, 2], [0, 3, 3], 2.0)
        >>> tasks.tolist()
        [0, 0, -1, -1]
    """
    cdef int64_t n = _as_int64(n_workers, "n_workers")
    cdef double d = _as_double(probe_ratio, "probe_ratio")
    cdef cnp.ndarray flat = _int64_array(candidates, "candidates")
    cdef cnp.ndarray bounds = _int64_array(offsets, "offsets")
    cdef vector[int64_t] workers, tasks
    cdef const int64_t* off = <const int64_t*>cnp.PyArray_DATA(bounds)
    cdef Py_ssize_t n_tasks = bounds.shape[0] - 1, t
    if n < 0:
        raise ValueError(f"n_workers must be >= 0, got {n}")
    if n_tasks < 0 or off[0] != 0 or off[n_tasks] != flat.shape[0]:
        raise ValueError(f"offsets must start at 0 and end at len(candidates) ({flat.shape[0]}), "
                         f"one entry per task plus one")
    for t in range(n_tasks):
        if off[t + 1] < off[t]:
            raise ValueError(f"offsets must not decrease (task {t})")
    c_sample_constrained(rng.c[0], n, <const int64_t*>cnp.PyArray_DATA(flat), off, n_tasks, d, workers, tasks)
    return _from_vector(workers), _from_vector(tasks)
