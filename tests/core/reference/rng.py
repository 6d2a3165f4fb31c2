"""Reference model of csrc/sparrow/rng.h: xoshiro256** seeded through splitmix64, Lemire's
unbiased below() on 64-bit outputs and below32() on 32-bit halves (low half of an output
first, the high half kept for the next call), uniform() from the top 53 bits."""

from __future__ import annotations

import math

MASK64 = (1 << 64) - 1
MASK32 = (1 << 32) - 1


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & MASK64


def _splitmix64(state: int) -> tuple[int, int]:
    """(next state, output) of one splitmix64 step."""
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


class Rng:
    """xoshiro256**, bit for bit as sparrow::Rng."""

    def __init__(self, seed: int) -> None:
        if not 0 <= seed <= MASK64:
            raise ValueError(f"seed must be in [0, 2**64), got {seed}")
        words = []
        for _ in range(4):
            seed, word = _splitmix64(seed)
            words.append(word)
        self._s = words
        self._spare = 0
        self._has_half = False

    def next_u64(self) -> int:
        s0, s1, s2, s3 = self._s
        result = (_rotl((s1 * 5) & MASK64, 7) * 9) & MASK64
        t = (s1 << 17) & MASK64
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = _rotl(s3, 45)
        self._s = [s0, s1, s2, s3]
        return result

    def below(self, n: int) -> int:
        """Uniform in [0, n): Lemire's 64-bit multiply-shift with rejection."""
        if n <= 0:
            raise ValueError(f"n must be positive, got {n}")
        m = self.next_u64() * n
        if m & MASK64 < n:
            threshold = ((1 << 64) - n) % n
            while m & MASK64 < threshold:
                m = self.next_u64() * n
        return m >> 64

    def below32(self, n: int) -> int:
        """Uniform in [0, n) for n < 2**32, from one 32-bit half of an output."""
        if not 0 < n <= MASK32:
            raise ValueError(f"n must be in [1, 2**32), got {n}")
        m = self._half() * n
        if m & MASK32 < n:
            threshold = ((1 << 32) - n) % n
            while m & MASK32 < threshold:
                m = self._half() * n
        return m >> 32

    def _half(self) -> int:
        if self._has_half:
            self._has_half = False
            return self._spare >> 32
        self._spare = self.next_u64()
        self._has_half = True
        return self._spare & MASK32

    def uniform(self) -> float:
        return (self.next_u64() >> 11) * 2.0**-53

    def exponential(self, mean: float) -> float:
        if not mean > 0:
            raise ValueError(f"mean must be positive, got {mean}")
        return -mean * math.log1p(-self.uniform())

    def spawn(self) -> Rng:
        return Rng(self.next_u64())
