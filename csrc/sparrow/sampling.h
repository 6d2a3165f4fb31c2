// Probe selection: which workers a job's reservations go to.
//
// Algorithms and costs (k = number of probes, n = workers or candidates):
//   probe_count        k = ceil(d * m), robust to floating-point error (1.05 * 100 -> 105);
//                      d must be valid_probe_ratio: finite and >= 1.
//   sample_workers     k distinct ids of [0, n) by Floyd's algorithm, the ids drawn so far
//                      marked in a per-thread bitmap (cleared again after: O(k), never O(n);
//                      the bitmap holds n bits once, up to 2^28, beyond that a hash set).
//                      When k > n, every worker gets floor(k / n) probes and k mod n of them
//                      (chosen by Floyd) one more.
//   check_candidates   candidates are distinct ids of [0, n): O(c) with the same bitmap.
//   sample_from        the same over a candidate array (job constraint): O(k).
//   sample_batch       batch sampling (Sparrow): k = probe_count(m, d) probes for the job.
//   sample_per_task    per-task sampling ("power of d choices"): d distinct probes per task,
//                      O(m d).
// Constraints (a job's candidates and per-task candidates together) are job_probes.h.
// Outputs are appended to caller-owned vectors. Broken contracts throw std::invalid_argument.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/id_set.h"
#include "sparrow/rng.h"

namespace sparrow {

// The probe ratio d (probes per task) is a finite number >= 1: the one definition of a valid d
// (the binding's check_probe_ratio and the simulator's configuration check use it too).
inline bool valid_probe_ratio(double probe_ratio) { return probe_ratio >= 1.0 && std::isfinite(probe_ratio); }

inline int64_t probe_count(int64_t n_tasks, double probe_ratio) {
  if (n_tasks < 0) throw std::invalid_argument("n_tasks must be >= 0, got " + std::to_string(n_tasks));
  if (!valid_probe_ratio(probe_ratio))
    throw std::invalid_argument("probe_ratio must be a finite number >= 1, got " + std::to_string(probe_ratio));
  const double exact = probe_ratio * static_cast<double>(n_tasks);
  if (!(exact < 9.2e18))
    throw std::invalid_argument("probe_ratio * n_tasks = " + std::to_string(exact) + " is beyond the int64 range");
  const double nearest = std::round(exact);
  if (std::fabs(exact - nearest) <= 1e-9 * std::fmax(1.0, exact)) return static_cast<int64_t>(nearest);
  return static_cast<int64_t>(std::ceil(exact));
}

namespace detail {

// A bitmap over worker ids kept between calls: marking k ids and unmarking them again costs
// O(k); the bitmap itself grows once to n bits (n / 8 bytes) for the largest n seen.
class Bitmap {
 public:
  void ensure(int64_t n) {
    const size_t words = static_cast<size_t>((n + 63) / 64);
    if (bits_.size() < words) bits_.resize(words, 0);
  }
  bool mark(int64_t id) {  // true if id was not marked
    uint64_t& word = bits_[static_cast<size_t>(id) >> 6];
    const uint64_t bit = uint64_t{1} << (id & 63);
    const bool fresh = (word & bit) == 0;
    word |= bit;
    return fresh;
  }
  void unmark(int64_t id) { bits_[static_cast<size_t>(id) >> 6] &= ~(uint64_t{1} << (id & 63)); }
  bool test(int64_t id) const { return (bits_[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }

 private:
  std::vector<uint64_t> bits_;
};

// The per-thread scratch space of the sampling kernels: each public entry point looks it up
// once and passes it down. A thread_local access costs a call (__tls_get_addr) in a shared
// library, and compilers redo that call at every use of an inlined access: not inlined, the
// lookup happens once and its result stays in a register.
struct Scratch {
  IdSet set;
  Bitmap bitmap;
};

__attribute__((noinline)) inline Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// Largest n sampled through the bitmap (32 MiB of bits); beyond it, the hash set. At most
// kSmallLimit draws (from n <= kBitmapLimit) are compared with each other in registers instead
// (cheaper than marking and unmarking the bitmap for a work-stealing thief's victims).
constexpr int64_t kBitmapLimit = int64_t{1} << 28;
constexpr int64_t kSmallLimit = 8;

// Whether floyd draws k indices of [0, n) with floyd_few (no scratch space).
inline bool few_draws(int64_t n, int64_t k) { return k <= kSmallLimit && n <= kBitmapLimit; }

// floyd for K = k <= kSmallLimit draws from n <= kBitmapLimit: each draw is compared with the
// ones drawn before it. Branch-free: whether a draw repeats one of at most 7 earlier ones is
// unpredictable, so a compare per earlier draw (OR-ed) beats a probe of a hash set (whose
// probe is the simulator's most mispredicted branch with stealing). j itself
// is never drawn before: every earlier draw is below it. With K a constant the loop is unrolled
// and drawn[] lives in registers: draw i makes i compares, 28 in all for 8 draws
// (a loop over a stack array makes 64 compares and a store and 8 loads per draw).
// The draws come from a local copy of the generator, put back after: out may alias its state
// (both 64-bit), which would make the compiler store and reload it at every write.
template <bool Skip, int K>
inline void floyd_few(Rng& rng, int64_t n, int64_t* out, int64_t skip) {
  uint32_t drawn[K];
  Rng local = rng;
  const uint32_t first = static_cast<uint32_t>(n - K);
#pragma GCC unroll 8
  for (int i = 0; i < K; ++i) {
    const uint32_t j = first + static_cast<uint32_t>(i);
    const uint32_t t = local.below32_nonzero(j + 1);
    bool seen = false;
    for (int e = 0; e < i; ++e) seen |= drawn[e] == t;
    drawn[i] = seen ? j : t;
    const int64_t id = drawn[i];
    out[i] = Skip ? id + (id >= skip) : id;
  }
  rng = local;
}

// floyd_few for a k known at run time (few_draws(n, k)).
template <bool Skip>
inline void floyd_few(Rng& rng, int64_t n, int64_t k, int64_t* out, int64_t skip) {
  static_assert(kSmallLimit == 8, "one case per count");
  switch (k) {
    case 8: return floyd_few<Skip, 8>(rng, n, out, skip);
    case 7: return floyd_few<Skip, 7>(rng, n, out, skip);
    case 6: return floyd_few<Skip, 6>(rng, n, out, skip);
    case 5: return floyd_few<Skip, 5>(rng, n, out, skip);
    case 4: return floyd_few<Skip, 4>(rng, n, out, skip);
    case 3: return floyd_few<Skip, 3>(rng, n, out, skip);
    case 2: return floyd_few<Skip, 2>(rng, n, out, skip);
    case 1: return floyd_few<Skip, 1>(rng, n, out, skip);
    default: return;  // k == 0: no draw
  }
}

// Writes k distinct indices of [0, n) (k <= n) to out, in Floyd's order. With Skip, an index
// i >= skip is written as i + 1 (k distinct ids of [0, n] other than skip, from the same draws).
template <bool Skip = false>
inline void floyd(Rng& rng, int64_t n, int64_t k, int64_t* out, Scratch& scratch, int64_t skip = 0) {
  if (few_draws(n, k)) return floyd_few<Skip>(rng, n, k, out, skip);
  if (n <= kBitmapLimit) {
    Bitmap& seen = scratch.bitmap;
    seen.ensure(n);
    for (int64_t j = n - k, i = 0; j < n; ++j, ++i) {
      const int64_t t = static_cast<int64_t>(rng.below32_nonzero(static_cast<uint32_t>(j) + 1));
      const int64_t drawn = seen.mark(t) ? t : (seen.mark(j), j);
      out[i] = Skip ? drawn + (drawn >= skip) : drawn;
    }
    for (int64_t i = 0; i < k; ++i) seen.unmark(Skip ? out[i] - (out[i] > skip) : out[i]);
    return;
  }
  IdSet& seen = scratch.set;
  seen.reset(static_cast<size_t>(k));
  for (int64_t j = n - k, i = 0; j < n; ++j, ++i) {
    const int64_t t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(j) + 1));
    const int64_t drawn = seen.insert(t) ? t : (seen.insert(j), j);
    out[i] = Skip ? drawn + (drawn >= skip) : drawn;
  }
}

inline void check_sizes(int64_t n, int64_t k, const char* n_name) {
  if (k < 0) throw std::invalid_argument("number of probes must be >= 0, got " + std::to_string(k));
  if (n < 0) throw std::invalid_argument(std::string(n_name) + " must be >= 0, got " + std::to_string(n));
  if (n == 0 && k > 0)
    throw std::invalid_argument(std::string(n_name) + " is 0: there is no worker to place " + std::to_string(k) +
                                " probes on");
}

inline void sample_workers(Rng& rng, int64_t n, int64_t k, int64_t* out, Scratch& scratch) {
  check_sizes(n, k, "n_workers");
  if (k == 0) return;
  const int64_t rounds = k / n;
  for (int64_t round = 0; round < rounds; ++round)
    for (int64_t w = 0; w < n; ++w) *out++ = w;
  floyd(rng, n, k % n, out, scratch);
}

inline void sample_workers(Rng& rng, int64_t n, int64_t k, std::vector<int64_t>& out, Scratch& scratch) {
  check_sizes(n, k, "n_workers");
  const size_t start = out.size();
  out.resize(start + static_cast<size_t>(k));
  sample_workers(rng, n, k, out.data() + start, scratch);
}

// Duplicates are found with `bitmap` (set, then cleared again: O(c)) up to kBitmapLimit
// workers, else with `set`. With keep, the candidates stay marked on success (the caller
// clears them); on failure the bitmap is always left clear. Errors start with `name`.
inline void check_candidates(const int64_t* candidates, int64_t n_candidates, int64_t n_workers, Bitmap& bitmap,
                             IdSet& set, bool keep, const char* name = "candidates") {
  const bool use_bitmap = n_workers <= kBitmapLimit;
  if (use_bitmap) {
    bitmap.ensure(n_workers);
  } else {
    set.reset(static_cast<size_t>(n_candidates));
  }
  int64_t i = 0;
  const char* problem = nullptr;
  for (; i < n_candidates; ++i) {
    const int64_t c = candidates[i];
    if (c < 0 || c >= n_workers) {
      problem = "out of range";
      break;
    }
    if (!(use_bitmap ? bitmap.mark(c) : set.insert(c))) {
      problem = "twice";
      break;
    }
  }
  if (use_bitmap && (problem != nullptr || !keep))  // leave the bitmap clear unless asked to keep it
    for (int64_t j = 0; j < i; ++j) bitmap.unmark(candidates[j]);
  if (problem == nullptr) return;
  const std::string id = std::to_string(candidates[i]);
  if (problem[0] == 'o')
    throw std::invalid_argument(std::string(name) + ": worker id " + id + " is out of range [0, " +
                                std::to_string(n_workers) + ")");
  throw std::invalid_argument(std::string(name) + ": worker id " + id + " appears twice");
}

inline void check_candidates(const int64_t* candidates, int64_t n_candidates, int64_t n_workers, Scratch& scratch) {
  check_candidates(candidates, n_candidates, n_workers, scratch.bitmap, scratch.set, false);
}

inline void sample_from(Rng& rng, const int64_t* candidates, int64_t n_candidates, int64_t k, int64_t* out,
                        Scratch& scratch) {
  check_sizes(n_candidates, k, "candidates");
  sample_workers(rng, n_candidates, k, out, scratch);
  for (int64_t i = 0; i < k; ++i) out[i] = candidates[out[i]];
}

inline void sample_from(Rng& rng, const int64_t* candidates, int64_t n_candidates, int64_t k,
                        std::vector<int64_t>& out, Scratch& scratch) {
  check_sizes(n_candidates, k, "candidates");
  const size_t start = out.size();
  out.resize(start + static_cast<size_t>(k));
  sample_from(rng, candidates, n_candidates, k, out.data() + start, scratch);
}


}  // namespace detail

// Writes k worker ids of [0, n) to out[0..k): distinct when k <= n, else the wrap rule above.
inline void sample_workers(Rng& rng, int64_t n, int64_t k, int64_t* out) {
  detail::sample_workers(rng, n, k, out, detail::scratch());
}

// Appends k worker ids of [0, n) to out.
inline void sample_workers(Rng& rng, int64_t n, int64_t k, std::vector<int64_t>& out) {
  detail::sample_workers(rng, n, k, out, detail::scratch());
}

// Throws unless candidates are distinct ids of [0, n_workers).
inline void check_candidates(const int64_t* candidates, int64_t n_candidates, int64_t n_workers) {
  detail::check_candidates(candidates, n_candidates, n_workers, detail::scratch());
}

// Appends k ids drawn from the candidate array (distinct when k <= n_candidates).
inline void sample_from(Rng& rng, const int64_t* candidates, int64_t n_candidates, int64_t k,
                        std::vector<int64_t>& out) {
  detail::sample_from(rng, candidates, n_candidates, k, out, detail::scratch());
}

// Writes the same to out[0..k).
inline void sample_from(Rng& rng, const int64_t* candidates, int64_t n_candidates, int64_t k, int64_t* out) {
  detail::sample_from(rng, candidates, n_candidates, k, out, detail::scratch());
}

inline void sample_batch(Rng& rng, int64_t n_workers, int64_t n_tasks, double probe_ratio,
                         std::vector<int64_t>& out) {
  sample_workers(rng, n_workers, probe_count(n_tasks, probe_ratio), out);
}

// Appends n_tasks rows of d probes each (row-major).
inline void sample_per_task(Rng& rng, int64_t n_workers, int64_t n_tasks, int64_t d, std::vector<int64_t>& out) {
  if (n_tasks < 0) throw std::invalid_argument("n_tasks must be >= 0, got " + std::to_string(n_tasks));
  if (d < 1) throw std::invalid_argument("d must be >= 1, got " + std::to_string(d));
  if (n_tasks > 0 && d > INT64_MAX / n_tasks)
    throw std::invalid_argument("n_tasks * d overflows int64 (n_tasks = " + std::to_string(n_tasks) +
                                ", d = " + std::to_string(d) + ")");
  detail::check_sizes(n_workers, n_tasks * d, "n_workers");
  const size_t start = out.size();
  out.resize(start + static_cast<size_t>(n_tasks * d));
  detail::Scratch& scratch = detail::scratch();
  for (int64_t t = 0; t < n_tasks; ++t) detail::sample_workers(rng, n_workers, d, out.data() + start + t * d, scratch);
}

}  // namespace sparrow
