// Per-task sampling ("the power of d choices"): ceil(d) probes per task (among the task's
// candidates if constrained); each task goes to its least loaded probe (early binding, three
// hops: probes, answers, tasks).
#pragma once

#include <cstdint>

#include "sparrow/sampling.h"
#include "sparrow/sim/policy/early_binding.h"

namespace sparrow {
namespace sim {

class PerTaskPolicy : public EarlyBinding {
 public:
  using EarlyBinding::EarlyBinding;

  void dispatch(Job& job) {
    const int64_t d = probe_count(1, c_.p.probe_ratio);
    workers_.clear();
    tags_.clear();
    if (job.job_candidates.empty() && !job.has_task_constraints()) {
      sample_per_task(c_.rng, c_.p.n_workers, job.n_tasks, d, workers_);
      for (int64_t t = 0; t < job.n_tasks; ++t) tags_.insert(tags_.end(), static_cast<size_t>(d), t);
    } else {
      for (int64_t t = 0; t < job.n_tasks; ++t) {
        int64_t count;
        const int64_t* cand = c_.candidates(job, t, count);
        if (cand) {
          sample_from(c_.rng, cand, count, d, workers_);
        } else {
          sample_workers(c_.rng, c_.p.n_workers, d, workers_);
        }
        tags_.insert(tags_.end(), static_cast<size_t>(d), t);
      }
    }
    send_probes(job.id);
  }
};

}  // namespace sim
}  // namespace sparrow
