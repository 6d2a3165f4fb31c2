// JobPool: the jobs in flight, addressed by job id (= arrival index).
//
// A ring of job records indexed by id modulo a power-of-two capacity. Ids are handed out in
// increasing order and a record is released when its job is finished and nothing refers to
// it any more, so the live ids span a window; the ring doubles when the window outgrows it.
// Memory is O(jobs in flight), not O(jobs simulated). Records keep their vectors' capacity
// when reused, so steady state allocates nothing.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace sparrow {
namespace sim {

struct Job {
  int64_t id = -1;  // -1: free record
  double arrival = 0.0;
  double dispatch = 0.0;  // when its probes / tasks reach the workers (queue waits start)
  int32_t user = 0;
  int32_t priority = 0;
  int32_t scheduler = 0;
  bool in_table = false;  // sparrow: still registered in its scheduler's task table
  int64_t n_tasks = 0;
  int64_t done = 0;
  int64_t launched = 0;
  int64_t live_reservations = 0;  // sparrow: in worker queues or asking their scheduler
  int64_t task_offset = 0;        // first index of its tasks in the per-task outputs
  double max_wait = 0.0;
  std::vector<double> durations;
  std::vector<int64_t> job_candidates;        // job constraint; empty = any worker
  std::vector<int64_t> task_candidates;       // per-task constraints, flat
  std::vector<int64_t> task_candidate_offsets;  // n_tasks + 1 entries, or empty = none

  bool has_task_constraints() const { return !task_candidate_offsets.empty(); }
};

class JobPool {
 public:
  JobPool() : ring_(64) {}

  // A fresh record for `id` (ids must be requested in increasing order).
  Job& acquire(int64_t id) {
    while (ring_[slot(id)].id != -1) grow();
    Job& job = ring_[slot(id)];
    job.id = id;
    ++live_;
    return job;
  }

  // The record of a live job, or nullptr once it has been released.
  Job* find(int64_t id) {
    Job& job = ring_[slot(id)];
    return job.id == id ? &job : nullptr;
  }

  Job& get(int64_t id) { return ring_[slot(id)]; }

  void release(Job& job) {
    job.id = -1;
    --live_;
  }

  int64_t live() const { return live_; }

 private:
  size_t slot(int64_t id) const { return static_cast<size_t>(id) & (ring_.size() - 1); }

  void grow() {
    std::vector<Job> next(2 * ring_.size());
    const size_t mask = next.size() - 1;
    for (Job& job : ring_)
      if (job.id != -1) next[static_cast<size_t>(job.id) & mask] = std::move(job);
    ring_.swap(next);
  }

  std::vector<Job> ring_;
  int64_t live_ = 0;
};

}  // namespace sim
}  // namespace sparrow
