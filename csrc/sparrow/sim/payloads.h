// Payloads: the int64 words that travel with the simulator's messages (a job's probes, a steal
// probe's victims and their answers), one FIFO for every message in flight: messages arrive in
// the order they were sent (cluster.h), so their payloads do too.
//
// push appends a payload (a copy). next(n) hands out the oldest payload as a view, with no copy:
// the words stay in the buffer until the following next() of a payload (n > 0), so a message's
// handler may send (push) while it still reads them. Only a payload that wraps around the end of
// the ring is copied, into a scratch array. When a push outgrows the ring, the old buffer is kept
// until the following next() of a payload, so the view in use stays valid. push and next O(n); no allocation once the
// ring holds the most words in flight at once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace sparrow {
namespace sim {

// A read-only view of n words (a message's payload).
struct Words {
  const int64_t* ptr = nullptr;
  size_t n = 0;
  const int64_t* data() const { return ptr; }
  size_t size() const { return n; }
  bool empty() const { return n == 0; }
  const int64_t& operator[](size_t i) const { return ptr[i]; }
  const int64_t* begin() const { return ptr; }
  const int64_t* end() const { return ptr + n; }
};

class PayloadFifo {
 public:
  void push(const int64_t* words, size_t n) {
    if (n == 0) return;  // (memcpy must not see a null pointer, even for 0 bytes)
    if (tail_ - head_ + n > buf_.size()) grow(tail_ - head_ + n);
    const size_t at = tail_ & mask_, first = std::min(n, buf_.size() - at);
    if (first == n && n <= kShort) {  // a steal probe's victims, a few stolen keys: no call to memcpy
      copy_short(buf_.data() + at, words, n);
      tail_ += n;
      return;
    }
    std::memcpy(buf_.data() + at, words, first * sizeof(int64_t));
    if (first < n) std::memcpy(buf_.data(), words + first, (n - first) * sizeof(int64_t));  // wrapped
    tail_ += n;
  }

  // The oldest n words (n <= what was pushed and not yet handed out), valid until the next call
  // with n > 0. n == 0 (most messages) hands out nothing and keeps the view handed out last
  // (about 11 instructions less per message).
  Words next(size_t n) {
    if (n == 0) return Words{};
    head_ += held_;
    held_ = n;
    if (!retired_.empty()) std::vector<int64_t>().swap(retired_);
    const size_t at = head_ & mask_;
    if (at + n <= buf_.size()) return Words{buf_.data() + at, n};
    const size_t first = buf_.size() - at;
    scratch_.resize(n);
    std::copy(buf_.data() + at, buf_.data() + at + first, scratch_.data());
    std::copy(buf_.data(), buf_.data() + (n - first), scratch_.data() + first);
    return Words{scratch_.data(), n};
  }

  // Words [skip, skip + n) of the payloads pushed after the view handed out last, as a view with
  // no copy (for a prefetch hint: valid until the next push or next(); empty if they wrap around
  // the end of the ring, or were not all pushed).
  Words ahead(size_t skip, size_t n) const {
    const size_t at = (head_ + held_ + skip) & mask_;
    if (at + n > buf_.size() || head_ + held_ + skip + n > tail_) return Words{};
    return Words{buf_.data() + at, n};
  }

 private:
  static constexpr size_t kShort = 16;  // payloads of up to this many words are copied inline

  // Copies n words two at a time: a loop of fixed 16-byte copies, which compiles to moves (a
  // plain word loop would be turned back into a call to memcpy, ~30 instructions for 8 words).
  static void copy_short(int64_t* to, const int64_t* from, size_t n) {
    size_t i = 0;
    for (; i + 2 <= n; i += 2) std::memcpy(to + i, from + i, 2 * sizeof(int64_t));
    if (i < n) to[i] = from[i];
  }

  __attribute__((noinline)) void grow(size_t needed) {  // rare: kept out of push's fast path
    size_t capacity = buf_.empty() ? 256 : 2 * buf_.size();
    while (capacity < needed) capacity *= 2;
    std::vector<int64_t> next(capacity);
    const size_t n = tail_ - head_;
    for (size_t i = 0; i < n; ++i) next[i] = buf_[(head_ + i) & mask_];
    if (retired_.empty()) retired_.swap(buf_);  // the view handed out last points into it (else: into retired_)
    buf_.swap(next);
    mask_ = capacity - 1;
    head_ = 0;
    tail_ = n;
  }

  std::vector<int64_t> buf_;      // power-of-two capacity
  std::vector<int64_t> retired_;  // the buffer of the view handed out last, if it grew since
  std::vector<int64_t> scratch_;  // a wrapped payload, copied
  size_t mask_ = 0;
  size_t head_ = 0;  // oldest word not yet released (the view handed out last starts here)
  size_t tail_ = 0;
  size_t held_ = 0;  // words of the view handed out last
};

}  // namespace sim
}  // namespace sparrow
