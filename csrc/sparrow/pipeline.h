// Pipelined late binding's rule: when a busy node asks its scheduler for a task ahead of a free slot,
// and how many. One rule for both drivers: the runtime's node monitor (sparrow_runtime.services.pipeline,
// through sparrow_core.PipelineRule) and the simulator (sim/policy/pipeline.h, which adds the
// bookkeeping of requests in simulated time).
//
// Model. A node runs tasks in `slots` slots. Plain late binding asks for a task (GetTask) only when a
// slot frees, so the slot idles for a scheduler round trip between two tasks. A pipelining node also
// asks while its slots are busy: it pops a reservation and sends its GetTask "ahead"; a task that
// answers it is bound to the node and starts as soon as a slot frees. The price: a bound task waits out
// the task before it even when another worker holding its job's reservation frees first (late
// binding's point), so it pays only where the running task's end is near or predictable.
//
// Assumptions. The node keeps its last kPipelineRecent run times (a run time counts the worker's round
// trip, which a loaded 2-core machine stretches to a few ms even for a no-op task). Requests asked
// ahead and tasks bound count against the same limit. The driver counts which running tasks may ask
// now (`may_ask`): every running one, or those a timer armed (the simulator's pipeline_after, the
// just-in-time rule below).
//
// Modes (PipelineMode):
//   off     never asks ahead (plain late binding).
//   always  asks one ahead per running task whatever the tasks' length; deeper (`depth` per slot held)
//           while the median recent run time is under kPipelineShortTask.
//   gated   asks ahead at all, even one deep, only while EACH recent run time was under
//           kPipelineShortTask (none known yet: not); that is also when it goes deep. The median would
//           open the gate for 16% of the workers of exponential 10 ms tasks (measured at 10,000 simulated
//           workers: p50 1.06-1.09x plain, per-job 1.9-4.5x); each of the last 8 short: 0.06%.
//   steady  gated, and the gate also opens one deep while the recent run times are steady within
//           kPipelineSteadySpread (3: a loaded host stretches a 10 ms task to 11-20 ms, which 1.5 does not
//           pass; 8 exponential draws pass 3 0.3% of the time); a running task then asks at its start.
//           Steady work is where binding behind the running task costs least: its end is predictable.
//   jit     gated, and the gate also opens one deep while the recent run times are steady within
//           kPipelineJitSpread; a running task then asks only shortly before its predicted end: once it
//           has run the shortest recent run time less the round trip and kPipelineJitMargin.
// In steady and jit no task asks behind one that has run past the longest recent run time (it overran
// its prediction). Depth d (1..kPipelineMaxDepth): while deep, up to d requests ahead or bound per slot
// held (running, or asking for its task), a slot that asks for its task asking ahead with it.
//
// Algorithm.
//   read_recent   after a task ends: the view of the recent run times (short, deep, steady, and when a
//                 running task may ask: ask_after..ask_until seconds after its start). O(kPipelineRecent).
//   gate_open     whether the node asks ahead at all now.
//   ahead_limit   how many requests ahead plus tasks bound it may hold now.
//   half_allows   the half rule (deep or gated): a node asks ahead for at most half of what it holds of
//                 the head reservation's job (its requests ahead and queued reservations of it), so under
//                 probe ratio 2 about its share, and a node holding one reservation of a job (batch
//                 sampling on a large cluster) asks none of it ahead: late binding places it.
// Broken contracts (an unknown mode, a depth out of range, NaN times) throw std::invalid_argument.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace sparrow {

enum class PipelineMode : int32_t { Off = 0, Gated = 1, Steady = 2, Jit = 3, Always = 4 };

constexpr int32_t kPipelineModes = 5;
constexpr int32_t kPipelineRecent = 8;           // run times kept per node
constexpr double kPipelineShortTask = 0.005;     // seconds: a run time under it is short
constexpr int32_t kPipelineMaxDepth = 64;        // requests ahead or bound per slot held, at most
constexpr double kPipelineSteadySpread = 3.0;    // steady: longest <= this x shortest
constexpr double kPipelineJitSpread = 1.5;       // jit: longest <= this x shortest
constexpr double kPipelineJitMargin = 0.00025;   // seconds: jit asks this much before the round trip

inline void check_pipeline(int32_t mode, int32_t depth) {
  if (mode < 0 || mode >= kPipelineModes)
    throw std::invalid_argument("pipeline mode must be in [0, " + std::to_string(kPipelineModes) + "), got " +
                                std::to_string(mode));
  if (depth < 1 || depth > kPipelineMaxDepth)
    throw std::invalid_argument("pipeline_depth must be in [1, " + std::to_string(kPipelineMaxDepth) + "], got " +
                                std::to_string(depth));
}

// Gated modes ask ahead only while the recent tasks ran short (or, steady and jit, were steady).
inline bool pipeline_gated(PipelineMode m) {
  return m == PipelineMode::Gated || m == PipelineMode::Steady || m == PipelineMode::Jit;
}

// Steady and jit open the gate for steady run times too.
inline bool pipeline_watches_steadiness(PipelineMode m) { return m == PipelineMode::Steady || m == PipelineMode::Jit; }

// Whether a mode needs the recent run times at all (always, one deep, does not).
inline bool pipeline_keeps_recent(PipelineMode m, int32_t depth) {
  return pipeline_gated(m) || (m == PipelineMode::Always && depth > 1);
}

// The median of n > 0 run times (the upper one of an even count).
inline double pipeline_median(const double* recent, int32_t n) {
  double v[kPipelineRecent];
  std::copy(recent, recent + n, v);
  std::nth_element(v, v + n / 2, v + n);
  return v[n / 2];
}

struct PipelineView {
  bool short_recent = false;  // gated: each recent run time under kPipelineShortTask, else their median
  bool deep = false;          // depth > 1 and short_recent
  bool steady = false;        // steady or jit, not short, kPipelineRecent run times within the spread
  double ask_after = 0.0;     // ... a running task may ask once it has run this long
  double ask_until = 0.0;     // ... and until it has run this long (the longest recent run time)
};

// The view of a node's recent run times (n in [1, kPipelineRecent], any order). `round_trip`: seconds a
// request asked ahead takes to be answered (jit asks that much before the predicted end).
inline PipelineView read_recent(PipelineMode mode, int32_t depth, const double* recent, int32_t n,
                                double round_trip) {
  if (n < 1 || n > kPipelineRecent)
    throw std::invalid_argument("pipelining keeps 1 to " + std::to_string(kPipelineRecent) + " run times, got " +
                                std::to_string(n));
  PipelineView view;
  const bool gated = pipeline_gated(mode);
  const auto [lo, hi] = std::minmax_element(recent, recent + n);
  view.short_recent = (gated ? *hi : pipeline_median(recent, n)) < kPipelineShortTask;
  view.deep = depth > 1 && view.short_recent;
  if (pipeline_watches_steadiness(mode) && !view.short_recent) {
    const bool at_start = mode == PipelineMode::Steady;
    view.steady = n == kPipelineRecent && *hi <= (at_start ? kPipelineSteadySpread : kPipelineJitSpread) * *lo;
    view.ask_after = at_start ? 0.0 : std::max(0.0, *lo - round_trip - kPipelineJitMargin);
    view.ask_until = *hi;
  }
  return view;
}

// Whether the node asks ahead at all. `overrunning`: a running task has already run kPipelineShortTask
// or longer, so a short node's next task would wait behind a task whose end is no longer near (the
// runtime's node monitor checks it; the simulator passes false).
inline bool gate_open(PipelineMode mode, const PipelineView& view, bool overrunning) {
  if (mode == PipelineMode::Off) return false;
  return !pipeline_gated(mode) || (view.short_recent && !overrunning) || view.steady;
}

// Requests ahead plus tasks bound the node may hold: deep, `depth` per slot held (running, or asking for
// its task); otherwise one per running task that may ask (`may_ask`: module comment).
inline int64_t ahead_limit(int32_t depth, const PipelineView& view, int64_t held_slots, int64_t may_ask) {
  return view.deep ? held_slots * depth : may_ask;
}

// Whether the half rule applies (deep, or gated).
inline bool half_rule_applies(PipelineMode mode, const PipelineView& view) { return view.deep || pipeline_gated(mode); }

// The half rule: one more request ahead for the head reservation's job, of which the node has
// `ahead_of_job` asked ahead and `queued_of_job` queued (the head among them).
inline bool half_allows(int64_t ahead_of_job, int64_t queued_of_job) {
  return 2 * (ahead_of_job + 1) <= queued_of_job + ahead_of_job;
}

}  // namespace sparrow
