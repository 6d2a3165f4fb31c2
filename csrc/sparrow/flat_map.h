// FlatMap: an open-addressing hash map from int64 keys to small values, for per-job state in
// the kernels (one allocation for the whole table instead of one node per key).
//
// Algorithm: linear probing in a power-of-two table kept at most half full, Fibonacci
// hashing, and backward-shift deletion (no tombstones, so lookups stay short however many
// keys come and go). find/insert/erase O(1) expected; the table doubles when half full;
// reserve(n) sizes it for n keys at once; clear() keeps the table (O(capacity)). A slot is
// the key, the value and a flag: 16 bytes for a value of up to 4 bytes. Unused slots hold V().
// FlatMap<V, uint32_t> holds keys in [0, kCompactKeys) only, as key + 1 in 32 bits (0: unused):
// 8 bytes a slot for a 4-byte value, half the memory and cache lines (the task table's per-job
// map of workers); find answers nullptr for a key outside, and inserting
// one throws std::invalid_argument.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "sparrow/prefetch.h"

namespace sparrow {

constexpr int64_t kCompactKeys = int64_t{0xFFFFFFFF};  // FlatMap<V, uint32_t>'s keys are below it

template <typename V, typename Key = int64_t>
class FlatMap {
  static_assert(std::is_same_v<Key, int64_t> || std::is_same_v<Key, uint32_t>, "int64 keys, or compact ones");

 public:
  V* find(int64_t key) {
    if (size_ == 0 || !fits(key)) return nullptr;
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!used(s)) return nullptr;
      if (holds(s, key)) return &s.value;
    }
  }
  const V* find(int64_t key) const { return const_cast<FlatMap*>(this)->find(key); }

  // The value of key, inserted as `value` if absent; second is true when inserted.
  std::pair<V*, bool> try_emplace(int64_t key, const V& value) {
    check_fits(key);
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!used(s)) {
        occupy(s, key);
        s.value = value;
        ++size_;
        return {&s.value, true};
      }
      if (holds(s, key)) return {&s.value, false};
    }
  }

  // try_emplace(key, V()) for a caller that made room first (reserve(size() + keys to come)):
  // no check for growth. inserted says whether key was absent.
  V* emplace_reserved(int64_t key, bool& inserted) {
    check_fits(key);
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      inserted = !used(s);
      if (inserted) {
        occupy(s, key);
        ++size_;
        return &s.value;
      }
      if (holds(s, key)) return &s.value;
    }
  }

  bool erase(int64_t key) {
    if (size_ == 0 || !fits(key)) return false;
    size_t i = slot(key);
    while (true) {
      if (!used(slots_[i])) return false;
      if (holds(slots_[i], key)) break;
      i = (i + 1) & mask_;
    }
    // Backward shift: move later entries of the probe run into the hole when allowed.
    for (size_t j = (i + 1) & mask_; used(slots_[j]); j = (j + 1) & mask_) {
      const size_t home = slot(key_of(slots_[j]));
      const bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
      if (movable) {
        slots_[i] = std::move(slots_[j]);
        i = j;
      }
    }
    slots_[i] = Slot();
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
      if (used(s)) f(key_of(s), s.value);
  }

 private:
  static constexpr bool kCompact = std::is_same_v<Key, uint32_t>;
  struct WideSlot {
    int64_t key = 0;
    V value{};
    bool used = false;
  };
  struct CompactSlot {
    uint32_t key1 = 0;  // key + 1; 0: unused
    V value{};
  };
  using Slot = std::conditional_t<kCompact, CompactSlot, WideSlot>;

  static bool fits(int64_t key) { return !kCompact || static_cast<uint64_t>(key) < static_cast<uint64_t>(kCompactKeys); }
  static void check_fits(int64_t key) {
    if (!fits(key))
      throw std::invalid_argument("FlatMap: key " + std::to_string(key) + " is outside a compact map's [0, 2**32 - 1)");
  }
  static bool used(const Slot& s) {
    if constexpr (kCompact) return s.key1 != 0;
    else return s.used;
  }
  static int64_t key_of(const Slot& s) {
    if constexpr (kCompact) return int64_t{s.key1} - 1;
    else return s.key;
  }
  static bool holds(const Slot& s, int64_t key) {  // s is used
    if constexpr (kCompact) return s.key1 == static_cast<uint32_t>(key) + 1;
    else return s.key == key;
  }
  static void occupy(Slot& s, int64_t key) {
    if constexpr (kCompact) {
      s.key1 = static_cast<uint32_t>(key) + 1;
    } else {
      s.used = true;
      s.key = key;
    }
  }

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
      if (used(s)) try_emplace(key_of(s), s.value);
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace sparrow
