// Probe selection: which workers a job's reservations go to.
//
// Algorithms and costs (k = number of probes, n = workers or candidates):
//   probe_count        k = ceil(d * m), robust to floating-point error (1.05 * 100 -> 105).
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
//   sample_constrained per-task constraints: each constrained task gets ceil(d) probes among
//                      its own candidates; the job's unconstrained tasks together get
//                      probe_count(m_u, d) probes among workers not already probed (rejection
//                      sampling while at least half the workers are free of probes, O(k)
//                      expected; otherwise Floyd over the enumerated free workers, O(n) only
//                      in that crowded case). Each probe records the task it was made for
//                      (-1: any unconstrained task).
// Outputs are appended to caller-owned vectors. Broken contracts throw std::invalid_argument.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/id_set.h"
#include "sparrow/rng.h"

namespace sparrow {

inline int64_t probe_count(int64_t n_tasks, double probe_ratio) {
  if (n_tasks < 0) throw std::invalid_argument("n_tasks must be >= 0, got " + std::to_string(n_tasks));
  if (!(probe_ratio >= 1.0) || !std::isfinite(probe_ratio))
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

// Largest n sampled through the bitmap (32 MiB of bits); beyond it, the hash set.
constexpr int64_t kBitmapLimit = int64_t{1} << 28;

// Writes k distinct indices of [0, n) (k <= n) to out, in Floyd's order.
inline void floyd(Rng& rng, int64_t n, int64_t k, int64_t* out, Scratch& scratch) {
  if (n <= kBitmapLimit) {
    Bitmap& seen = scratch.bitmap;
    seen.ensure(n);
    for (int64_t j = n - k, i = 0; j < n; ++j, ++i) {
      const int64_t t = static_cast<int64_t>(rng.below32(static_cast<uint32_t>(j) + 1));
      out[i] = seen.mark(t) ? t : (seen.mark(j), j);
    }
    for (int64_t i = 0; i < k; ++i) seen.unmark(out[i]);
    return;
  }
  IdSet& seen = scratch.set;
  seen.reset(static_cast<size_t>(k));
  for (int64_t j = n - k, i = 0; j < n; ++j, ++i) {
    const int64_t t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(j) + 1));
    out[i] = seen.insert(t) ? t : (seen.insert(j), j);
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

// Duplicates are found with the bitmap (set, then cleared again: O(c)) up to kBitmapLimit
// workers, else with the hash set.
inline void check_candidates(const int64_t* candidates, int64_t n_candidates, int64_t n_workers, Scratch& scratch) {
  const bool use_bitmap = n_workers <= kBitmapLimit;
  if (use_bitmap) {
    scratch.bitmap.ensure(n_workers);
  } else {
    scratch.set.reset(static_cast<size_t>(n_candidates));
  }
  int64_t i = 0;
  const char* problem = nullptr;
  for (; i < n_candidates; ++i) {
    const int64_t c = candidates[i];
    if (c < 0 || c >= n_workers) {
      problem = "out of range";
      break;
    }
    if (!(use_bitmap ? scratch.bitmap.mark(c) : scratch.set.insert(c))) {
      problem = "twice";
      break;
    }
  }
  if (use_bitmap)  // leave the bitmap clear, whatever happened
    for (int64_t j = 0; j < i; ++j) scratch.bitmap.unmark(candidates[j]);
  if (problem == nullptr) return;
  const std::string id = std::to_string(candidates[i]);
  if (problem[0] == 'o')
    throw std::invalid_argument("candidates: worker id " + id + " is out of range [0, " + std::to_string(n_workers) +
                                ")");
  throw std::invalid_argument("candidates: worker id " + id + " appears twice");
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


// The unconstrained probes of sample_constrained: k workers not taken yet. take(w) marks w and
// says whether it was free; is_free(w) only tests; forget() drops the marks (the scratch space
// is then free for Floyd). Rejection sampling while at least half the workers are free (O(k)
// expected), else Floyd over the enumerated free workers (O(n)).
template <typename Take, typename IsFree, typename Forget>
void sample_unprobed(Rng& rng, int64_t n_workers, int64_t k, int64_t free_workers, Take take, IsFree is_free,
                     Forget forget, std::vector<int64_t>& workers, Scratch& scratch);

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

namespace detail {

template <typename Take, typename IsFree, typename Forget>
void sample_unprobed(Rng& rng, int64_t n_workers, int64_t k, int64_t free_workers, Take take, IsFree is_free,
                     Forget forget, std::vector<int64_t>& workers, Scratch& scratch) {
  if (free_workers >= 2 * k) {
    for (int64_t drawn = 0; drawn < k;) {
      const int64_t w = static_cast<int64_t>(rng.below(static_cast<uint64_t>(n_workers)));
      if (take(w)) {
        workers.push_back(w);
        ++drawn;
      }
    }
    return;
  }
  std::vector<int64_t> free_list;
  free_list.reserve(static_cast<size_t>(free_workers));
  for (int64_t w = 0; w < n_workers; ++w)
    if (is_free(w)) free_list.push_back(w);
  forget();
  if (free_list.empty()) {
    sample_workers(rng, n_workers, k, workers, scratch);
  } else {
    const int64_t on_free = k < free_workers ? k : free_workers;
    sample_from(rng, free_list.data(), free_workers, on_free, workers, scratch);
    if (k > on_free) sample_workers(rng, n_workers, k - on_free, workers, scratch);
  }
}

}  // namespace detail

// Per-task constrained sampling; see the header comment. cand_offsets has n_tasks + 1 entries.
inline void sample_constrained(Rng& rng, int64_t n_workers, const int64_t* cand, const int64_t* cand_offsets,
                               int64_t n_tasks, double probe_ratio, std::vector<int64_t>& workers,
                               std::vector<int64_t>& tasks) {
  if (n_tasks < 0) throw std::invalid_argument("n_tasks must be >= 0, got " + std::to_string(n_tasks));
  if (n_tasks > 0 && cand_offsets[0] != 0) throw std::invalid_argument("candidate offsets must start at 0");
  const int64_t per_task = probe_count(1, probe_ratio);
  detail::Scratch& scratch = detail::scratch();
  int64_t n_unconstrained = 0;
  const size_t first = workers.size();  // workers[first..) are the constrained tasks' probes
  for (int64_t t = 0; t < n_tasks; ++t) {
    const int64_t lo = cand_offsets[t], hi = cand_offsets[t + 1];
    if (hi < lo) throw std::invalid_argument("candidate offsets must not decrease (task " + std::to_string(t) + ")");
    if (hi == lo) {
      ++n_unconstrained;
      continue;
    }
    detail::check_candidates(cand + lo, hi - lo, n_workers, scratch);
    const size_t start = workers.size();
    detail::sample_from(rng, cand + lo, hi - lo, per_task, workers, scratch);
    tasks.insert(tasks.end(), workers.size() - start, t);
  }
  const int64_t k = probe_count(n_unconstrained, probe_ratio);
  if (k == 0) return;
  detail::check_sizes(n_workers, k, "n_workers");
  const size_t n_probed = workers.size() - first;
  if (n_workers <= detail::kBitmapLimit) {
    // Taken workers in the bitmap (one bit test per draw), cleared again before returning.
    detail::Bitmap& taken = scratch.bitmap;
    taken.ensure(n_workers);
    int64_t n_taken = 0;
    for (size_t i = first; i < first + n_probed; ++i) n_taken += taken.mark(workers[i]);
    const size_t start = workers.size();
    bool marked = true;  // until forget(): then the probes are unmarked already
    auto unmark_probes = [&](size_t from, size_t to) {
      for (size_t i = from; i < to; ++i) taken.unmark(workers[i]);
    };
    detail::sample_unprobed(
        rng, n_workers, k, n_workers - n_taken, [&taken](int64_t w) { return taken.mark(w); },
        [&taken](int64_t w) { return !taken.test(w); },
        [&] {
          unmark_probes(first, start);
          marked = false;
        },
        workers, scratch);
    if (marked) unmark_probes(first, workers.size());
    tasks.insert(tasks.end(), workers.size() - start, -1);
    return;
  }
  IdSet& taken = scratch.set;
  taken.reset(n_probed + static_cast<size_t>(k));
  for (size_t i = first; i < first + n_probed; ++i) taken.insert(workers[i]);
  const size_t start = workers.size();
  detail::sample_unprobed(
      rng, n_workers, k, n_workers - static_cast<int64_t>(taken.size()), [&taken](int64_t w) { return taken.insert(w); },
      [&taken](int64_t w) { return !taken.contains(w); }, [] {}, workers, scratch);
  tasks.insert(tasks.end(), workers.size() - start, -1);
}

}  // namespace sparrow
