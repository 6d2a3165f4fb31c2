// Rng: the seedable random generator every sparrow kernel takes by reference.
//
// Algorithm: xoshiro256** (Blackman & Vigna, 2018), 256 bits of state, period 2^256 - 1,
// seeded from one 64-bit seed through splitmix64 so that nearby seeds give unrelated
// streams. Only integer arithmetic with defined wrap-around is used, so the same seed
// gives the same stream on every platform and compiler.
//   next()        one 64-bit output, O(1), a handful of shifts and multiplies
//   below(n)      uniform integer in [0, n) without bias (Lemire's multiply-shift with
//                 rejection, 1.0000x draws on average for small n)
//   below32(n)    the same for n < 2^32 from 32 bits, two draws per 64-bit output
//   uniform()     double in [0, 1) from the top 53 bits
//   exponential() inverse-transform exponential variate with the given mean
//   spawn()       a child generator seeded from this one's next output
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace sparrow {

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (auto& word : s_) word = splitmix64(x);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform integer in [0, n). n must be positive.
  uint64_t below(uint64_t n) {
    if (n == 0) throw std::invalid_argument("Rng.below: n must be positive");
    __uint128_t m = static_cast<__uint128_t>(next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<__uint128_t>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // Uniform integer in [0, n) for n < 2^32, from half of a 64-bit output (the other half is
  // kept for the next call): Lemire's 32-bit multiply-shift with rejection. Half the
  // generator work of below() for the bounds probe selection uses.
  uint32_t below32(uint32_t n) {
    if (n == 0) throw std::invalid_argument("Rng.below32: n must be positive");
    return below32_nonzero(n);
  }
  // The same for a caller that knows n > 0 (a bound it made itself; not checked).
  uint32_t below32_nonzero(uint32_t n) {
    uint64_t m = static_cast<uint64_t>(half()) * n;
    uint32_t low = static_cast<uint32_t>(m);
    if (low < n) {
      const uint32_t threshold = (0u - n) % n;
      while (low < threshold) {
        m = static_cast<uint64_t>(half()) * n;
        low = static_cast<uint32_t>(m);
      }
    }
    return static_cast<uint32_t>(m >> 32);
  }

  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Exponential variate with the given mean (> 0).
  double exponential(double mean) { return -mean * std::log1p(-uniform()); }

  Rng spawn() { return Rng(next()); }

 private:
  // The low half of a fresh output, then its high half.
  uint32_t half() {
    if (has_half_) {
      has_half_ = false;
      return static_cast<uint32_t>(spare_ >> 32);
    }
    spare_ = next();
    has_half_ = true;
    return static_cast<uint32_t>(spare_);
  }

  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  uint64_t s_[4];
  uint64_t spare_ = 0;
  bool has_half_ = false;
};

}  // namespace sparrow
