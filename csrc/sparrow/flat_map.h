// FlatMap: an open-addressing hash map from int64 keys to small values, for per-job state in
// the kernels (one allocation for the whole table instead of one node per key).
//
// Algorithm: linear probing in a power-of-two table kept at most half full, Fibonacci
// hashing, and backward-shift deletion (no tombstones, so lookups stay short however many
// keys come and go). find/insert/erase O(1) expected; the table doubles when half full;
// reserve(n) sizes it for n keys at once; clear() keeps the table (O(capacity)). A slot is
// the key, the value and a flag: 16 bytes for a value of up to 4 bytes. Unused slots hold V().
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "sparrow/prefetch.h"

namespace sparrow {

template <typename V>
class FlatMap {
 public:
  V* find(int64_t key) {
    if (size_ == 0) return nullptr;
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  const V* find(int64_t key) const { return const_cast<FlatMap*>(this)->find(key); }

  // The value of key, inserted as `value` if absent; second is true when inserted.
  std::pair<V*, bool> try_emplace(int64_t key, const V& value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!s.used) {
        s.used = true;
        s.key = key;
        s.value = value;
        ++size_;
        return {&s.value, true};
      }
      if (s.key == key) return {&s.value, false};
    }
  }

  // try_emplace(key, V()) for a caller that made room first (reserve(size() + keys to come)):
  // no check for growth. inserted says whether key was absent.
  V* emplace_reserved(int64_t key, bool& inserted) {
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      inserted = !s.used;
      if (inserted) {
        s.used = true;
        s.key = key;
        ++size_;
        return &s.value;
      }
      if (s.key == key) return &s.value;
    }
  }

  bool erase(int64_t key) {
    if (size_ == 0) return false;
    size_t i = slot(key);
    while (true) {
      if (!slots_[i].used) return false;
      if (slots_[i].key == key) break;
      i = (i + 1) & mask_;
    }
    // Backward shift: move later entries of the probe run into the hole when allowed.
    for (size_t j = (i + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
      const size_t home = slot(slots_[j].key);
      const bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
      if (movable) {
        slots_[i] = std::move(slots_[j]);
        i = j;
      }
    }
    slots_[i].used = false;
    slots_[i].value = V();
    --size_;
    return true;
  }

  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }

  // A hint that key will be looked up soon: starts loading its home slot.
  void prefetch(int64_t key) const {
    if (!slots_.empty()) prefetch_line(&slots_[slot(key)]);
  }

  // Makes room for n keys without further growth (one rehash at most).
  void reserve(size_t n) {
    if (2 * n <= slots_.size()) return;
    size_t capacity = slots_.empty() ? 16 : slots_.size();
    while (2 * n > capacity) capacity *= 2;
    rehash(capacity);
  }

  void clear() {
    if (size_ == 0) return;
    for (Slot& s : slots_) s = Slot();
    size_ = 0;
  }

  // clear() in O(n) rather than O(capacity), given pointers to the values of all n keys held
  // (from find or try_emplace since the last rehash); else (n is not size()) clear().
  void clear_values(V* const* values, size_t n) {
    if (n != size_) return clear();
    for (size_t i = 0; i < n; ++i)
      *reinterpret_cast<Slot*>(reinterpret_cast<char*>(values[i]) - offsetof(Slot, value)) = Slot();
    size_ = 0;
  }

  template <typename F>
  void for_each(F&& f) {
    for (Slot& s : slots_)
      if (s.used) f(s.key, s.value);
  }

 private:
  struct Slot {
    int64_t key = 0;
    V value{};
    bool used = false;
  };

  size_t slot(int64_t key) const {
    return static_cast<size_t>((static_cast<uint64_t>(key) * 0x9e3779b97f4a7c15ULL) >> shift_);
  }

  void grow() { rehash(slots_.empty() ? 16 : 2 * slots_.size()); }

  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot());
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    size_ = 0;
    for (Slot& s : old)
      if (s.used) try_emplace(s.key, s.value);
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace sparrow
