// WorkerQueues: the workers' queues of the policies that queue at workers (random, per_task,
// batch: tasks; sparrow: reservations), a ReservationQueue per worker (fifo, priority or fair).
//
// A worker with a free slot has an empty queue (queues are drained whenever a slot frees), so
// under fifo and priority an entry pushed there would be popped at once: it skips the queue
// (same outcome, fewer cache misses). Fair queues see every entry, since each pop charges the
// user. Slots are the cluster's (Cluster::free); the count of queued entries and granted_at (when
// each worker's slot was last taken: how long the task holding it has run, for work stealing)
// live in the worker's record (worker_state.h) next to its slots.
#pragma once

#include <cstdint>
#include <vector>

#include "sparrow/prefetch.h"
#include "sparrow/reservation_queue.h"
#include "sparrow/sim/cluster.h"

namespace sparrow {
namespace sim {

class WorkerQueues {
 public:
  explicit WorkerQueues(Cluster& c)
      : c_(c), bypass_(c.p.queue_policy != Policy::Fair) {
    queues_.reserve(static_cast<size_t>(c.p.n_workers));
    for (int64_t w = 0; w < c.p.n_workers; ++w) {
      queues_.emplace_back(c.p.queue_policy);
      ReservationQueue& q = queues_.back();
      if (q.policy() != Policy::Fair) continue;  // weights matter to fair queues only
      for (size_t u = 0; u < c.p.user_weight.size(); ++u) q.set_weight(static_cast<int32_t>(u), c.p.user_weight[u]);
    }
  }

  // Starts loading what enqueue, dequeue and cancel read of worker w, so the cache misses of a
  // loop over many workers overlap: stage 1 its slots, counts and queue object, stage 2 (some
  // workers later, once those arrived) its queue's long form, stage 3 job's place in that.
  void prefetch(int64_t w) const {
    prefetch_state(w);
    queues_[w].prefetch_object();
  }
  // Stage 1 without the queue object: what a steal probe reads (the worker's record).
  void prefetch_state(int64_t w) const { prefetch_line(&c_.workers[w]); }
  void prefetch_store(int64_t w) const {
    if (c_.workers[w].queued != 0) queues_[w].prefetch_store();
  }
  void prefetch_job(int64_t w, int64_t job) const {
    if (c_.workers[w].queued != 0) queues_[w].prefetch_job(job);
  }

  // Calls f(w) for each of the n workers ws[i] in order, prefetching (above) ahead of it.
  template <class F>
  void for_each_prefetched(const int64_t* ws, size_t n, int64_t job, F&& f) const {
    constexpr size_t k1 = 12, k2 = 6, k3 = 3;  // how far ahead each stage runs
    for (size_t i = 0; i < n; ++i) {
      if (i + k1 < n) prefetch(ws[i + k1]);
      if (i + k2 < n) prefetch_store(ws[i + k2]);
      if (i + k3 < n) prefetch_job(ws[i + k3], job);
      f(ws[i]);
    }
  }

  // Running + queued at w (what a probe answers).
  int64_t load(int64_t w) const { return (c_.p.slots - c_.free[w]) + c_.workers[w].queued; }
  int64_t queued(int64_t w) const { return c_.workers[w].queued; }
  double granted_at(int64_t w) const { return c_.workers[w].granted_at; }
  ReservationQueue& queue(int64_t w) { return queues_[w]; }

  // Queues an entry at worker w; returns whether it took a slot directly instead.
  bool enqueue(int64_t w, int64_t key, int32_t user, int32_t priority) {
    if (c_.free[w] > 0 && bypass_) {
      take_slot(w);
      return true;
    }
    queues_[w].push_trusted(key, user, priority);  // a key's reservations are all of its job's user
    ++c_.workers[w].queued;
    return false;
  }

  // Pops the head of w's queue into r if w has a free slot, which it then holds.
  bool dequeue(int64_t w, Reservation& r) {
    WorkerState& s = c_.workers[w];
    if (s.free == 0 || s.queued == 0 || !queues_[w].pop(r)) return false;
    take_slot(w);
    --s.queued;
    return true;
  }

  // Pops the head of w's queue into r whether or not w has a free slot (pipelining asks ahead).
  bool pop_ahead(int64_t w, Reservation& r) {
    if (c_.workers[w].queued == 0 || !queues_[w].pop(r)) return false;
    --c_.workers[w].queued;
    return true;
  }

  // w's free slot is taken now (by a task bound ahead, or a request asked ahead).
  void hold_slot(int64_t w) { take_slot(w); }

  // Every queued entry of job at w leaves (cancellation); returns how many.
  int64_t cancel(int64_t w, int64_t job) {
    WorkerState& s = c_.workers[w];
    if (s.queued == 0) return 0;
    const int64_t removed = queues_[w].cancel(job);
    s.queued -= static_cast<int32_t>(removed);
    return removed;
  }

  // n entries left w's queue by other means (work stealing took them).
  void taken(int64_t w, int64_t n) { c_.workers[w].queued -= static_cast<int32_t>(n); }

 private:
  void take_slot(int64_t w) {
    WorkerState& s = c_.workers[w];
    --s.free;
    s.granted_at = c_.now;
  }

  Cluster& c_;
  bool bypass_;  // fifo / priority: see the header comment
  std::vector<ReservationQueue> queues_;  // per worker; its record's `queued` mirrors queues_[w].size()
};

}  // namespace sim
}  // namespace sparrow
