// Work stealing between workers (Hawk, USENIX ATC 2015): a worker with a free slot and an empty
// queue takes reservations from a few randomly chosen peers' queues.
//
// Assumptions. Late binding makes a reservation cheap to move: it is only (job, user, priority)
// and the worker it was placed at (the scheduler's TaskTable consumes that worker's reservation
// when the thief asks on its behalf, so a stolen reservation still binds at most one task and a
// job never gets a task twice, whoever asks). A peer answers a steal probe with how many of its
// queued reservations may move (`stealable`: waiting for a slot, jobs without constraints) and
// for how long it has been blocked (`blocked_for`: how long its most recently started running
// task has run; the head of its queue has waited for a slot at least that long).
//
// Algorithm.
//   choose_victims  k distinct peers of the thief, uniformly (Floyd over the n - 1 peers,
//                   sampling.h), fewer when there are fewer peers. O(k).
//   choose_steal    among the answers with stealable > 0 and blocked_for >= min_blocked, the one
//                   queued behind the longest-running task (the largest blocked_for: a task that
//                   has run long is, under heavy tails, likely to run longer); ties: the longer
//                   queue, then uniformly at random (Rng). It takes half of that queue (rounded
//                   up), at most max_take. No eligible answer is a normal result (victim -1).
//                   O(n). choose_steal_without_draws: the same where no tie needs the Rng.
//   take_reservations  the victim's side: pops up to n reservations from the head of its queue
//                   in service order (what it would have served next, so priorities and fair
//                   shares keep their order) while `movable` accepts the head; a fair queue's
//                   charge for each is refunded (the thief's queue charges the user instead).
// Broken contracts (sizes, a thief outside the cluster, NaN times) throw std::invalid_argument.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/reservation_queue.h"
#include "sparrow/rng.h"
#include "sparrow/sampling.h"

namespace sparrow {

struct StealConfig {
  int64_t victims = 2;       // peers asked per attempt
  int64_t max_take = 1;      // reservations moved per steal at most
  double min_blocked = 0.0;  // a peer is a victim only once blocked this long (seconds)
};

inline void check_steal_config(const StealConfig& c) {
  if (c.victims < 1) throw std::invalid_argument("steal victims must be >= 1, got " + std::to_string(c.victims));
  if (c.max_take < 1) throw std::invalid_argument("steal max_take must be >= 1, got " + std::to_string(c.max_take));
  if (!(c.min_blocked >= 0) || !std::isfinite(c.min_blocked))
    throw std::invalid_argument("steal min_blocked must be finite and >= 0");
}

// How many victims choose_victims picks: min(k, n_workers - 1). Throws on a broken contract.
inline int64_t victims_count(int64_t n_workers, int64_t thief, int64_t k) {
  if (n_workers < 1) throw std::invalid_argument("n_workers must be >= 1, got " + std::to_string(n_workers));
  if (thief < 0 || thief >= n_workers)
    throw std::invalid_argument("thief must be in [0, " + std::to_string(n_workers) + "), got " +
                                std::to_string(thief));
  if (k < 0) throw std::invalid_argument("k must be >= 0, got " + std::to_string(k));
  const int64_t peers = n_workers - 1;
  return k < peers ? k : peers;
}

// Writes victims_count(n_workers, thief, k) distinct peers of `thief` (never the thief) to out.
// For a caller that checked the arguments with victims_count (the simulator, once per run).
// The draws are sample_workers(rng, n_workers - 1, count)'s, each id >= thief moved up by one.
inline void choose_victims_unchecked(Rng& rng, int64_t n_workers, int64_t thief, int64_t count, int64_t* out) {
  if (count == n_workers - 1) {  // every peer, no draw (sample_workers' k == n)
    for (int64_t i = 0; i < count; ++i) out[i] = i + (i >= thief);
    return;
  }
  // A few victims need no scratch space: not even its thread_local lookup (a call to
  // __tls_get_addr in a shared library: 33 instructions per steal attempt).
  if (detail::few_draws(n_workers - 1, count)) return detail::floyd_few<true>(rng, n_workers - 1, count, out, thief);
  detail::floyd<true>(rng, n_workers - 1, count, out, detail::scratch(), thief);
}

// Appends min(k, n_workers - 1) distinct peers of `thief` (never the thief) to out.
inline void choose_victims(Rng& rng, int64_t n_workers, int64_t thief, int64_t k, std::vector<int64_t>& out) {
  const int64_t count = victims_count(n_workers, thief, k);
  const size_t start = out.size();
  out.resize(start + static_cast<size_t>(count));
  choose_victims_unchecked(rng, n_workers, thief, count, out.data() + start);
}

struct StealChoice {
  int64_t victim = -1;  // index into the answers, -1: none worth stealing from
  int64_t take = 0;
};

namespace detail {

// choose_steal's scan over the n answers answer(i, stealable, blocked_for) gives (in index order,
// each once); tie(ties) says whether the answer that makes `ties` equal ones takes the lead
// (choose_steal: one Rng draw). Checked: the answers' contracts are checked as it goes.
template <bool Checked, typename Answer, typename Tie>
StealChoice scan_steal(Answer answer, int64_t n, const StealConfig& config, Tie tie) {
  StealChoice best;
  int64_t ties = 0, s = 0;  // s, b: the best answer's
  double b = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t stealable;
    double blocked_for;
    answer(i, stealable, blocked_for);
    if (Checked && stealable < 0)
      throw std::invalid_argument("stealable[" + std::to_string(i) + "] must be >= 0, got " + std::to_string(stealable));
    if (Checked && std::isnan(blocked_for)) throw std::invalid_argument("blocked_for[" + std::to_string(i) + "] is NaN");
    if (stealable == 0 || !(blocked_for >= config.min_blocked)) continue;
    if (best.victim < 0 || blocked_for > b || (blocked_for == b && stealable > s)) {
      best.victim = i, ties = 1, s = stealable, b = blocked_for;
    } else if (blocked_for == b && stealable == s && tie(static_cast<uint64_t>(++ties))) {
      best.victim = i;
    }
  }
  if (best.victim >= 0) {
    const int64_t half = (s + 1) / 2;
    best.take = half < config.max_take ? half : config.max_take;
  }
  return best;
}

// The answers of two arrays.
inline auto array_answers(const int64_t* stealable, const double* blocked_for) {
  return [stealable, blocked_for](int64_t i, int64_t& s, double& b) { s = stealable[i], b = blocked_for[i]; };
}

}  // namespace detail

inline StealChoice choose_steal(Rng& rng, const int64_t* stealable, const double* blocked_for, int64_t n,
                                const StealConfig& config) {
  check_steal_config(config);
  if (n < 0) throw std::invalid_argument("answers must be >= 0, got " + std::to_string(n));
  return detail::scan_steal<true>(detail::array_answers(stealable, blocked_for), n, config,
                                  [&rng](uint64_t ties) { return rng.below(ties) == 0; });
}

// choose_steal's choice where it makes no Rng draw, for a caller that checked the config and
// gives stealable >= 0 and no NaN (the simulator, which can then decide at the victims and send
// the thief the choice alone). Returns false, deciding nothing, where choose_steal would draw
// (two eligible answers tie on blocked_for and stealable): call choose_steal then. The answers
// are answer(i, stealable, blocked_for) for i < n, asked in order, each once (the simulator reads
// each victim's state as it goes, with no arrays between).
template <typename Answer>
bool choose_steal_without_draws(Answer answer, int64_t n, const StealConfig& config, StealChoice& out) {
  bool drew = false;
  out = detail::scan_steal<false>(answer, n, config, [&drew](uint64_t) { return drew = true, false; });
  return !drew;
}

// Pops up to n reservations from q's head while movable(reservation) holds; appends them to
// out and returns how many moved.
template <typename Movable>
int64_t take_reservations(ReservationQueue& q, int64_t n, Movable movable, std::vector<Reservation>& out) {
  if (n < 0) throw std::invalid_argument("n must be >= 0, got " + std::to_string(n));
  int64_t moved = 0;
  Reservation r;
  while (moved < n && q.peek(r) && movable(r)) {
    q.pop(r);
    q.refund(r.user);  // a no-op but for fair queues
    out.push_back(r);
    ++moved;
  }
  return moved;
}

// The same with the jobs that must stay (their reservations are not movable) as an ascending
// array: the head stops the steal if its job is pinned.
inline int64_t take_reservations(ReservationQueue& q, int64_t n, const int64_t* pinned, int64_t n_pinned,
                                 std::vector<Reservation>& out) {
  if (n_pinned < 0) throw std::invalid_argument("pinned must be >= 0, got " + std::to_string(n_pinned));
  for (int64_t i = 1; i < n_pinned; ++i)
    if (pinned[i - 1] >= pinned[i]) throw std::invalid_argument("pinned job ids must be ascending and distinct");
  auto movable = [pinned, n_pinned](const Reservation& r) {
    return !std::binary_search(pinned, pinned + n_pinned, r.job_id);
  };
  return take_reservations(q, n, movable, out);
}

}  // namespace sparrow
