// The fit launcher: which of a host's waiting reservations launches now, given what is free.
//
// Assumptions. A host's reservations wait in service order (its queue policy: FIFO, priorities or
// fair shares decide the order; reservation_queue.h). Each carries a resource request (resources.h)
// that the host's capacity holds (probes only go where the request fits), so every reservation fits
// once enough running tasks end. Strict head-of-line order would idle a host whose head waits for
// a large request while small ones behind it could run; free skip-ahead would starve the large one.
//
// Rule (bounded skip-ahead with aging). Let the head be the first reservation in service order.
//   1. The head fits in what is free: it launches.
//   2. Otherwise, unless the head has already been passed over max_skips times, the first of the
//      next window - 1 reservations (service order) that fits launches, and the head is passed over
//      once more (the caller counts: head_skips, reset whenever the head changes).
//   3. Otherwise nothing launches: the host is owed to the head. Running tasks end, nothing new
//      starts, and the head fits at the latest when the host is empty.
// So a reservation waits, once at the head, for at most max_skips other launches and then the
// tasks running at that moment; a reservation that fits never waits behind one that does not
// except within that bound or beyond the window. window = 1 (or max_skips = 0) is strict order.
// O(window * r) per decision; no Rng.
// Broken contracts (window < 1, max_skips < 0, head_skips < 0, sizes) throw std::invalid_argument.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "sparrow/resources.h"

namespace sparrow {

struct FitRule {
  int64_t window = 8;     // reservations looked at per decision, the head included
  int64_t max_skips = 8;  // launches that may pass the head before the host is owed to it
};

inline void check_fit_rule(const FitRule& rule) {
  if (rule.window < 1) throw std::invalid_argument("fit window must be >= 1, got " + std::to_string(rule.window));
  if (rule.max_skips < 0)
    throw std::invalid_argument("fit max_skips must be >= 0, got " + std::to_string(rule.max_skips));
}

// The reservation to launch: an index into the waiting ones in service order (0: the head; > 0:
// the head is passed over once), or -1: nothing launches now. request_of(i) gives reservation i's
// request (r units), asked only for i < min(n, window). For a caller that checked the rule and the
// arguments (the simulator, once per run).
template <typename RequestOf>
int64_t choose_launch_unchecked(const int64_t* free, int64_t r, RequestOf request_of, int64_t n, int64_t head_skips,
                                const FitRule& rule) {
  if (n == 0) return -1;
  if (fits(free, request_of(0), r)) return 0;
  if (head_skips >= rule.max_skips) return -1;
  const int64_t look = n < rule.window ? n : rule.window;
  for (int64_t i = 1; i < look; ++i)
    if (fits(free, request_of(i), r)) return i;
  return -1;
}

// The same over the n x r row-major requests of the waiting reservations, checked.
inline int64_t choose_launch(const int64_t* free, int64_t r, const int64_t* requests, int64_t n, int64_t head_skips,
                             const FitRule& rule) {
  check_fit_rule(rule);
  check_resource_count(r);
  if (n < 0) throw std::invalid_argument("waiting reservations must be >= 0, got " + std::to_string(n));
  if (head_skips < 0) throw std::invalid_argument("head_skips must be >= 0, got " + std::to_string(head_skips));
  check_amounts(free, r, "free");
  check_amounts(requests, n * r, "requests");
  return choose_launch_unchecked(
      free, r, [requests, r](int64_t i) { return requests + i * r; }, n, head_skips, rule);
}

}  // namespace sparrow
