// WorkerState: one record per simulated worker holding everything the event loop reads of a
// worker in one place, so that a peer's look at it (a steal probe asks 8 of them) is one cache
// line rather than one line in each of five per-worker arrays (with separate arrays the loop
// is bound by L1 misses, ~62 per task).
//
// The record is the cluster's (its free slots) plus the words the queueing policies keep per
// worker next to their queue (worker_queues.h: how many entries are queued and when the slot was
// last taken; steal.h: stolen reservations held and the attempt in flight). 32 bytes, aligned:
// two records per line, none straddling two. FreeSlots is the view of the free slots alone that
// the policies index as c.free[w]: inside the records, or, for a policy that keeps nothing else
// per worker (omniscient), in a compact array of its own (an eighth of the memory: measured 13%
// faster for omniscient than slots inside records).
#pragma once

#include <cstdint>
#include <vector>

namespace sparrow {
namespace sim {

struct alignas(32) WorkerState {
  double granted_at = 0.0;  // when a slot of the worker was last taken (worker_queues.h)
  int32_t free = 0;         // free slots (Cluster)
  int32_t queued = 0;       // live entries of its queue (worker_queues.h)
  int32_t borrowed = 0;     // stolen reservations in its queue (steal.h)
  uint8_t attempting = 0;   // steal.h: 1 an attempt is in flight, 2 and it became idle again
};
static_assert(sizeof(WorkerState) == 32, "two worker records per cache line");

// c.free[w]: worker w's free slots, inside its record (records: true) or in a compact array.
// n workers with `slots` free slots each.
class FreeSlots {
 public:
  FreeSlots(std::vector<WorkerState>& workers, size_t n, int32_t slots, bool records) {
    if (records) {
      workers.resize(n);
      for (WorkerState& w : workers) w.free = slots;
      base_ = reinterpret_cast<char*>(&workers.data()->free);
      shift_ = 5;
    } else {
      compact_.assign(n, slots);
      base_ = reinterpret_cast<char*>(compact_.data());
      shift_ = 2;
    }
  }
  FreeSlots(const FreeSlots&) = delete;
  FreeSlots& operator=(const FreeSlots&) = delete;

  int32_t& operator[](int64_t w) { return *reinterpret_cast<int32_t*>(base_ + (static_cast<size_t>(w) << shift_)); }
  int32_t operator[](int64_t w) const {
    return *reinterpret_cast<const int32_t*>(base_ + (static_cast<size_t>(w) << shift_));
  }

 private:
  static_assert(sizeof(WorkerState) == 32 && sizeof(int32_t) == 4, "shift_ is log2 of the stride");
  std::vector<int32_t> compact_;
  char* base_ = nullptr;
  unsigned shift_ = 0;
};

}  // namespace sim
}  // namespace sparrow
