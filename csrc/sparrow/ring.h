// Ring: a growable FIFO ring buffer (power-of-two capacity), for the reservation queues'
// long FIFOs and the simulator's messages (with one constant network delay, messages
// arrive in the order they were sent, so a FIFO replaces a priority queue for them).
//
// push and pop are O(1), with no allocation until the first push and none once the ring is
// as large as the most entries held at once; growing copies the live entries once
// (amortised O(1) per push). push_many and pop_many move a run of entries with at most two
// block copies (a message's payload). remove_if is an O(n) stable in-place compaction.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace sparrow {

template <typename T>
class Ring {
 public:
  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }
  T& front() { return buf_[head_ & mask_]; }
  const T& front() const { return buf_[head_ & mask_]; }
  T& operator[](size_t i) { return buf_[(head_ + i) & mask_]; }
  const T& operator[](size_t i) const { return buf_[(head_ + i) & mask_]; }

  void push(const T& value) {
    if (size() == cap_) grow();
    buf_[tail_++ & mask_] = value;
  }

  T pop() { return buf_[head_++ & mask_]; }

  void push_many(const T* values, size_t n) {
    while (size() + n > cap_) grow();
    const size_t at = tail_ & mask_, first = std::min(n, cap_ - at);
    std::copy(values, values + first, buf_.begin() + static_cast<std::ptrdiff_t>(at));
    std::copy(values + first, values + n, buf_.begin());
    tail_ += n;
  }

  // Moves the n oldest entries (n <= size()) to out.
  void pop_many(T* out, size_t n) {
    const size_t at = head_ & mask_, first = std::min(n, cap_ - at);
    std::copy(buf_.begin() + static_cast<std::ptrdiff_t>(at), buf_.begin() + static_cast<std::ptrdiff_t>(at + first), out);
    std::copy(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(n - first), out + first);
    head_ += n;
  }

  void clear() { head_ = tail_ = 0; }

  // Removes the entries for which pred is true, keeping the others in order.
  template <typename Pred>
  void remove_if(Pred pred) {
    size_t kept = head_;
    for (size_t i = head_; i != tail_; ++i)
      if (!pred(buf_[i & mask_])) buf_[kept++ & mask_] = std::move(buf_[i & mask_]);
    tail_ = kept;
  }

 private:
  __attribute__((noinline)) void grow() {  // rare: kept out of push's inlined fast path
    const size_t capacity = buf_.empty() ? 16 : 2 * buf_.size();
    std::vector<T> next(capacity);
    const size_t n = size();
    for (size_t i = 0; i < n; ++i) next[i] = std::move(buf_[(head_ + i) & mask_]);
    buf_.swap(next);
    cap_ = capacity;
    mask_ = capacity - 1;
    head_ = 0;
    tail_ = n;
  }

  std::vector<T> buf_;
  size_t cap_ = 0;  // buf_.size(), kept apart: a size() of a T that is not a power of two bytes divides
  size_t mask_ = 0;
  size_t head_ = 0;
  size_t tail_ = 0;
};

}  // namespace sparrow
