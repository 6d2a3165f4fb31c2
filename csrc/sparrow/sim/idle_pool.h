// IdlePool: the set of workers with at least one free slot, for the omniscient scheduler.
//
// A dense array of worker ids plus each worker's position in it: add, remove and "any idle
// worker" are O(1). Which idle worker is returned (the most recently added) is arbitrary
// but deterministic.
#pragma once

#include <cstdint>
#include <vector>

namespace sparrow {
namespace sim {

class IdlePool {
 public:
  explicit IdlePool(int64_t n_workers) : pos_(static_cast<size_t>(n_workers), -1) {}

  bool empty() const { return ids_.empty(); }
  int32_t any() const { return ids_.back(); }

  void add(int32_t w) {
    pos_[w] = static_cast<int64_t>(ids_.size());
    ids_.push_back(w);
  }

  void remove(int32_t w) {
    const int64_t i = pos_[w];
    const int32_t last = ids_.back();
    ids_[i] = last;
    pos_[last] = i;
    ids_.pop_back();
    pos_[w] = -1;
  }

 private:
  std::vector<int32_t> ids_;
  std::vector<int64_t> pos_;
};

}  // namespace sim
}  // namespace sparrow
