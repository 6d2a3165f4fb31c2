// Batch sampling without late binding: ceil(d * m) probes for the job's m tasks (the kernel's
// sample_job, constraints included); the m least loaded answers get the tasks (early binding,
// three hops: probes, answers, tasks).
#pragma once

#include "sparrow/sim/policy/early_binding.h"

namespace sparrow {
namespace sim {

class BatchPolicy : public EarlyBinding {
 public:
  using EarlyBinding::EarlyBinding;

  void dispatch(Job& job) {
    c_.sample_batch_probes(job, workers_, tags_);
    send_probes(job.id);
  }
};

}  // namespace sim
}  // namespace sparrow
