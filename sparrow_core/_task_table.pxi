# The late-binding task table (csrc/sparrow/task_table.h): the scheduler's view of its jobs.

cdef class TaskTable:
    """The scheduler side of late binding: for each job, its unlaunched tasks and where its
    reservations are. A task is bound to a worker only when that worker asks for it.

    Examples:
        >>> table = TaskTable()
        >>> table.add_job(7, n_tasks=2)
        >>> table.reserve(7, [3, 5, 8])
        >>> table.get_task(7, 5), table.get_task(7, 3), table.get_task(7, 8)
        (0, 1, None)
        >>> table.all_launched(7)
        True
    """
    cdef CTaskTable c

    def add_job(self, job_id, n_tasks, candidates=None, preferred=None, per_task=False):
        """Adds a job of n_tasks tasks; `candidates` is None or one entry per task: None
        (unconstrained) or the task's candidate worker ids (it runs only there). `preferred`
        likewise gives a task's preferred workers (sample_job's `prefer`): such a soft task
        goes first to a worker that has a reservation made for it or prefers it, else to any
        worker of the job left with nothing unconstrained to run. A task with candidates is
        constrained whatever it prefers. With `per_task` (per-task sampling: sample_job's
        `per_task`), each task with neither runs only where a reservation was made for it."""
        cdef int64_t job = _as_int64(job_id, "job_id")
        cdef int64_t m = _as_int64(n_tasks, "n_tasks")
        cdef vector[int64_t] flat, offsets, pref, pref_offsets
        if m < 0:
            raise ValueError(f"n_tasks must be >= 0, got {m}")
        if candidates is not None:
            _flatten_candidates(candidates, m, "candidates", flat, offsets)
        if preferred is not None:
            _flatten_candidates(preferred, m, "preferred", pref, pref_offsets)
        self.c.add_job(job, m, flat.data() if candidates is not None else NULL,
                       offsets.data() if candidates is not None else NULL,
                       pref.data() if preferred is not None else NULL,
                       pref_offsets.data() if preferred is not None else NULL, bool(per_task))

    def reserve(self, job_id, workers, tasks=None):
        """Records that reservations of job_id went to `workers`; tasks[i] is the task probe i
        was made for (as returned by sample_job), default -1 (any unconstrained task)."""
        cdef int64_t job = _as_int64(job_id, "job_id")
        cdef cnp.ndarray where = _int64_array(workers, "workers")
        cdef cnp.ndarray which
        if tasks is None:
            self.c.reserve(job, <const int64_t*>cnp.PyArray_DATA(where), NULL, where.shape[0])
            return
        which = _int64_array(tasks, "tasks")
        if which.shape[0] != where.shape[0]:
            raise ValueError(f"workers and tasks must have the same length, got {where.shape[0]} and {which.shape[0]}")
        self.c.reserve(job, <const int64_t*>cnp.PyArray_DATA(where), <const int64_t*>cnp.PyArray_DATA(which),
                       where.shape[0])

    def get_task(self, job_id, worker):
        """The task index `worker` should launch for job_id, or None when nothing is left for
        it (or it holds no outstanding reservation of the job). Consumes one reservation."""
        cdef int64_t task = self.c.get_task(_as_int64(job_id, "job_id"), _as_int64(worker, "worker"))
        return None if task < 0 else task

    def get_task_many(self, job_ids, workers):
        """get_task for many (job, worker) requests in order (GIL released); -1 means none."""
        cdef cnp.ndarray jobs = _int64_array(job_ids, "job_ids")
        cdef cnp.ndarray where = _int64_array(workers, "workers")
        cdef Py_ssize_t n = jobs.shape[0]
        if where.shape[0] != n:
            raise ValueError(f"job_ids and workers must have the same length, got {n} and {where.shape[0]}")
        cdef cnp.ndarray out = np.empty(n, dtype=np.int64)
        cdef const int64_t* j = <const int64_t*>cnp.PyArray_DATA(jobs)
        cdef const int64_t* w = <const int64_t*>cnp.PyArray_DATA(where)
        cdef int64_t* o = <int64_t*>cnp.PyArray_DATA(out)
        cdef int64_t bad
        with nogil:  # all or nothing: a bad request leaves no earlier one applied
            bad = self.c.get_task_many(j, w, n, o)
        if bad >= 0:
            raise ValueError(f"job_ids[{bad}]: job_id {j[bad]} does not exist")
        return out

    def all_launched(self, job_id):
        """True once every task of the job has been handed out."""
        return self.c.all_launched(_as_int64(job_id, "job_id"))

    def workers_to_cancel(self, job_id):
        """Once all tasks are launched: the workers (sorted, unique) still holding the job's
        reservations, which are then forgotten (asking again gives an empty array)."""
        cdef vector[int64_t] out
        self.c.workers_to_cancel(_as_int64(job_id, "job_id"), out)
        c_sort_int64(out.data(), out.data() + out.size())  # the kernel's order is unspecified
        return _from_vector(out)

    def drop_worker(self, job_id, worker):
        """Forgets the job's outstanding reservations at a worker that is gone; returns how many."""
        return self.c.drop_worker(_as_int64(job_id, "job_id"), _as_int64(worker, "worker"))

    def unlaunched(self, job_id):
        """The task indices of the job not launched yet, ascending."""
        cdef vector[int64_t] out
        self.c.unlaunched(_as_int64(job_id, "job_id"), out)
        return _from_vector(out)

    def unlaunch(self, job_id, task):
        """Undoes the launch of `task` (its node monitor gave it back unstarted): the job's next get_task may
        bind it again. ValueError if the task is out of range or not launched."""
        self.c.unlaunch(_as_int64(job_id, "job_id"), _as_int64(task, "task"))

    def launch_all(self, job_id):
        """Marks every task of the job launched (a job added back for a given-back task, then `unlaunch`)."""
        self.c.launch_all(_as_int64(job_id, "job_id"))

    def remove_job(self, job_id):
        """Forgets the job (ValueError if it does not exist)."""
        self.c.remove_job(_as_int64(job_id, "job_id"))

    def n_tasks(self, job_id):
        """The number of tasks of the job (ValueError if it does not exist)."""
        return self.c.n_tasks(_as_int64(job_id, "job_id"))

    def n_launched(self, job_id):
        """How many of the job's tasks have been handed out by get_task."""
        return self.c.n_launched(_as_int64(job_id, "job_id"))

    def outstanding(self, job_id):
        """Reservations of the job neither answered nor cancelled."""
        return self.c.outstanding(_as_int64(job_id, "job_id"))

    def __contains__(self, job_id):
        try:
            return self.c.contains(PyNumber_Index(job_id))
        except (TypeError, OverflowError):
            return False

    def __len__(self):
        return self.c.size()

    def __repr__(self):
        return f"TaskTable(jobs={self.c.size()})"
