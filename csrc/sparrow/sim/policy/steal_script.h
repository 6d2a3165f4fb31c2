// StealScript: a run's own steal attempts, replayed by the sparrow_steal policy (policy/steal.h) instead
// of its thieves drawing their victims (SimParams::steal_script_*: a runtime's node monitors' logs,
// sparrow_runtime's experiment/steal_replay.py).
//
// Assumptions. The script lists attempts in time order: attempt i was made by worker thief[i] at time
// at[i] and probed victims[offsets[i] .. offsets[i + 1]) (distinct peers of the thief, at least one).
// The simulator's attempts happen at times of its own, near the run's but not at them, and not always
// as many.
//
// Algorithm. A thief's attempt at time t takes the first of its scripted attempts not used yet whose
// time is at least t - tolerance, if that time is at most t + tolerance (those before it are skipped for
// good: the run attempted where the simulator did not); else it has none and the caller draws. One cursor
// per worker over its attempts, so a match is O(1) amortized. The victims are used as given: no Rng draw.
// Broken contracts (a worker out of range, times not finite or decreasing, victims repeated or the
// thief itself, a negative tolerance) throw std::invalid_argument naming the attempt (counted from 0).
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/sim/params.h"

namespace sparrow {
namespace sim {

class StealScript {
 public:
  explicit StealScript(const SimParams& p) : p_(p) {
    if (p.n_steal_script < 0) throw std::invalid_argument("steal script: n_steal_script must be >= 0");
    if (p.n_steal_script == 0) return;
    if (!p.steal_script_at || !p.steal_script_thief || !p.steal_script_offsets || !p.steal_script_victims)
      throw std::invalid_argument("steal script: its arrays must be given");
    if (!(p.steal_script_tolerance >= 0) || !std::isfinite(p.steal_script_tolerance))
      throw std::invalid_argument("steal script: tolerance must be finite and >= 0");
    if (p.steal_script_offsets[0] != 0) throw std::invalid_argument("steal script: offsets must start at 0");
    std::vector<int64_t> count(static_cast<size_t>(p.n_workers) + 1, 0);
    for (int64_t i = 0; i < p.n_steal_script; ++i) {
      check(i);
      ++count[static_cast<size_t>(p.steal_script_thief[i]) + 1];
    }
    for (size_t w = 1; w < count.size(); ++w) count[w] += count[w - 1];
    start_ = count;
    cursor_.assign(count.begin(), count.end() - 1);
    order_.resize(static_cast<size_t>(p.n_steal_script));
    for (int64_t i = 0; i < p.n_steal_script; ++i)
      order_[static_cast<size_t>(count[static_cast<size_t>(p.steal_script_thief[i])]++)] = i;
  }

  bool active() const { return !order_.empty(); }

  // The most victims an attempt of the script probes (0: no script).
  int64_t max_victims() const { return max_victims_; }

  // w's attempt at `now`: the victims of its matched attempt (module comment) and their count, or
  // nullptr (draw).
  const int64_t* match(int64_t w, double now, int64_t& count) {
    int64_t& next = cursor_[static_cast<size_t>(w)];  // w's first attempt not used or skipped yet
    const int64_t end = start_[static_cast<size_t>(w) + 1];
    const double tolerance = p_.steal_script_tolerance;
    while (next < end && p_.steal_script_at[order_[static_cast<size_t>(next)]] < now - tolerance) ++next;
    if (next == end || p_.steal_script_at[order_[static_cast<size_t>(next)]] > now + tolerance) return nullptr;
    const int64_t i = order_[static_cast<size_t>(next++)];
    count = p_.steal_script_offsets[i + 1] - p_.steal_script_offsets[i];
    return p_.steal_script_victims + p_.steal_script_offsets[i];
  }

 private:
  void check(int64_t i) {
    const SimParams& p = p_;
    auto fail = [i](const std::string& what) {
      throw std::invalid_argument("steal script attempt " + std::to_string(i) + ": " + what);
    };
    const double at = p.steal_script_at[i];
    if (!std::isfinite(at)) fail("its time is not finite");
    if (i > 0 && at < p.steal_script_at[i - 1]) fail("its time is earlier than the previous attempt's");
    const int64_t thief = p.steal_script_thief[i];
    if (thief < 0 || thief >= p.n_workers) fail("thief " + std::to_string(thief) + " is not one of the n_workers");
    const int64_t lo = p.steal_script_offsets[i], hi = p.steal_script_offsets[i + 1];
    if (hi <= lo) fail("it probes no victim");
    if (hi - lo > max_victims_) max_victims_ = hi - lo;
    for (int64_t k = lo; k < hi; ++k) {
      const int64_t v = p.steal_script_victims[k];
      if (v < 0 || v >= p.n_workers) fail("victim " + std::to_string(v) + " is not one of the n_workers");
      if (v == thief) fail("the thief is its own victim");
      for (int64_t j = lo; j < k; ++j)
        if (p.steal_script_victims[j] == v) fail("victim " + std::to_string(v) + " is listed twice");
    }
  }

  const SimParams& p_;
  std::vector<int64_t> start_, cursor_, order_;  // per worker, its attempts order_[start_[w] .. start_[w + 1])
  int64_t max_victims_ = 0;
};

}  // namespace sim
}  // namespace sparrow
