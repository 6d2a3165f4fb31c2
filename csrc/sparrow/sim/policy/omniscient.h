// Omniscient: one infinitely fast central queue (the paper's ideal scheduler). A task starts at
// once on any free slot its constraints allow, otherwise waits centrally for the next freed
// slot: constrained tasks first (the oldest that may run there, in FIFO order), then the
// central ReservationQueue (fifo, priority or fair). No network delay; a task's queue wait runs
// from its job's release to its start. Its state (the idle workers, the central queues) is its
// own: the other policies never see it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/reservation_queue.h"
#include "sparrow/sim/cluster.h"
#include "sparrow/sim/idle_pool.h"

namespace sparrow {
namespace sim {

class OmniscientPolicy {
 public:
  explicit OmniscientPolicy(Cluster& c) : c_(c), central_(c.p.queue_policy), idle_(c.p.n_workers) {
    for (int64_t w = 0; w < c.p.n_workers; ++w) idle_.add(static_cast<int32_t>(w));
    if (central_.policy() == Policy::Fair)
      for (size_t u = 0; u < c.p.user_weight.size(); ++u)
        central_.set_weight(static_cast<int32_t>(u), c.p.user_weight[u]);
  }

  void dispatch(Job& job) {
    job.dispatch = c_.now;
    for (int64_t t = 0; t < job.n_tasks; ++t) {
      int64_t count;
      const int64_t* cand = c_.candidates(job, t, count);
      if (cand == nullptr) {
        if (idle_.empty()) {
          central_.push(job.id * c_.stride + t, job.user, job.priority);
        } else {
          const int32_t w = idle_.any();
          take_slot(w);
          c_.start(w, job, t, c_.now);
        }
        continue;
      }
      const int64_t first = static_cast<int64_t>(c_.rng.below(static_cast<uint64_t>(count)));
      int64_t w = -1;
      for (int64_t i = 0; i < count && w < 0; ++i)
        if (c_.free[cand[(first + i) % count]] > 0) w = cand[(first + i) % count];
      if (w < 0) {
        waiting_constrained_.push_back(job.id * c_.stride + t);
      } else {
        take_slot(w);
        c_.start(w, job, t, c_.now);
      }
    }
  }

  void deliver(const Msg& m) {
    throw std::logic_error("simulator: omniscient sends no messages, got kind " + std::to_string(m.kind));
  }

  // A slot of w just freed: the oldest waiting constrained task that may run there, else the
  // central queue's next task.
  void complete(int64_t w) {
    if (c_.free[w] == 1) idle_.add(static_cast<int32_t>(w));
    for (size_t i = 0; i < waiting_constrained_.size(); ++i) {
      const int64_t g = waiting_constrained_[i];
      Job& job = c_.pool.get(g / c_.stride);
      int64_t count;
      const int64_t* cand = c_.candidates(job, g % c_.stride, count);
      for (int64_t k = 0; k < count; ++k) {
        if (cand[k] != w) continue;
        waiting_constrained_.erase(waiting_constrained_.begin() + static_cast<std::ptrdiff_t>(i));
        take_slot(w);
        c_.start(w, job, g % c_.stride, c_.now);
        return;
      }
    }
    Reservation r;
    if (central_.pop(r)) {
      take_slot(w);
      c_.start(w, c_.pool.get(r.job_id / c_.stride), r.job_id % c_.stride, c_.now);
    }
  }

 private:
  void take_slot(int64_t w) {
    if (--c_.free[w] == 0) idle_.remove(static_cast<int32_t>(w));
  }

  Cluster& c_;
  ReservationQueue central_;
  IdlePool idle_;
  std::vector<int64_t> waiting_constrained_;  // job * stride + task, oldest first
};

}  // namespace sim
}  // namespace sparrow
