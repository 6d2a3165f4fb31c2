# Reservation queues (csrc/sparrow/reservation_queue.h): the node monitor's queue of probes.
from cython.operator cimport dereference

_QUEUE_POLICY = {"fifo": CPolicy.Fifo, "priority": CPolicy.Priority, "fair": CPolicy.Fair}
# The queue policies, by name: what ReservationQueue, node monitors and the simulator accept.
QUEUE_POLICIES = tuple(_QUEUE_POLICY)
# The priorities a reservation may carry (lower runs first): 32-bit, as the kernel stores them.
PRIORITY_RANGE = range(INT32_MIN, <int64_t>INT32_MAX + 1)


@cython.freelist(64)
cdef class Reservation:
    """A queued reservation: the job it belongs to, its user (as pushed) and its priority."""
    cdef readonly int64_t job_id
    cdef readonly object user
    cdef readonly int32_t priority

    def __init__(self, job_id, user, priority=0):
        self.job_id = _as_int64(job_id, "job_id")
        self.user = user
        self.priority = _as_priority(priority, "priority")

    def __repr__(self):
        return f"Reservation(job_id={self.job_id}, user={self.user!r}, priority={self.priority})"

    def __eq__(self, other):
        if not isinstance(other, Reservation):
            return NotImplemented
        cdef Reservation o = other
        return self.job_id == o.job_id and self.user == o.user and self.priority == o.priority

    def __hash__(self):
        return hash((self.job_id, self.user, self.priority))


cdef class ReservationQueue:
    """A node monitor's reservation queue with policy "fifo", "priority" or "fair".

    fifo serves in arrival order; priority serves lower numbers first, FIFO within a level;
    fair shares pops between users in proportion to their weights (unknown users get
    `default_weight`), FIFO within a user. Users are str or int values.

    Examples:
        >>> q = ReservationQueue("fair", weights={"a": 3, "b": 1})
        >>> for job in range(8):
        ...     q.push(job, "a" if job % 2 else "b")
        >>> [q.pop().user for _ in range(4)]
        ['b', 'a', 'a', 'a']
    """
    cdef CReservationQueue* c
    cdef readonly str policy
    cdef dict _number_of_user          # user value -> dense number
    cdef list _users                   # dense number -> user value
    cdef unordered_map[int64_t, int32_t] _number_of_int_user
    cdef vector[int32_t] _number_of_small_user  # int user u in [0, 4096) -> number + 1 (0: unseen)
    cdef bint _all_int_users

    def __cinit__(self, policy="fifo", weights=None, default_weight=1.0):
        if not isinstance(policy, str):
            raise TypeError(f"policy must be a str, got {type(policy).__name__}")
        if policy not in _QUEUE_POLICY:
            raise ValueError(f"policy must be one of {', '.join(QUEUE_POLICIES)}, got {policy!r}")
        self.c = new CReservationQueue(_QUEUE_POLICY[policy], _as_double(default_weight, "default_weight"))
        self.policy = policy
        self._number_of_user = {}
        self._users = []
        self._all_int_users = True
        if weights is not None:
            if not isinstance(weights, dict):
                raise TypeError(f"weights must be a dict of user -> weight, got {type(weights).__name__}")
            for user, weight in weights.items():
                self.set_weight(user, weight)

    def __dealloc__(self):
        del self.c

    cdef object _known(self, object user):
        """The dense number of a user value, or None if never seen; TypeError if unhashable."""
        try:
            return self._number_of_user.get(user)
        except TypeError:
            raise TypeError(f"user must be a str or an int, got {type(user).__name__}") from None

    cdef int32_t _number(self, object user) except -1:
        """The dense number of a user value, registering it on first sight."""
        number = self._known(user)
        if number is not None:
            return number
        if isinstance(user, np.integer):
            user = int(user)
        if isinstance(user, bool) or not isinstance(user, (str, int)):
            raise TypeError(f"user must be a str or an int, got {type(user).__name__}")
        number = len(self._users)
        if isinstance(user, int):
            self._number_of_int_user[_as_int64(user, "user")] = number
            if 0 <= user < 4096:  # push_many looks these up by index
                if self._number_of_small_user.size() <= <size_t>user:
                    self._number_of_small_user.resize(user + 1, 0)
                self._number_of_small_user[user] = number + 1
        else:
            self._all_int_users = False
        self._number_of_user[user] = number
        self._users.append(user)
        return number

    cdef Reservation _wrap(self, CReservation r):
        cdef Reservation out = Reservation.__new__(Reservation)
        out.job_id = r.job_id
        out.user = self._users[r.user]
        out.priority = r.priority
        return out

    def set_weight(self, user, weight):
        """Sets a user's share weight (> 0); it applies to the user's next pops."""
        self.c.set_weight(self._number(user), _as_double(weight, "weight"))

    def push(self, job_id, user, priority=0, count=1):
        """Queues `count` reservations of job_id for user at the given priority (the rest with
        the GIL released). ValueError if the job already has reservations queued for another
        user; then nothing is queued."""
        cdef int64_t job = _as_int64(job_id, "job_id")
        cdef int32_t number = self._number(user)
        cdef int32_t level = _as_priority(priority, "priority")
        cdef int64_t n = _as_int64(count, "count"), i
        cdef int32_t owner
        if n < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        if n == 0:
            return
        try:
            self.c.push(job, number, level)
        except ValueError:  # the kernel names users by number: name them as pushed
            owner = self.c.job_user(job)
            if owner >= 0 and owner != number:
                raise self._owner_conflict(job, owner, user) from None
            raise
        with nogil:
            for i in range(1, n):
                self.c.push(job, number, level)

    cdef object _owner_conflict(self, int64_t job, int32_t owner, object user):
        return ValueError(f"job {job} already has reservations queued for user {self._users[owner]!r}, "
                          f"not {user!r}")

    def pop(self):
        """Removes and returns the next Reservation in policy order, or None if empty."""
        cdef CReservation r
        if not self.c.pop(r):
            return None
        return self._wrap(r)

    def peek(self):
        """The Reservation pop() would return, without removing it; None if empty."""
        cdef CReservation r
        if not self.c.peek(r):
            return None
        return self._wrap(r)

    def refund(self, user):
        """The get_task for a reservation just popped for user came back empty: the user
        keeps its turn, so the next pop serves it again (fair policy; no-op otherwise).
        ValueError if the user has no pop to refund."""
        number = self._known(user)
        if number is None:
            raise ValueError(f"refund: user {user!r} was never queued")
        if self.policy == "fair" and not self.c.can_refund(number):
            raise ValueError(f"refund: user {user!r} has no pop left to refund")
        self.c.refund(number)

    def cancel(self, job_id):
        """Removes every queued reservation of job_id; returns how many were removed."""
        return self.c.cancel(_as_int64(job_id, "job_id"))

    def count(self, user):
        """How many reservations of user are queued."""
        number = self._known(user)
        return 0 if number is None else self.c.count(number)

    def counts(self):
        """{user: queued reservations} for every user with at least one."""
        cdef int32_t i
        return {self._users[i]: self.c.count(i) for i in range(len(self._users)) if self.c.count(i)}

    def push_many(self, job_ids, users, priorities=None):
        """Queues reservations job_ids[i] for int user users[i] (priorities[i], default 0),
        all or nothing (GIL released): on a ValueError naming the first bad entry (its job
        queued for another user, or a priority beyond 32 bits) nothing is queued."""
        cdef cnp.ndarray jobs = _int64_array(job_ids, "job_ids")
        cdef cnp.ndarray who = _int64_array(users, "users")
        cdef cnp.ndarray prio = None if priorities is None else _int64_array(priorities, "priorities")
        cdef Py_ssize_t n = jobs.shape[0], i = 0
        if who.shape[0] != n or (prio is not None and prio.shape[0] != n):
            raise ValueError(f"job_ids, users and priorities must have the same length, got "
                             f"{n}, {who.shape[0]} and {n if prio is None else prio.shape[0]}")
        cdef const int64_t* j = <const int64_t*>cnp.PyArray_DATA(jobs)
        cdef const int64_t* u = <const int64_t*>cnp.PyArray_DATA(who)
        cdef const int64_t* p = NULL
        if prio is not None:
            p = <const int64_t*>cnp.PyArray_DATA(prio)
        cdef cnp.ndarray numbers = np.empty(n, dtype=np.int32)
        cdef int32_t* number = <int32_t*>cnp.PyArray_DATA(numbers)
        cdef unordered_map[int64_t, int32_t].iterator found
        cdef const int32_t* small
        cdef int64_t n_small
        while True:  # users to dense numbers; an unseen user is registered with the GIL
            small = self._number_of_small_user.data()
            n_small = self._number_of_small_user.size()
            with nogil:
                while i < n:
                    if 0 <= u[i] < n_small and small[u[i]] != 0:
                        number[i] = small[u[i]] - 1
                    else:
                        found = self._number_of_int_user.find(u[i])
                        if found == self._number_of_int_user.end():
                            break
                        number[i] = dereference(found).second
                    i += 1
            if i == n:
                break
            self._number(int(u[i]))
        cdef int32_t owner = -1
        cdef int64_t bad
        with nogil:
            bad = self.c.push_many(j, number, p, n, owner)
        if bad >= 0:
            raise ValueError(f"job_ids[{bad}]: " + str(self._owner_conflict(j[bad], owner, int(u[bad]))))

    def pop_many(self, max_count):
        """Pops up to max_count reservations (GIL released) as (job_ids, users, priorities)
        arrays; users is int64 when every user is an int, else an object array."""
        cdef int64_t limit = _as_int64(max_count, "max_count")
        if limit < 0:
            raise ValueError(f"max_count must be >= 0, got {limit}")
        cdef int64_t n = min(limit, self.c.size()), i  # exactly n pops succeed
        cdef cnp.ndarray jobs = np.empty(n, dtype=np.int64)
        cdef cnp.ndarray numbers = np.empty(n, dtype=np.int32)
        cdef cnp.ndarray prios = np.empty(n, dtype=np.int64)
        cdef int64_t* job = <int64_t*>cnp.PyArray_DATA(jobs)
        cdef int32_t* number = <int32_t*>cnp.PyArray_DATA(numbers)
        cdef int64_t* prio = <int64_t*>cnp.PyArray_DATA(prios)
        cdef CReservation r
        with nogil:
            for i in range(n):
                self.c.pop(r)
                job[i] = r.job_id
                number[i] = r.user
                prio[i] = r.priority
        users_of = np.asarray(self._users, dtype=np.int64 if self._all_int_users else object)
        return jobs, users_of[numbers], prios

    def steal(self, max_count, pinned=()):
        """Work stealing, the victim's side: removes up to max_count reservations from the head
        (in service order) and returns them, stopping at one whose job is in `pinned` (jobs whose
        reservations must stay, e.g. constrained ones). A fair queue's charge for each is
        refunded: the thief's queue charges the user when it serves them. The pops run with the
        GIL released."""
        cdef int64_t limit = _as_int64(max_count, "max_count")
        if limit < 0:
            raise ValueError(f"max_count must be >= 0, got {limit}")
        cdef cnp.ndarray ids = _int64_array(list(pinned), "pinned")
        cdef const int64_t* first = <const int64_t*>cnp.PyArray_DATA(ids)
        cdef vector[int64_t] keep
        keep.assign(first, first + ids.shape[0])
        c_sort_int64(keep.data(), keep.data() + keep.size())
        cdef size_t i, kept = 0
        for i in range(keep.size()):
            if kept == 0 or keep[kept - 1] != keep[i]:
                keep[kept] = keep[i]
                kept += 1
        keep.resize(kept)
        cdef vector[CReservation] out
        with nogil:
            c_take_reservations(self.c[0], limit, keep.data(), <int64_t>keep.size(), out)
        return [self._wrap(out[i]) for i in range(out.size())]

    def __len__(self):
        return self.c.size()

    def __bool__(self):
        return self.c.size() > 0

    def __repr__(self):
        return f"ReservationQueue(policy={self.policy!r}, queued={self.c.size()})"


cdef inline int32_t _as_priority(object value, str name) except? -1:
    """value as a priority of PRIORITY_RANGE; ValueError naming `name` outside it."""
    cdef int64_t v = _as_int64(value, name)
    if v < INT32_MIN or v > INT32_MAX:
        raise ValueError(f"{name} must fit in 32 bits (PRIORITY_RANGE), got {v}")
    return <int32_t>v
