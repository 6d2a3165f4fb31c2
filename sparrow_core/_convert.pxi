# Argument conversion shared by the bindings: Python values and array-likes to int64, with
# errors that name the argument.

cdef inline int64_t _as_int64(object value, str name) except? -1:
    """value as a C int64 (anything with __index__); TypeError/ValueError naming `name`."""
    try:
        return PyNumber_Index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    except OverflowError:
        raise ValueError(f"{name} is outside the 64-bit integer range: {value!r}") from None


cdef inline double _as_double(object value, str name) except? -1.0:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__float__"):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


cdef bint _append_exact_ints(object values, vector[int64_t]& out) except -1:
    """Appends values to out and returns True when values is a list or tuple of ints (not
    bools) in the int64 range, the common case, converted here without numpy; otherwise
    leaves out as it was and returns False (the caller takes the general, checking path)."""
    cdef size_t start = out.size()
    if type(values) is not list and type(values) is not tuple:
        return False
    cdef size_t needed = start + len(values)
    if out.capacity() < needed:  # grow geometrically: many short lists append to one vector
        out.reserve(max(needed, 2 * out.capacity()))
    out.resize(needed)
    cdef int64_t* put = out.data() + start
    try:
        for x in values:
            if type(x) is not int:
                out.resize(start)
                return False
            put[0] = <int64_t>x  # Cython's conversion reads small ints directly
            put += 1
    except OverflowError:
        out.resize(start)
        return False
    return True


cdef cnp.ndarray _int64_array(object values, str name):
    """A contiguous 1-d int64 copy-free view of values when possible; rejects non-integers."""
    cdef vector[int64_t] exact
    if _append_exact_ints(values, exact):
        return _from_vector(exact)
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of integers, got {type(values).__name__}")
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.size and array.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {array.dtype}")
    if array.dtype.kind == "u" and array.size and array.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name} holds a value outside the 64-bit integer range")
    return np.ascontiguousarray(array, dtype=np.int64)


cdef cnp.ndarray _from_vector(const vector[int64_t]& values):
    """A new int64 numpy array holding a copy of values."""
    cdef cnp.ndarray out = np.empty(values.size(), dtype=np.int64)
    if values.size():
        memcpy(cnp.PyArray_DATA(out), values.data(), values.size() * sizeof(int64_t))
    return out


cdef int _flatten_candidates(object per_task, object n_tasks, str name, vector[int64_t]& flat,
                             vector[int64_t]& offsets) except -1:
    """Fills flat and offsets (one more entry than tasks) from one entry per task: None or
    empty (unconstrained) or that task's worker ids; errors name the entry."""
    if isinstance(per_task, (str, bytes)) or not hasattr(per_task, "__len__"):
        raise TypeError(f"{name} must be a sequence with one entry per task, got {type(per_task).__name__}")
    if n_tasks is not None and len(per_task) != n_tasks:
        raise ValueError(f"{name} must have one entry per task ({n_tasks}), got {len(per_task)}")
    cdef cnp.ndarray part
    cdef const int64_t* data
    offsets.reserve(len(per_task) + 1)
    offsets.push_back(0)
    cdef Py_ssize_t t = 0
    for entry in per_task:
        if entry is not None and not _append_exact_ints(entry, flat):
            part = _int64_array(entry, f"{name}[{t}]")
            data = <const int64_t*>cnp.PyArray_DATA(part)
            flat.insert(flat.end(), data, data + part.shape[0])
        offsets.push_back(flat.size())
        t += 1
    return 0
