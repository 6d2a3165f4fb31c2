# Work stealing (csrc/sparrow/steal.h): which peers an idle worker asks, which answer it steals
# from and how many reservations move; the victim's side is ReservationQueue.steal (_queue.pxi).

cdef CStealConfig _steal_config(object victims, object max_take, object min_blocked) except *:
    cdef CStealConfig config
    config.victims = _as_int64(victims, "victims")
    config.max_take = _as_int64(max_take, "max_take")
    config.min_blocked = _as_double(min_blocked, "min_blocked")
    c_check_steal_config(config)
    return config


def choose_victims(Rng rng not None, n_workers, thief, k):
    """The peers an idle worker (`thief`) asks for work: min(k, n_workers - 1) distinct worker
    ids of range(n_workers), never the thief, uniformly at random.

    Examples:
        >>> sorted(choose_victims(Rng(1), 3, thief=1, k=5).tolist())
        [0, 2]
    """
    cdef vector[int64_t] out
    c_choose_victims(rng.c[0], _as_int64(n_workers, "n_workers"), _as_int64(thief, "thief"), _as_int64(k, "k"), out)
    return _from_vector(out)


def choose_steal(Rng rng not None, stealable, blocked_for, max_take=1, min_blocked=0.0):
    """Which peer's answer to steal from, and how many reservations to take (GIL released).

    Answer i says that peer has stealable[i] movable reservations queued behind a task that has
    run blocked_for[i] seconds. The victim is the eligible answer (stealable > 0, blocked_for >=
    min_blocked) behind the longest-running task; ties: the longer queue, then at random. It gives
    half its queue (rounded up), at most max_take. Returns (index, count), or None if no answer
    is eligible.

    Examples:
        >>> choose_steal(Rng(1), [3, 4, 0], [0.5, 0.2, 9.0], max_take=4)
        (0, 2)
    """
    cdef cnp.ndarray counts = _int64_array(stealable, "stealable")
    ages_of = np.ascontiguousarray(blocked_for, dtype=np.float64)
    if ages_of.ndim != 1 or ages_of.shape[0] != counts.shape[0]:
        raise ValueError(f"stealable and blocked_for must be one-dimensional of the same length, got "
                         f"{counts.shape[0]} and shape {ages_of.shape}")
    cdef cnp.ndarray ages = ages_of
    cdef CStealConfig config = _steal_config(1, max_take, min_blocked)
    cdef const int64_t* c = <const int64_t*>cnp.PyArray_DATA(counts)
    cdef const double* a = <const double*>cnp.PyArray_DATA(ages)
    cdef int64_t n = counts.shape[0]
    cdef CStealChoice choice
    with nogil:
        choice = c_choose_steal(rng.c[0], c, a, n, config)
    return None if choice.victim < 0 else (choice.victim, choice.take)
