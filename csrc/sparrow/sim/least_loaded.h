// Early-binding placement from probe answers (policies `per_task` and `batch`).
//
// Input: the probes of one job as (worker, tag, load) triples in probe order, where tag is
// the task the probe was made for or -1 for the job's shared pool of probes (batch
// sampling), and load = tasks running + queued at the worker when the probe arrived.
// The scheduler counts its own placements: a worker's load as seen by the job's later tasks
// grows by one per task already placed there. Tagged tasks, in index order, go to their
// least loaded probe; then the remaining tasks, in index order, each to the least loaded
// pool probe (a min-heap with lazily refreshed keys). Ties are broken at random (Rng), never
// by probe order, which the sampling kernels do not randomise. O((k + m) log k) for k probes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "sparrow/rng.h"

namespace sparrow {
namespace sim {

struct ProbeAnswer {
  int64_t worker;
  int64_t tag;
  int64_t load;
};

class LeastLoaded {
 public:
  // Fills `worker_of_task` (n_tasks entries) from the probe answers.
  void place(Rng& rng, const std::vector<ProbeAnswer>& answers, int64_t n_tasks, std::vector<int64_t>& worker_of_task) {
    worker_of_task.assign(static_cast<size_t>(n_tasks), -1);
    placed_.clear();
    pool_.clear();
    size_t i = 0;
    while (i < answers.size()) {
      const int64_t tag = answers[i].tag;
      if (tag < 0) {
        pool_.push_back(Key{answers[i].load, rng.next(), static_cast<int64_t>(i), 0});
        ++i;
        continue;
      }
      // A run of probes made for task `tag`: the least loaded, ties uniformly at random.
      int64_t best = -1, best_load = 0, ties = 0;
      for (; i < answers.size() && answers[i].tag == tag; ++i) {
        const int64_t load = answers[i].load + extra(answers[i].worker);
        if (best < 0 || load < best_load) {
          best = static_cast<int64_t>(i), best_load = load, ties = 1;
        } else if (load == best_load && rng.below(static_cast<uint64_t>(++ties)) == 0) {
          best = static_cast<int64_t>(i);
        }
      }
      worker_of_task[tag] = answers[best].worker;
      ++placed_[answers[best].worker];
    }
    std::make_heap(pool_.begin(), pool_.end(), std::greater<Key>());
    for (int64_t t = 0; t < n_tasks; ++t) {
      if (worker_of_task[t] >= 0) continue;
      for (;;) {
        if (pool_.empty()) throw std::logic_error("least_loaded: fewer probes than tasks to place");
        std::pop_heap(pool_.begin(), pool_.end(), std::greater<Key>());
        Key& k = pool_.back();
        const int64_t w = answers[k.index].worker;
        const int64_t now = extra(w);
        if (now != k.extra_seen) {  // the job placed a task there since: re-key and retry
          k.load += now - k.extra_seen;
          k.extra_seen = now;
          std::push_heap(pool_.begin(), pool_.end(), std::greater<Key>());
          continue;
        }
        worker_of_task[t] = w;
        ++placed_[w];
        pool_.pop_back();
        break;
      }
    }
  }

 private:
  struct Key {
    int64_t load;
    uint64_t tiebreak;
    int64_t index;
    int64_t extra_seen;
    bool operator>(const Key& o) const {
      return load != o.load ? load > o.load : tiebreak != o.tiebreak ? tiebreak > o.tiebreak : index > o.index;
    }
  };

  int64_t extra(int64_t worker) const {
    const auto it = placed_.find(worker);
    return it == placed_.end() ? 0 : it->second;
  }

  std::unordered_map<int64_t, int64_t> placed_;  // tasks of this job placed per worker
  std::vector<Key> pool_;
};

}  // namespace sim
}  // namespace sparrow
