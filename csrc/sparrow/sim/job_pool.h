// JobPool: the jobs in flight, addressed by job id (= arrival index).
//
// Records live in a vector reused through a free list, so there are as many as jobs were
// ever in flight at once, and they keep their vectors' capacity (steady state allocates
// nothing). Ids map to records through a ring of 4-byte indices (id modulo a power-of-two
// capacity): ids are handed out in increasing order and released when their job is done,
// so the live ids span a window, from the oldest straggler to the newest job; the ring
// doubles when the window outgrows it. Memory: O(jobs in flight) records + 4 bytes per id
// of the window, never O(jobs simulated).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sparrow/prefetch.h"

namespace sparrow {
namespace sim {

struct alignas(128) Job {  // the fields every event touches first: one 128-byte block
  int64_t id = -1;  // -1: free record
  double dispatch = 0.0;  // when its probes / tasks reach the workers (queue waits start)
  double max_wait = 0.0;
  int64_t n_tasks = 0;
  int64_t done = 0;
  int64_t launched = 0;
  int64_t live_reservations = 0;  // sparrow: in worker queues or asking their scheduler
  int64_t task_offset = 0;        // first index of its tasks in the per-task outputs
  std::vector<double> durations;
  int32_t user = 0;
  int32_t priority = 0;
  int32_t scheduler = 0;
  bool in_table = false;  // sparrow: still registered in its scheduler's task table
  double arrival = 0.0;
  std::vector<int64_t> job_candidates;        // job constraint; empty = any worker
  std::vector<int64_t> task_candidates;       // per-task constraints, flat
  std::vector<int64_t> task_candidate_offsets;  // n_tasks + 1 entries, or empty = none
  int64_t waiting = 0;   // parents (trace dependencies) not finished yet
  double release = 0.0;  // when it reaches its scheduler, as far as known

  bool has_task_constraints() const { return !task_candidate_offsets.empty(); }
};

class JobPool {
 public:
  JobPool() : ring_(64, -1) {}

  // A fresh record for `id` (ids must be requested in increasing order). References to
  // other records are invalidated.
  Job& acquire(int64_t id) {
    while (ring_[slot(id)] != -1) grow();
    int32_t index;
    if (free_.empty()) {
      index = static_cast<int32_t>(records_.size());
      records_.emplace_back();
    } else {
      index = free_.back();
      free_.pop_back();
    }
    ring_[slot(id)] = index;
    Job& job = records_[index];
    job.id = id;
    ++live_;
    return job;
  }

  // The record of a live job, or nullptr once it has been released.
  Job* find(int64_t id) {
    const int32_t index = ring_[slot(id)];
    return index >= 0 && records_[index].id == id ? &records_[index] : nullptr;
  }

  // The record of a job known to be live.
  Job& get(int64_t id) { return records_[ring_[slot(id)]]; }

  // Starts loading job id's record (a hint: id may be gone).
  void prefetch(int64_t id) const {
    const int32_t index = ring_[slot(id)];
    if (index >= 0) prefetch_line(&records_[index]);
  }

  void release(Job& job) {
    const size_t s = slot(job.id);
    free_.push_back(ring_[s]);
    ring_[s] = -1;
    job.id = -1;
    --live_;
  }

  int64_t live() const { return live_; }

 private:
  size_t slot(int64_t id) const { return static_cast<size_t>(id) & (ring_.size() - 1); }

  void grow() {
    std::vector<int32_t> next(2 * ring_.size(), -1);
    const size_t mask = next.size() - 1;
    for (size_t i = 0; i < records_.size(); ++i)
      if (records_[i].id != -1) next[static_cast<size_t>(records_[i].id) & mask] = static_cast<int32_t>(i);
    ring_.swap(next);
  }

  std::vector<Job> records_;
  std::vector<int32_t> free_;
  std::vector<int32_t> ring_;  // id & mask -> record index, -1: none
  int64_t live_ = 0;
};

}  // namespace sim
}  // namespace sparrow
