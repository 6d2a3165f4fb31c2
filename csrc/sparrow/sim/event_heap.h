// CompletionHeap: the task completions still to come, earliest first (a radix heap).
//
// Task durations are random, so completions need a priority queue; every other event of the
// simulator is a constant-delay message (see sparrow/ring.h) or the next job arrival. Completion
// times are monotone: a task is pushed at now + duration, never before the last completion
// popped. A radix heap exploits that: the bit pattern of a non-negative double orders like
// the double. Keys are read in 4-bit digits: an entry sits in bucket (level L, digit d) where L
// is the highest digit in which its key differs from the last popped key and d its own digit
// there (bucket 0: equal), and each bucket remembers its smallest key. push is O(1) (an
// append); pop takes from bucket 0, else first moves the first non-empty bucket (lowest level,
// then lowest digit: found from two bit masks) down around its smallest key, in place: each
// entry moves to a lower level each time, at most 16 times over its life, and is read once per
// move (about 3 moves per entry at bench_sim.py's steal point, against 7 with 1-bit digits).
// Appends to a few vectors are cache friendly, unlike sifting through a binary heap of tens of
// thousands of entries. Equal times pop in a fixed order (last pushed first: equal keys always
// share a bucket, in push order), so runs are reproducible. Memory: buckets keep their
// capacity, so several times the entries held (measured: +70 MB over a 4-ary heap at 100,000
// workers x 4 slots), for 5-20% less CPU time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace sparrow {
namespace sim {

struct Completion {
  double time;
  int64_t job;
  int32_t worker;
  int32_t task;
};

class CompletionHeap {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  void push(double time, int64_t job, int32_t worker, int32_t task) {
    const uint64_t k = key(time);
    if (k < last_) throw std::logic_error("CompletionHeap: a completion earlier than the last one popped");
    put(Completion{time, job, worker, task}, k);
    ++size_;
    if (time < next_) next_ = time;
  }

  // The time of the earliest completion, +infinity if none (kept up to date by push and pop: the
  // event loop asks at every event).
  double next_time() const { return next_; }

  Completion pop() {
    if (zero_.empty()) {  // move the first non-empty bucket down around its minimum
      const int b = first_bucket();
      last_ = min_[b];
      // Every entry of bucket b agrees with the new last_ on its level and above, so it lands
      // on a lower level (or in bucket 0): b itself is not written while it is read.
      for (const Completion& c : buckets_[b]) put(c, key(c.time));
      buckets_[b].clear();  // keeps its capacity: steady state allocates nothing
      min_[b] = kNone;
      const int level = b >> kBits;
      digits_[level] &= ~(uint32_t{1} << (b & kDigitMask));
      if (digits_[level] == 0) levels_ &= ~(uint32_t{1} << level);
    }
    const Completion out = zero_.back();
    zero_.pop_back();
    --size_;
    if (size_ == 0) {
      next_ = std::numeric_limits<double>::infinity();
    } else {
      const uint64_t k = zero_.empty() ? min_[first_bucket()] : last_;
      std::memcpy(&next_, &k, sizeof next_);
    }
    return out;
  }

 private:
  static constexpr uint64_t kNone = ~uint64_t{0};
  static constexpr int kBits = 4;                       // bits per digit
  static constexpr int kDigits = 1 << kBits;            // digits per level
  static constexpr int kDigitMask = kDigits - 1;
  static constexpr int kLevels = 64 / kBits;

  static uint64_t key(double time) {
    uint64_t k;
    std::memcpy(&k, &time, sizeof k);
    return k;
  }

  void put(const Completion& c, uint64_t k) {
    if (k == last_) {
      zero_.push_back(c);
      return;
    }
    const int level = (63 - __builtin_clzll(k ^ last_)) / kBits;
    const int b = (level << kBits) | static_cast<int>((k >> (level * kBits)) & kDigitMask);
    buckets_[b].push_back(c);
    min_[b] = std::min(min_[b], k);  // branch-free: which entry is smaller is unpredictable
    digits_[level] |= uint32_t{1} << (b & kDigitMask);
    levels_ |= uint32_t{1} << level;
  }

  // The non-empty bucket of the smallest keys (bucket 0 empty, heap not): the lowest level,
  // then its lowest digit.
  int first_bucket() const {
    const int level = __builtin_ctz(levels_);
    return (level << kBits) | __builtin_ctz(digits_[level]);
  }

  std::vector<Completion> zero_;                        // key == last_
  std::vector<Completion> buckets_[kLevels * kDigits];  // (level, digit) at level * kDigits + digit
  uint64_t min_[kLevels * kDigits];                     // the smallest key in each bucket, kNone if empty
  uint32_t digits_[kLevels] = {};                       // per level: bit d set if bucket (level, d) holds entries
  uint32_t levels_ = 0;                                 // bit L set if level L holds entries
  uint64_t last_ = 0;                                   // the key of the last completion popped
  size_t size_ = 0;
  double next_ = std::numeric_limits<double>::infinity();  // the earliest time held

 public:
  CompletionHeap() { std::fill(min_, min_ + kLevels * kDigits, kNone); }
};

}  // namespace sim
}  // namespace sparrow
