# Rng: the seedable generator every kernel takes (csrc/sparrow/rng.h).

cdef class Rng:
    """A seeded xoshiro256** generator; the same seed gives the same decisions everywhere.

    Examples:
        >>> rng = Rng(42)
        >>> 0 <= rng.below(10) < 10
        True
    """
    cdef CRng* c

    def __cinit__(self, seed):
        cdef object value = _as_int64_seed(seed)
        self.c = new CRng(<uint64_t>value)

    def __dealloc__(self):
        del self.c

    def next_u64(self):
        """The next raw 64-bit output."""
        return self.c.next()

    def below(self, n):
        """A uniform integer in [0, n); n must be positive."""
        cdef int64_t bound = _as_int64(n, "n")
        if bound <= 0:
            raise ValueError(f"n must be positive, got {bound}")
        return self.c.below(<uint64_t>bound)

    def uniform(self):
        """A uniform float in [0, 1)."""
        return self.c.uniform()

    def exponential(self, mean):
        """An exponential variate with the given mean (> 0)."""
        cdef double m = _as_double(mean, "mean")
        if not m > 0:
            raise ValueError(f"mean must be positive, got {m}")
        return self.c.exponential(m)

    def spawn(self):
        """An independent child generator seeded from this one's next output."""
        return Rng(self.c.next())


cdef object _as_int64_seed(object seed):
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    seed = int(seed)
    if not 0 <= seed < 2 ** 64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    return seed
