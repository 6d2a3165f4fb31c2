# Probe selection (csrc/sparrow/sampling.h): which workers a job's reservations go to.

def probe_count(n_tasks, probe_ratio):
    """The number of probes of a job of n_tasks at probe ratio d: ceil(d * n_tasks).

    Examples:
        >>> probe_count(100, 1.05)
        105
    """
    return c_probe_count(_as_int64(n_tasks, "n_tasks"), _as_double(probe_ratio, "probe_ratio"))


def sample_batch(Rng rng not None, n_workers, n_tasks, probe_ratio, candidates=None):
    """Batch sampling: the workers that receive a job's ceil(d*m) reservations.

    Workers are distinct while there are enough of them; otherwise every worker gets
    floor(k/n) reservations and k mod n of them one more. With `candidates` (a job
    constraint) the workers are drawn from those ids instead of range(n_workers).

    Examples:
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

    Examples:
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

    Examples:
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
    """Per-task constrained sampling for a job whose tasks may each have candidate workers:
    sample_job without a job constraint.

    `task_candidates` has one entry per task: None (unconstrained) or that task's candidate
    worker ids. Each constrained task gets ceil(d) probes among its candidates; the
    unconstrained tasks together get ceil(d * m_u) probes among workers not already probed.
    Returns (workers, tasks): probe i goes to workers[i] and was made for task tasks[i]
    (-1: any unconstrained task); pass both to TaskTable.reserve.

    Examples:
        >>> workers, tasks = sample_constrained(Rng(1), 6, [[0, 1, 2], None], 2.0)
        >>> tasks.tolist()
        [0, 0, -1, -1]
    """
    cdef CJobRequest r = _job_request(n_workers, _sequence_length(task_candidates, "task_candidates"), probe_ratio)
    return _sample_job(rng, r, None, task_candidates, None, None)


def sample_constrained_flat(Rng rng not None, n_workers, candidates, offsets, probe_ratio):
    """sample_constrained with the candidates already flat: task t's candidate workers are
    candidates[offsets[t]:offsets[t + 1]] (an empty range: unconstrained), offsets has one
    entry per task plus one and starts at 0. The same draws as sample_constrained, without
    converting a list per task: the form for callers that keep constraints as arrays.

    Examples:
        >>> workers, tasks = sample_constrained_flat(Rng(1), 6, [0, 1, 2], [0, 3, 3], 2.0)
        >>> tasks.tolist()
        [0, 0, -1, -1]
    """
    cdef CJobRequest r = _job_request(n_workers, 0, probe_ratio)
    cdef cnp.ndarray flat = _int64_array(candidates, "candidates")
    cdef cnp.ndarray bounds = _int64_array(offsets, "offsets")
    r.n_tasks = bounds.shape[0] - 1
    _set_flat_constraints(r, flat, bounds, "candidates", "offsets")
    return _probe(rng, r)


class InfeasibleTaskError(ValueError):
    """A task that can run nowhere: none of its own candidate workers is among the job's
    candidates. `task` is its index in the job."""

    def __init__(self, task):
        super().__init__(f"task {task}: none of its candidate workers is among the job's candidates")
        self.task = task


def sample_job(Rng rng not None, n_workers, n_tasks, probe_ratio, candidates=None, task_candidates=None,
               task_offsets=None, tasks=None, prefer=None, prefer_offsets=None, per_task=False):
    """The probes of one job under its constraints: the workers that get its reservations and
    the task each probe is made for (GIL released).

    `candidates` is the job constraint (distinct worker ids; None: every worker of
    range(n_workers)). Per-task constraints, as `task_candidates` with one entry per task (None
    or empty: unconstrained), or flat with `task_offsets` (task t's candidates are
    task_candidates[task_offsets[t]:task_offsets[t + 1]], n_tasks + 1 offsets from 0). A
    constrained task may run on its own candidates that are also the job's, and gets ceil(d)
    probes there; the unconstrained tasks stay among the job's candidates and together get
    ceil(d * m_u) probes on those not already probed. A job without a constrained task is
    sampled exactly as sample_batch would. `tasks` (increasing indices) probes for those tasks
    only, e.g. the unlaunched ones of a job to probe again.

    `prefer` ("probe these first, then random ones"): per task, the workers it prefers (where
    its inputs are; a soft placement), as one entry per task (None or empty: none) or flat with
    `prefer_offsets`. Only those among a task's allowed workers count. A task with such a
    preferred set Q gets ceil(d) probes made for it: min(|Q|, max(ceil(d) - 1, 1)) of Q, the
    rest among its allowed workers outside Q (all on Q if it has no other), so a busy preferred
    worker never holds it alone when d >= 2. Give its TaskTable the same preferences
    (TaskTable.add_job's `preferred`): its probes are made for it. Without `prefer` the draws
    are those of a job without preferences, at no extra cost.

    `per_task` (per-task sampling, the paper's baseline): every unconstrained task without a
    preference gets ceil(d) probes of its own among the job's candidates, made for it (without
    a job constraint or other tasks: the draws of sample_per_task); give its TaskTable
    `per_task=True` too, so each task runs only where it was probed.

    Returns (workers, made_for): probe i goes to workers[i] and was made for task made_for[i]
    (-1: any unconstrained task); pass both to TaskTable.reserve.

    Error handling: a constrained task with no candidate among the job's raises
    InfeasibleTaskError (a ValueError) naming the first such task, drawing nothing (rng is
    untouched); a bad argument raises ValueError or TypeError naming it.

    Examples:
        >>> workers, made_for = sample_job(Rng(1), 8, 3, 2.0, candidates=[0, 1, 2, 3],
        ...                                task_candidates=[[1, 6], None, None])
        >>> workers[made_for == 0].tolist(), sorted(set(workers.tolist()) - {0, 1, 2, 3})
        ([1, 1], [])
    """
    cdef CJobRequest r = _job_request(n_workers, n_tasks, probe_ratio)
    r.per_task = bool(per_task)
    return _sample_job(rng, r, candidates, task_candidates, task_offsets, tasks, prefer, prefer_offsets)


cdef tuple _sample_job(Rng rng, CJobRequest r, object candidates, object task_candidates, object task_offsets,
                       object tasks, object prefer=None, object prefer_offsets=None):
    """sample_job for a request with its sizes set: converts and checks the arrays, then probes."""
    cdef cnp.ndarray cand, flat, bounds, which, pref_flat, pref_bounds
    cdef vector[int64_t] list_flat, list_offsets, pref_list, pref_list_offsets
    if candidates is not None:
        cand = _int64_array(candidates, "candidates")
        r.candidates = <const int64_t*>cnp.PyArray_DATA(cand)
        r.n_candidates = cand.shape[0]
    if task_offsets is not None:
        if task_candidates is None:
            raise ValueError("task_offsets needs task_candidates (the flat candidate array)")
        flat = _int64_array(task_candidates, "task_candidates")
        bounds = _int64_array(task_offsets, "task_offsets")
        _check_flat(flat, bounds, r.n_tasks, "task_candidates", "task_offsets")
        r.task_candidates = <const int64_t*>cnp.PyArray_DATA(flat)
        r.task_offsets = <const int64_t*>cnp.PyArray_DATA(bounds)
    elif task_candidates is not None:
        _flatten_candidates(task_candidates, r.n_tasks, "task_candidates", list_flat, list_offsets)
        r.task_candidates = list_flat.data()
        r.task_offsets = list_offsets.data()
    if prefer_offsets is not None:
        if prefer is None:
            raise ValueError("prefer_offsets needs prefer (the flat preferred workers)")
        pref_flat = _int64_array(prefer, "prefer")
        pref_bounds = _int64_array(prefer_offsets, "prefer_offsets")
        _check_flat(pref_flat, pref_bounds, r.n_tasks, "prefer", "prefer_offsets")
        r.prefer = <const int64_t*>cnp.PyArray_DATA(pref_flat)
        r.prefer_offsets = <const int64_t*>cnp.PyArray_DATA(pref_bounds)
    elif prefer is not None:
        _flatten_candidates(prefer, r.n_tasks, "prefer", pref_list, pref_list_offsets)
        r.prefer = pref_list.data()
        r.prefer_offsets = pref_list_offsets.data()
    if tasks is not None:
        which = _int64_array(tasks, "tasks")
        r.tasks = <const int64_t*>cnp.PyArray_DATA(which)
        r.n_selected = which.shape[0]
    return _probe(rng, r)


def check_probe_ratio(value, name="probe_ratio"):
    """`value` as a float when it is a valid probe ratio (probes per task: a finite number
    >= 1, what every sampling kernel requires); ValueError naming `name` otherwise (TypeError
    for something that is not a number).

    Examples:
        >>> check_probe_ratio(2)
        2.0
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got bool")
    cdef double d = _as_double(value, name)
    if not c_valid_probe_ratio(d):
        raise ValueError(f"{name} must be a finite number >= 1, got {value!r}")
    return d


cdef CJobRequest _job_request(object n_workers, object n_tasks, object probe_ratio) except *:
    """A request without constraints; sizes and the ratio converted, naming the argument."""
    cdef CJobRequest r
    r.n_workers = _as_int64(n_workers, "n_workers")
    r.n_tasks = _as_int64(n_tasks, "n_tasks")
    r.probe_ratio = _as_double(probe_ratio, "probe_ratio")
    r.candidates = NULL
    r.n_candidates = 0
    r.task_candidates = NULL
    r.task_offsets = NULL
    r.tasks = NULL
    r.n_selected = 0
    r.prefer = NULL
    r.prefer_offsets = NULL
    r.per_task = False
    if r.n_workers < 0:
        raise ValueError(f"n_workers must be >= 0, got {r.n_workers}")
    if r.n_tasks < 0:
        raise ValueError(f"n_tasks must be >= 0, got {r.n_tasks}")
    return r


cdef int _set_flat_constraints(CJobRequest& r, cnp.ndarray flat, cnp.ndarray bounds, str flat_name,
                               str offsets_name) except -1:
    """Points r at flat per-task candidates after checking the offsets against the arrays
    (_check_offsets), naming the arguments."""
    _check_offsets(flat, bounds, r.n_tasks, flat_name, offsets_name)
    r.task_candidates = <const int64_t*>cnp.PyArray_DATA(flat)
    r.task_offsets = <const int64_t*>cnp.PyArray_DATA(bounds)
    return 0


cdef int _check_flat(cnp.ndarray flat, cnp.ndarray bounds, int64_t n_tasks, str flat_name,
                     str offsets_name) except -1:
    """The offsets of a flat per-task argument of sample_job: n_tasks + 1 of them (_check_offsets)."""
    if bounds.shape[0] != n_tasks + 1:
        raise ValueError(f"{offsets_name} must have n_tasks + 1 = {n_tasks + 1} entries, got {bounds.shape[0]}")
    return _check_offsets(flat, bounds, n_tasks, flat_name, offsets_name)


cdef int _check_offsets(cnp.ndarray flat, cnp.ndarray bounds, int64_t n_tasks, str flat_name,
                        str offsets_name) except -1:
    """n_tasks + 1 offsets (bounds has that many) from 0 to len(flat), never decreasing."""
    cdef const int64_t* off = <const int64_t*>cnp.PyArray_DATA(bounds)
    cdef Py_ssize_t t
    if n_tasks < 0 or off[0] != 0 or off[n_tasks] != flat.shape[0]:
        raise ValueError(f"{offsets_name} must start at 0 and end at len({flat_name}) ({flat.shape[0]}), "
                         f"one entry per task plus one")
    for t in range(n_tasks):
        if off[t + 1] < off[t]:
            raise ValueError(f"{offsets_name} must not decrease (task {t})")
    return 0


cdef tuple _probe(Rng rng, const CJobRequest& r):
    """Runs sample_job with the GIL released; InfeasibleTaskError for an infeasible task."""
    cdef vector[int64_t] workers, made_for
    cdef int64_t infeasible
    with nogil:
        infeasible = c_sample_job(rng.c[0], r, workers, made_for)
    if infeasible >= 0:
        raise InfeasibleTaskError(infeasible)
    return _from_vector(workers), _from_vector(made_for)


cdef Py_ssize_t _sequence_length(object values, str name) except -1:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence with one entry per task, got {type(values).__name__}")
    return len(values)
