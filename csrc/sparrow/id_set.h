// IdSet: a reusable open-addressing hash set of non-negative 64-bit ids, the scratch space
// of the sampling kernels.
//
// Algorithm: linear probing in a power-of-two table kept at most half full; a Fibonacci
// multiplicative hash spreads consecutive ids. reset(k) prepares for up to k inserts in
// O(k) time (only the slots in use are cleared, the buffer is kept between calls), so a
// kernel that samples k ids pays O(k), never O(n).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sparrow {

class IdSet {
 public:
  void reset(size_t expected) {
    size_t capacity = 16;
    while (capacity < 2 * expected + 2) capacity <<= 1;
    if (slots_.size() < capacity) slots_.resize(capacity);
    std::fill(slots_.begin(), slots_.begin() + capacity, kEmpty);
    mask_ = capacity - 1;
    shift_ = 64 - log2(capacity);
    size_ = 0;
  }

  // Inserts id; returns false if it was already present.
  bool insert(int64_t id) {
    size_t i = slot(id);
    while (slots_[i] != kEmpty) {
      if (slots_[i] == id) return false;
      i = (i + 1) & mask_;
    }
    slots_[i] = id;
    ++size_;
    return true;
  }

  bool contains(int64_t id) const {
    size_t i = slot(id);
    while (slots_[i] != kEmpty) {
      if (slots_[i] == id) return true;
      i = (i + 1) & mask_;
    }
    return false;
  }

  size_t size() const { return size_; }

 private:
  static constexpr int64_t kEmpty = -1;

  static int log2(size_t x) {
    int r = 0;
    while (x > 1) {
      x >>= 1;
      ++r;
    }
    return r;
  }

  size_t slot(int64_t id) const {
    return static_cast<size_t>((static_cast<uint64_t>(id) * 0x9e3779b97f4a7c15ULL) >> shift_) & mask_;
  }

  std::vector<int64_t> slots_;
  size_t mask_ = 0;
  int shift_ = 60;
  size_t size_ = 0;
};

}  // namespace sparrow
