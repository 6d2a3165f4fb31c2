# Resources per task (csrc/sparrow/resources.h, fit_launcher.h): which hosts can ever hold a
# request, and which waiting reservation a host launches with what is free.

MAX_RESOURCES = c_max_resources


cdef cnp.ndarray _int64_rows(object values, str name, Py_ssize_t columns):
    """values as a contiguous 2-d int64 array of `columns` columns (an empty sequence: no rows)."""
    array = np.asarray(values)
    if array.size == 0:
        return np.empty((0, columns), dtype=np.int64)
    if array.ndim != 2 or array.shape[1] != columns:
        raise ValueError(f"{name} must be two-dimensional with {columns} columns, got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {array.dtype}")
    if array.dtype.kind == "u" and array.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name} holds a value outside the 64-bit integer range")
    return np.ascontiguousarray(array, dtype=np.int64)


def feasible_workers(capacities, request):
    """The ids of the hosts whose capacity (row i of `capacities`, one column per resource kind)
    holds `request` in every kind: the candidates a job's probes are drawn from. An empty result
    means no host could ever run the request.

    Examples:
        >>> feasible_workers([[4, 0], [16, 2], [8, 1]], [8, 1]).tolist()
        [1, 2]
    """
    cdef cnp.ndarray want = _int64_array(request, "request")
    cdef Py_ssize_t r = want.shape[0]
    cdef cnp.ndarray hosts = _int64_rows(capacities, "capacities", r)
    cdef vector[int64_t] out
    cdef const int64_t* c = <const int64_t*>cnp.PyArray_DATA(hosts)
    cdef const int64_t* q = <const int64_t*>cnp.PyArray_DATA(want)
    cdef int64_t n = hosts.shape[0]
    with nogil:
        c_feasible_workers(c, n, r, q, out)
    return _from_vector(out)


def choose_launch(free, requests, head_skips=0, window=8, max_skips=8):
    """Which waiting reservation a host launches now (bounded skip-ahead with aging).

    `requests` holds the waiting reservations' requests in service order (row 0: the head), one
    column per resource kind as in `free`. The head launches if it fits; otherwise, while the head
    has been passed over fewer than `max_skips` times (`head_skips`, counted by the caller and reset
    when the head changes), the first of the next `window` - 1 that fits; otherwise none (the host
    is owed to the head). Returns the index, or None.

    Examples:
        >>> choose_launch([2, 0], [[4, 0], [1, 0], [2, 0]], head_skips=0)
        1
        >>> choose_launch([2, 0], [[4, 0], [1, 0]], head_skips=8) is None
        True
    """
    cdef cnp.ndarray have = _int64_array(free, "free")
    cdef Py_ssize_t r = have.shape[0]
    cdef cnp.ndarray waiting = _int64_rows(requests, "requests", r)
    cdef CFitRule rule
    rule.window = _as_int64(window, "window")
    rule.max_skips = _as_int64(max_skips, "max_skips")
    cdef int64_t skips = _as_int64(head_skips, "head_skips")
    cdef const int64_t* f = <const int64_t*>cnp.PyArray_DATA(have)
    cdef const int64_t* q = <const int64_t*>cnp.PyArray_DATA(waiting)
    cdef int64_t n = waiting.shape[0]
    cdef int64_t index
    with nogil:
        index = c_choose_launch(f, r, q, n, skips, rule)
    return None if index < 0 else index
