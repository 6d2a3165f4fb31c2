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


cdef cnp.ndarray _int64_array(object values, str name):
    """A contiguous 1-d int64 copy-free view of values when possible; rejects non-integers."""
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
