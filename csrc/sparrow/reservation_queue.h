// ReservationQueue: the node monitor's queue of reservations (probes), in three policies.
//
//   Fifo      arrival order.
//   Priority  lower priority number first, FIFO within a level.
//   Fair      weighted fair sharing between users by stride scheduling: each user has a FIFO
//             of its reservations and a "pass" value; pop serves the backlogged user with
//             the smallest pass (ties: the user backlogged longest) and charges it
//             1 / weight. A user that becomes backlogged starts at the current virtual time
//             (the pass of the last user served), so idle time earns no credit. With weights
//             3:1 and both users backlogged, 75% / 25% of pops. refund(user) gives back one
//             charge: a user whose get_task came back empty keeps its turn. The users live
//             in a binary heap keyed by (pass, backlogged since): O(log U) per pop.
//
// Storage, in two forms that make the same decisions:
//   short  up to kInline reservations held inside the object, in service order (fifo and
//          fair: arrival; priority: by (priority, arrival)), deleted eagerly. A node
//          monitor's usual queue (a few reservations) is two cache lines, no allocation;
//          every operation is O(kInline). kInline is 7, not 3 (one line): at high load most
//          queues hold 4-7 (the simulator at 10,000 workers, load 0.9: sparrow 2.9x and
//          sparrow_steal 1.3x faster with 7; the long form's ring, map and records cost
//          several misses per operation).
//   long   a push beyond kInline moves the queue here (allocated once, then reused):
//          fifo one ring FIFO; priority one ring FIFO per priority level plus a min-heap of
//          the levels holding entries; fair one ring FIFO per user. push and pop O(1)
//          (priority: O(log L) when a level of the L levels held appears or empties).
//          cancel(job) is O(1) amortised: a job has a pooled record (its id, user, live
//          count and a token unique in the queue) found through an open-addressing map, and
//          its 16-byte entries point at the record and carry the token; cancelling frees
//          the record, so the job's remaining entries are dead: skipped when reached, and
//          reclaimed when the queue empties or by an O(n) compaction once most stored
//          entries are dead. The queue returns to the short form whenever it empties.
// Users are dense numbers 0..U-1 (the binding maps strings and ints to them); a user never
// seen before gets the default weight. All live reservations of a job belong to one user.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/flat_map.h"
#include "sparrow/prefetch.h"
#include "sparrow/ring.h"

namespace sparrow {

enum class Policy : uint8_t { Fifo, Priority, Fair };

struct Reservation {
  int64_t job_id;
  int32_t user;
  int32_t priority;
};

class alignas(64) ReservationQueue {
 public:
  static constexpr int kInline = 7;        // reservations of the short form: 16 + 7 * 16 = 128 bytes
  static constexpr int64_t kPrefetch = 8;  // push_many starts loading job i + 8's state at job i

  explicit ReservationQueue(Policy policy, double default_weight = 1.0)
      : policy_(policy), default_weight_(check_weight(default_weight, "default_weight")) {}

  Policy policy() const { return policy_; }

  void set_weight(int32_t user, double weight) {
    check_weight(weight, "weight");
    UserState& u = user_state(user);
    u.weight = weight;
    u.stride = 1.0 / weight;
  }

  double weight(int32_t user) const {
    return user >= 0 && static_cast<size_t>(user) < users_.size() ? users_[user].weight : default_weight_;
  }

  void push(int64_t job_id, int32_t user, int32_t priority = 0) {
    if (user < 0) throw std::invalid_argument("user must be >= 0, got " + std::to_string(user));
    // The long form checks the job's user in the lookup it makes anyway (push_long).
    const int32_t owner = is_long_ ? -1 : job_user(job_id);
    if (owner >= 0 && owner != user) throw owner_conflict(job_id, owner, user);
    push_checked(job_id, user, priority);
  }

  // push for a caller that knows user >= 0 and that job_id has no reservation of another user
  // (the simulator: a job has one user): the short form skips its scan for the job's owner.
  void push_trusted(int64_t job_id, int32_t user, int32_t priority = 0) { push_checked(job_id, user, priority); }

  // Pushes reservation i = (job_ids[i], users[i], priorities[i] or 0 if null) for i < n, all
  // or nothing: returns -1 once all are queued; or, queuing nothing, the first i whose job
  // has reservations for another user (queued, or earlier in the batch), that user in owner.
  // Throws (queuing nothing) on a negative user or a priority beyond 32 bits. O(n) expected.
  int64_t push_many(const int64_t* job_ids, const int32_t* users, const int64_t* priorities, int64_t n,
                    int32_t& owner) {
    FlatMap<int32_t> batch;  // job -> its user, for every job of the batch
    for (int64_t i = 0; i < n; ++i) {
      if (i + kPrefetch < n) {
        batch.prefetch(job_ids[i + kPrefetch]);
        if (is_long_) long_store_->jobs.prefetch(job_ids[i + kPrefetch]);
      }
      if (users[i] < 0)
        throw std::invalid_argument("users[" + std::to_string(i) + "] must be >= 0, got " + std::to_string(users[i]));
      if (priorities && (priorities[i] < INT32_MIN || priorities[i] > INT32_MAX))
        throw std::invalid_argument("priorities[" + std::to_string(i) + "] must fit in 32 bits, got " +
                                    std::to_string(priorities[i]));
      auto [known, inserted] = batch.try_emplace(job_ids[i], users[i]);
      if (inserted) {
        const int32_t queued = job_user(job_ids[i]);
        if (queued >= 0) *known = queued;
      }
      if (*known != users[i]) {
        owner = *known;
        return i;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      if (is_long_ && i + kPrefetch < n) long_store_->jobs.prefetch(job_ids[i + kPrefetch]);
      push_checked(job_ids[i], users[i], priorities ? static_cast<int32_t>(priorities[i]) : 0);
    }
    return -1;
  }

  bool peek(Reservation& out) {
    if (size_ == 0) return false;
    if (!is_long_) {
      out = inline_[front_inline()];
      return true;
    }
    const Entry* e = front_long();
    const JobRecord& job = long_store_->records[e->record];
    out = Reservation{job.job_id, job.user, e->priority};
    return true;
  }

  bool pop(Reservation& out) {
    if (size_ == 0) return false;
    if (!is_long_) {
      const int i = front_inline();
      out = inline_[i];
      for (int j = i + 1; j < n_inline_; ++j) inline_[j - 1] = inline_[j];
      --n_inline_;
      if (policy_ == Policy::Fair) charge_fair_top();
    } else {
      Long& L = *long_store_;
      const Entry e = *front_long();
      JobRecord& job = L.records[e.record];
      out = Reservation{job.job_id, job.user, e.priority};
      switch (policy_) {
        case Policy::Fifo:
          long_store_->fifo.pop();
          break;
        case Policy::Priority:
          L.levels[L.level_heap.front().second].fifo.pop();
          break;
        case Policy::Fair:
          long_store_->user_fifos[out.user].pop();
          charge_fair_top();
          break;
      }
      --L.stored;
      if (--job.count == 0) drop_job(e.record);
    }
    forget(out.user, 1);
    return true;
  }

  // The task request for a reservation popped for `user` came back empty: undo one charge
  // so the user is served next again (Fair only; a no-op for the other policies).
  void refund(int32_t user) {
    if (policy_ != Policy::Fair) return;
    if (!can_refund(user))
      throw std::invalid_argument("refund: user " + std::to_string(user) + " has no pop left to refund");
    UserState& u = users_[user];
    --u.unrefunded_pops;
    u.pass -= u.stride;
    if (u.active) rekey(user);
  }

  // Removes every queued reservation of job_id; returns how many.
  int64_t cancel(int64_t job_id) {
    int64_t n = 0;
    int32_t user = 0;
    if (!is_long_) {
      int kept = 0;
      for (int i = 0; i < n_inline_; ++i) {
        if (inline_[i].job_id == job_id) {
          user = inline_[i].user;
          ++n;
        } else {
          inline_[kept++] = inline_[i];
        }
      }
      n_inline_ = kept;
      if (n == 0) return 0;
    } else {
      const uint32_t* record = long_store_->jobs.find(job_id);
      if (record == nullptr) return 0;
      const JobRecord& job = long_store_->records[*record];
      n = job.count;
      user = job.user;
      drop_job(*record);
    }
    forget(user, n);
    if (is_long_ && long_store_->stored > 1024 && long_store_->stored > 2 * size_) compact();
    return n;
  }

  int64_t size() const { return size_; }

  // Prefetching, for a caller that works on many queues in a row (the simulator: a job's
  // reservations or cancellations over its workers), in stages a few queues apart, each reading
  // only what the stage before loaded: the object, then what its long form points at, then the
  // job's slot there. Hints only: they decide nothing.
  void prefetch_object() const {
    prefetch_line(this);
    prefetch_line(reinterpret_cast<const char*>(this) + 64);
  }
  void prefetch_store() const {
    if (!is_long_) return;
    prefetch_line(&long_store_->fifo);
    prefetch_line(&long_store_->jobs);
    if (!users_.empty()) prefetch_line(users_.data());
  }
  void prefetch_job(int64_t job_id) const {
    if (is_long_) long_store_->jobs.prefetch(job_id);
  }

  int64_t count(int32_t user) const {
    if (!counts_users()) {
      int64_t n = 0;
      for (int i = 0; i < n_inline_; ++i) n += inline_[i].user == user;
      return n;
    }
    return user >= 0 && static_cast<size_t>(user) < users_.size() ? users_[user].count : 0;
  }

  // The user whose reservations of job_id are queued, or -1 if none is.
  // How many reservations of job_id are queued (0: none). O(1) expected in the long form.
  int64_t job_count(int64_t job_id) const {
    if (is_long_) {
      const uint32_t* record = long_store_->jobs.find(job_id);
      return record == nullptr ? 0 : long_store_->records[*record].count;
    }
    int64_t n = 0;
    for (int i = 0; i < n_inline_; ++i) n += inline_[i].job_id == job_id;
    return n;
  }

  int32_t job_user(int64_t job_id) const {
    if (is_long_) {
      const uint32_t* record = long_store_->jobs.find(job_id);
      return record == nullptr ? -1 : long_store_->records[*record].user;
    }
    for (int i = 0; i < n_inline_; ++i)
      if (inline_[i].job_id == job_id) return inline_[i].user;
    return -1;
  }

  // Whether refund(user) would be accepted now.
  bool can_refund(int32_t user) const {
    return user >= 0 && static_cast<size_t>(user) < users_.size() && users_[user].unrefunded_pops > 0;
  }

 private:
  // The long form. A job with queued reservations has a record (pooled, so its index is
  // stable) holding its id, user, live count and a token unique in this queue; its entries
  // point at the record and carry the token. Cancelling (or consuming the last entry) frees
  // the record and clears its token, so the job's remaining entries are dead.
  struct JobRecord {
    int64_t job_id;
    uint64_t token;  // 0: free
    int64_t count;
    int32_t user;
  };
  struct Entry {
    uint64_t token;
    uint32_t record;
    int32_t priority;
  };
  struct Level {  // Priority: the entries of one priority, in arrival order
    int32_t priority;
    Ring<Entry> fifo;
  };
  struct Long {
    Ring<Entry> fifo;  // Fifo
    // Priority: a FIFO per priority that holds entries (pooled), found by priority, and a
    // min-heap of (priority, level) over them.
    std::vector<Level> levels;
    std::vector<uint32_t> free_levels;
    FlatMap<uint32_t> level_of;
    std::vector<std::pair<int32_t, uint32_t>> level_heap;
    std::vector<Ring<Entry>> user_fifos;  // Fair, indexed by user
    FlatMap<uint32_t> jobs;               // job id -> record
    std::vector<JobRecord> records;
    std::vector<uint32_t> free_records;
    uint64_t next_token = 1;
    int64_t stored = 0;  // entries held, live or dead
  };
  struct UserState {
    double weight = 0.0;  // set from the default when the user is first seen
    double stride = 0.0;  // 1 / weight: the charge of one pop
    double pass = 0.0;
    int64_t count = 0;  // live reservations; kept by Fair always, by the others in the long form
    int64_t unrefunded_pops = 0;
    uint64_t backlogged_since = 0;  // tie-break: order of becoming backlogged
    uint64_t version = 0;           // heap nodes of older versions are stale
    bool active = false;
  };
  struct UserNode {
    unsigned __int128 key;  // (pass, backlogged since) as one number: see node_key()
    uint64_t version;
    int32_t user;
  };

  static double check_weight(double w, const char* name) {
    if (!(w > 0.0) || w > 1e300)
      throw std::invalid_argument(std::string(name) + " must be a positive finite number, got " + std::to_string(w));
    return w;
  }

  // Heap comparators (function objects, so the heap code inlines them): std heaps are
  // max-heaps, so "less" means "served later".
  struct LaterLevel {
    bool operator()(const std::pair<int32_t, uint32_t>& a, const std::pair<int32_t, uint32_t>& b) const {
      return a.first > b.first;
    }
  };
  struct LaterUser {  // one 128-bit comparison, without branches
    bool operator()(const UserNode& a, const UserNode& b) const { return a.key > b.key; }
  };

  // The users' heap order, (pass, backlogged since) lexicographically, as one unsigned number.
  // A double's bits, with the sign bit flipped if it is positive and all bits flipped if it
  // is negative, order like its value (a pass can go below 0 when a refund follows a weight
  // change); + 0.0 turns -0.0 into +0.0, which compares equal to it.
  static unsigned __int128 node_key(double pass, uint64_t backlogged_since) {
    uint64_t bits;
    const double normal = pass + 0.0;
    std::memcpy(&bits, &normal, sizeof bits);
    bits ^= (bits >> 63) ? ~uint64_t{0} : uint64_t{1} << 63;
    return (static_cast<unsigned __int128>(bits) << 64) | backlogged_since;
  }

  // Per-user live counts are kept by Fair (it needs them to schedule) and in the long form;
  // the short form of fifo / priority counts by scanning its entries.
  bool counts_users() const { return is_long_ || policy_ == Policy::Fair; }

  UserState& user_state(int32_t user) {
    if (user < 0) throw std::invalid_argument("user must be >= 0, got " + std::to_string(user));
    if (static_cast<size_t>(user) >= users_.size()) {
      const size_t first_new = users_.size();
      users_.resize(static_cast<size_t>(user) + 1);
      for (size_t i = first_new; i < users_.size(); ++i) {
        users_[i].weight = default_weight_;
        users_[i].stride = 1.0 / default_weight_;
      }
    }
    return users_[user];
  }

  // push() once the user (>= 0) and the job's owner are known to be right.
  void push_checked(int64_t job_id, int32_t user, int32_t priority) {
    if (!is_long_ && n_inline_ == kInline) to_long();
    if (is_long_) {
      push_long(job_id, user, priority);
    } else {
      int i = n_inline_++;
      if (policy_ == Policy::Priority)  // keep (priority, arrival) order: after every entry <= priority
        for (; i > 0 && inline_[i - 1].priority > priority; --i) inline_[i] = inline_[i - 1];
      inline_[i] = Reservation{job_id, user, priority};
    }
    ++size_;
    if (counts_users()) {
      UserState& u = user_state(user);
      ++u.count;
      if (policy_ == Policy::Fair && !u.active) activate(user);
    }
  }

  // Bookkeeping of n live reservations of `user` leaving the queue (popped or cancelled).
  void forget(int32_t user, int64_t n) {
    size_ -= n;
    if (counts_users()) {
      UserState& u = users_[user];
      u.count -= n;
      if (policy_ == Policy::Fair && u.count == 0 && u.active) deactivate(user);
    }
    if (size_ == 0 && is_long_) to_short();
  }

  // ---- the short form ----

  // Index of the next entry in policy order (the queue is not empty).
  int front_inline() {
    if (policy_ != Policy::Fair) return 0;
    const int32_t user = top_user();
    int i = 0;
    while (inline_[i].user != user) ++i;
    return i;
  }

  // ---- the long form ----

  void to_long() {
    if (!long_store_) long_store_ = std::make_unique<Long>();
    is_long_ = true;
    for (int i = 0; i < n_inline_; ++i) {
      const Reservation& r = inline_[i];
      push_long(r.job_id, r.user, r.priority);
      if (policy_ != Policy::Fair) ++user_state(r.user).count;  // Fair counts already
    }
    n_inline_ = 0;
  }

  // Back to the short form once empty: every stored entry is dead, drop them all.
  void to_short() {
    long_store_->fifo.clear();
    for (const auto& [priority, level] : long_store_->level_heap) drop_level(level);
    long_store_->level_heap.clear();
    for (auto& f : long_store_->user_fifos) f.clear();
    long_store_->stored = 0;
    is_long_ = false;
  }

  static std::invalid_argument owner_conflict(int64_t job_id, int32_t owner, int32_t user) {
    return std::invalid_argument("job " + std::to_string(job_id) + " already has reservations queued for user " +
                                 std::to_string(owner) + ", not user " + std::to_string(user));
  }

  // Throws, changing nothing, if the job's reservations are queued for another user.
  void push_long(int64_t job_id, int32_t user, int32_t priority) {
    Long& L = *long_store_;
    auto [record, inserted] = L.jobs.try_emplace(job_id, 0);
    if (!inserted && L.records[*record].user != user) throw owner_conflict(job_id, L.records[*record].user, user);
    if (inserted) {
      if (L.free_records.empty()) {
        L.records.push_back(JobRecord());
        *record = static_cast<uint32_t>(L.records.size() - 1);
      } else {
        *record = L.free_records.back();
        L.free_records.pop_back();
      }
      L.records[*record] = JobRecord{job_id, L.next_token++, 0, user};
    }
    JobRecord& job = L.records[*record];
    ++job.count;
    const Entry e{job.token, *record, priority};
    ++L.stored;
    switch (policy_) {
      case Policy::Fifo:
        L.fifo.push(e);
        break;
      case Policy::Priority:
        level(priority).fifo.push(e);
        break;
      case Policy::Fair:
        if (static_cast<size_t>(user) >= L.user_fifos.size()) L.user_fifos.resize(static_cast<size_t>(user) + 1);
        L.user_fifos[user].push(e);
        break;
    }
  }

  bool live(const Entry& e) const { return long_store_->records[e.record].token == e.token; }

  // Priority: the level of `priority`, made (and put in the heap) if it holds nothing yet.
  Level& level(int32_t priority) {
    Long& L = *long_store_;
    auto [index, inserted] = L.level_of.try_emplace(priority, 0);
    if (inserted) {
      if (L.free_levels.empty()) {
        L.levels.push_back(Level{priority, Ring<Entry>()});
        *index = static_cast<uint32_t>(L.levels.size() - 1);
      } else {
        *index = L.free_levels.back();
        L.free_levels.pop_back();
        L.levels[*index].priority = priority;
      }
      L.level_heap.emplace_back(priority, *index);
      std::push_heap(L.level_heap.begin(), L.level_heap.end(), LaterLevel());
    }
    return L.levels[*index];
  }

  // Priority: forgets a level (the caller takes it out of the heap); its FIFO is reused.
  void drop_level(uint32_t level) {
    Long& L = *long_store_;
    L.levels[level].fifo.clear();
    L.level_of.erase(L.levels[level].priority);
    L.free_levels.push_back(level);
  }

  // The job has no live entry left: forget it and free its record.
  void drop_job(uint32_t record) {
    Long& L = *long_store_;
    L.jobs.erase(L.records[record].job_id);
    L.records[record].token = 0;
    L.free_records.push_back(record);
  }

  // The next live entry in policy order, discarding dead entries on the way (not empty).
  const Entry* front_long() {
    Long& L = *long_store_;
    Ring<Entry>* fifo = &L.fifo;
    switch (policy_) {
      case Policy::Priority:
        for (;;) {  // the lowest level that still holds a live entry
          Ring<Entry>& f = L.levels[L.level_heap.front().second].fifo;
          while (!f.empty() && !live(f.front())) {
            f.pop();
            --L.stored;
          }
          if (!f.empty()) return &f.front();
          drop_level(L.level_heap.front().second);
          std::pop_heap(L.level_heap.begin(), L.level_heap.end(), LaterLevel());
          L.level_heap.pop_back();
        }
      case Policy::Fair:
        fifo = &L.user_fifos[top_user()];
        break;
      case Policy::Fifo:
        break;
    }
    while (!live(fifo->front())) {
      fifo->pop();
      --L.stored;
    }
    return &fifo->front();
  }

  void compact() {
    Long& L = *long_store_;
    auto dead = [this](const Entry& e) { return !live(e); };
    int64_t stored = 0;
    switch (policy_) {
      case Policy::Fifo:
        L.fifo.remove_if(dead);
        stored = static_cast<int64_t>(L.fifo.size());
        break;
      case Policy::Priority:
        for (const auto& [priority, level] : L.level_heap) {  // emptied levels go when reached
          L.levels[level].fifo.remove_if(dead);
          stored += static_cast<int64_t>(L.levels[level].fifo.size());
        }
        break;
      case Policy::Fair:
        for (auto& f : L.user_fifos) {
          f.remove_if(dead);
          stored += static_cast<int64_t>(f.size());
        }
        break;
    }
    L.stored = stored;
  }

  // ---- fair: the users' stride scheduler ----

  void activate(int32_t user) {
    UserState& u = users_[user];
    u.active = true;
    u.pass = std::max(u.pass, vtime_);
    u.backlogged_since = next_backlog_++;
    push_node(user);
  }

  // The user has no live reservation left: its stored entries (long form) are all dead.
  void deactivate(int32_t user) {
    UserState& u = users_[user];
    u.active = false;
    ++u.version;
    if (is_long_ && static_cast<size_t>(user) < long_store_->user_fifos.size()) {
      Ring<Entry>& f = long_store_->user_fifos[user];
      long_store_->stored -= static_cast<int64_t>(f.size());
      f.clear();
    }
  }

  void push_node(int32_t user) {
    const UserState& u = users_[user];
    user_heap_.push_back(UserNode{node_key(u.pass, u.backlogged_since), u.version, user});
    std::push_heap(user_heap_.begin(), user_heap_.end(), LaterUser());
  }

  void rekey(int32_t user) {
    ++users_[user].version;
    push_node(user);
    if (user_heap_.size() > 4 * users_.size() + 64) rebuild_user_heap();
  }

  void pop_node() {
    std::pop_heap(user_heap_.begin(), user_heap_.end(), LaterUser());
    user_heap_.pop_back();
  }

  // The backlogged user served next, discarding stale heap nodes (the queue is not empty).
  int32_t top_user() {
    for (;;) {
      const UserNode& node = user_heap_.front();
      const UserState& u = users_[node.user];
      if (u.active && node.version == u.version) return node.user;
      pop_node();
    }
  }

  // The top user's front reservation was just taken: charge the user one turn. The user's
  // count still includes it (forget() follows), so count > 1 means it stays backlogged and
  // its node is re-keyed in place (one sift down instead of a pop and a push). Live nodes
  // have distinct keys, so the order served does not depend on the heap's layout.
  void charge_fair_top() {
    const int32_t user = user_heap_.front().user;
    UserState& u = users_[user];
    vtime_ = u.pass;
    u.pass += u.stride;
    ++u.unrefunded_pops;
    if (u.count > 1) {
      ++u.version;
      user_heap_.front() = UserNode{node_key(u.pass, u.backlogged_since), u.version, user};
      sift_down_top();
    } else {
      pop_node();
    }
  }

  void sift_down_top() {
    const size_t n = user_heap_.size();
    const UserNode x = user_heap_[0];
    size_t i = 0;
    for (size_t c = 1; c < n; c = 2 * i + 1) {
      c += (c + 1 < n) & LaterUser()(user_heap_[c], user_heap_[c + 1]);  // the earlier child
      if (!LaterUser()(x, user_heap_[c])) break;
      user_heap_[i] = user_heap_[c];
      i = c;
    }
    user_heap_[i] = x;
  }

  void rebuild_user_heap() {
    user_heap_.clear();
    for (size_t i = 0; i < users_.size(); ++i)
      if (users_[i].active)
        user_heap_.push_back(
            UserNode{node_key(users_[i].pass, users_[i].backlogged_since), users_[i].version, static_cast<int32_t>(i)});
    std::make_heap(user_heap_.begin(), user_heap_.end(), LaterUser());
  }

  // First two cache lines: everything a push / pop / cancel of a short queue touches.
  int64_t size_ = 0;  // live reservations
  uint8_t n_inline_ = 0;
  bool is_long_ = false;  // the long form (long_store_) is in use
  Policy policy_;
  Reservation inline_[kInline];  // the short form, in service order
  // Cold: weights and fair sharing, the long form's storage.
  double default_weight_;
  std::unique_ptr<Long> long_store_;
  std::vector<UserState> users_;
  std::vector<UserNode> user_heap_;
  uint64_t next_backlog_ = 0;
  double vtime_ = 0.0;
};

}  // namespace sparrow
