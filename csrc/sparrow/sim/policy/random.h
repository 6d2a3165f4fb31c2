// Random placement: each task goes to a uniformly random worker (among its candidates, if
// constrained), in one message: arrival -> tasks at workers. The paper's baseline: with 1-slot
// workers and exponential durations, each worker is an M/M/1 queue.
#pragma once

#include <cstdint>

#include "sparrow/sim/policy/early_binding.h"

namespace sparrow {
namespace sim {

class RandomPolicy : public EarlyBinding {
 public:
  using EarlyBinding::EarlyBinding;

  void dispatch(Job& job) {
    job.dispatch = c_.now + c_.p.network_delay;
    pairs_.clear();
    for (int64_t t = 0; t < job.n_tasks; ++t) {
      int64_t count;
      const int64_t* cand = c_.candidates(job, t, count);
      const int64_t w = cand ? cand[c_.rng.below(static_cast<uint64_t>(count))]
                             : static_cast<int64_t>(c_.rng.below(static_cast<uint64_t>(c_.p.n_workers)));
      pairs_.push_back(w);
      pairs_.push_back(t);
    }
    c_.send(kTasks, job.id, -1, -1, 0.0, 0, &pairs_);
  }
};

}  // namespace sim
}  // namespace sparrow
