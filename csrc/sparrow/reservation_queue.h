// ReservationQueue: the node monitor's queue of reservations (probes), in three policies.
//
//   Fifo      arrival order. push O(1), pop O(1).
//   Priority  lower priority number first, FIFO within a level: a binary heap keyed by
//             (priority, arrival sequence). push and pop O(log n).
//   Fair      weighted fair sharing between users by stride scheduling: each user has a FIFO
//             of its reservations and a "pass" value; pop serves the backlogged user with
//             the smallest pass (ties: the user backlogged longest) and charges it
//             1 / weight. A user that becomes backlogged starts at the current virtual time
//             (the pass of the last user served), so idle time earns no credit. With weights
//             3:1 and both users backlogged, 75% / 25% of pops. refund(user) gives back one
//             charge: a user whose get_task came back empty keeps its turn. push and pop
//             O(log U) for U backlogged users.
// cancel(job) is O(1) amortised for every policy: each job has a live token and a count;
// cancelling erases the job's token, and entries whose token is gone are skipped (and their
// memory reclaimed by an occasional O(n) compaction once most stored entries are dead).
// Users are dense numbers 0..U-1 (the binding maps strings and ints to them); a user never
// seen before gets the default weight. All live reservations of a job belong to one user.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/flat_map.h"

namespace sparrow {

// A FIFO on a vector with a moving head: no allocation until the first push, one buffer,
// the consumed prefix dropped once it is at least half of the buffer (O(1) amortised).
template <typename T>
class VecFifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }
  T& front() { return items_[head_]; }
  void push_back(const T& item) { items_.push_back(item); }
  void pop_front() {
    if (++head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    } else if (head_ >= 32 && 2 * head_ >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }
  void clear() {
    items_.clear();
    head_ = 0;
  }
  template <typename Pred>
  void remove_if(Pred pred) {
    items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
    items_.erase(std::remove_if(items_.begin(), items_.end(), pred), items_.end());
  }

 private:
  std::vector<T> items_;
  size_t head_ = 0;
};

enum class Policy { Fifo, Priority, Fair };

struct Reservation {
  int64_t job_id;
  int32_t user;
  int32_t priority;
};

class ReservationQueue {
 public:
  explicit ReservationQueue(Policy policy, double default_weight = 1.0)
      : policy_(policy), default_weight_(check_weight(default_weight, "default_weight")) {}

  Policy policy() const { return policy_; }

  void set_weight(int32_t user, double weight) {
    check_weight(weight, "weight");
    user_state(user).weight = weight;
  }

  double weight(int32_t user) const {
    return user >= 0 && static_cast<size_t>(user) < users_.size() ? users_[user].weight : default_weight_;
  }

  void push(int64_t job_id, int32_t user, int32_t priority = 0) {
    UserState& u = user_state(user);
    auto [job, inserted] = jobs_.try_emplace(job_id, JobState{next_token_, 0, user});
    if (inserted) {
      ++next_token_;
    } else if (job->user != user) {
      throw std::invalid_argument("job " + std::to_string(job_id) + " already has reservations queued for user " +
                                  std::to_string(job->user) + ", not user " + std::to_string(user));
    }
    ++job->count;
    const Entry e{job_id, job->token, user, priority, next_seq_++};
    ++u.count;
    ++size_;
    ++stored_;
    switch (policy_) {
      case Policy::Fifo:
        fifo_.push_back(e);
        break;
      case Policy::Priority:
        heap_.push_back(e);
        std::push_heap(heap_.begin(), heap_.end(), later_entry);
        break;
      case Policy::Fair:
        u.queue.push_back(e);
        if (!u.active) activate(user);
        break;
    }
  }

  bool peek(Reservation& out) {
    const Entry* e = front_live();
    if (e == nullptr) return false;
    out = Reservation{e->job_id, e->user, e->priority};
    return true;
  }

  bool pop(Reservation& out) {
    const Entry* e = front_live();
    if (e == nullptr) return false;
    out = Reservation{e->job_id, e->user, e->priority};
    switch (policy_) {
      case Policy::Fifo:
        fifo_.pop_front();
        break;
      case Policy::Priority:
        std::pop_heap(heap_.begin(), heap_.end(), later_entry);
        heap_.pop_back();
        break;
      case Policy::Fair:
        serve_fair_front();
        break;
    }
    --stored_;
    consume(out.job_id, out.user);
    return true;
  }

  // The task request for a reservation popped for `user` came back empty: undo one charge
  // so the user is served next again (Fair only; a no-op for the other policies).
  void refund(int32_t user) {
    if (policy_ != Policy::Fair) return;
    if (user < 0 || static_cast<size_t>(user) >= users_.size() || users_[user].unrefunded_pops == 0)
      throw std::invalid_argument("refund: user " + std::to_string(user) + " has no pop left to refund");
    UserState& u = users_[user];
    --u.unrefunded_pops;
    u.pass -= 1.0 / u.weight;
    if (u.active) rekey(user);
  }

  // Removes every queued reservation of job_id; returns how many.
  int64_t cancel(int64_t job_id) {
    const JobState* job = jobs_.find(job_id);
    if (job == nullptr) return 0;
    const int64_t n = job->count;
    UserState& u = users_[job->user];
    u.count -= n;
    size_ -= n;
    jobs_.erase(job_id);
    if (policy_ == Policy::Fair && u.count == 0) deactivate(u);
    if (stored_ > 1024 && stored_ > 2 * size_) compact();
    return n;
  }

  int64_t size() const { return size_; }

  int64_t count(int32_t user) const {
    return user >= 0 && static_cast<size_t>(user) < users_.size() ? users_[user].count : 0;
  }

  // The user whose reservations of job_id are queued, or -1 if none is.
  int32_t job_user(int64_t job_id) const {
    const JobState* job = jobs_.find(job_id);
    return job == nullptr ? -1 : job->user;
  }

  // Whether refund(user) would be accepted now.
  bool can_refund(int32_t user) const {
    return user >= 0 && static_cast<size_t>(user) < users_.size() && users_[user].unrefunded_pops > 0;
  }

  int32_t n_users() const { return static_cast<int32_t>(users_.size()); }

 private:
  struct Entry {
    int64_t job_id;
    uint64_t token;
    int32_t user;
    int32_t priority;
    uint64_t seq;
  };
  struct JobState {
    uint64_t token = 0;
    int64_t count = 0;
    int32_t user = 0;
  };
  struct UserState {
    VecFifo<Entry> queue;  // Fair only
    double weight = 0.0;  // set from the default when the user is first seen
    double pass = 0.0;
    int64_t count = 0;
    int64_t unrefunded_pops = 0;
    uint64_t backlogged_since = 0;  // tie-break: order of becoming backlogged
    uint64_t version = 0;           // heap nodes of older versions are stale
    bool active = false;
  };
  struct UserNode {
    double pass;
    uint64_t backlogged_since;
    uint64_t version;
    int32_t user;
  };

  static double check_weight(double w, const char* name) {
    if (!(w > 0.0) || w > 1e300)
      throw std::invalid_argument(std::string(name) + " must be a positive finite number, got " + std::to_string(w));
    return w;
  }

  // Heap comparators: std heaps are max-heaps, so "less" means "served later".
  static bool later_entry(const Entry& a, const Entry& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.seq > b.seq;
  }
  static bool later_user(const UserNode& a, const UserNode& b) {
    return a.pass != b.pass ? a.pass > b.pass : a.backlogged_since > b.backlogged_since;
  }

  UserState& user_state(int32_t user) {
    if (user < 0) throw std::invalid_argument("user must be >= 0, got " + std::to_string(user));
    if (static_cast<size_t>(user) >= users_.size()) {
      const size_t first_new = users_.size();
      users_.resize(static_cast<size_t>(user) + 1);
      for (size_t i = first_new; i < users_.size(); ++i) users_[i].weight = default_weight_;
    }
    return users_[user];
  }

  bool live(const Entry& e) const {
    const JobState* job = jobs_.find(e.job_id);
    return job != nullptr && job->token == e.token;
  }

  void consume(int64_t job_id, int32_t user) {
    JobState* job = jobs_.find(job_id);
    if (--job->count == 0) jobs_.erase(job_id);
    --users_[user].count;
    --size_;
  }

  void activate(int32_t user) {
    UserState& u = users_[user];
    u.active = true;
    u.pass = std::max(u.pass, vtime_);
    u.backlogged_since = next_backlog_++;
    push_node(user);
  }

  void deactivate(UserState& u) {
    u.active = false;
    stored_ -= static_cast<int64_t>(u.queue.size());
    u.queue.clear();
    ++u.version;
  }

  void push_node(int32_t user) {
    const UserState& u = users_[user];
    user_heap_.push_back(UserNode{u.pass, u.backlogged_since, u.version, user});
    std::push_heap(user_heap_.begin(), user_heap_.end(), later_user);
  }

  void rekey(int32_t user) {
    ++users_[user].version;
    push_node(user);
    if (user_heap_.size() > 4 * users_.size() + 64) rebuild_user_heap();
  }

  void pop_node() {
    std::pop_heap(user_heap_.begin(), user_heap_.end(), later_user);
    user_heap_.pop_back();
  }

  // The next live entry in policy order, discarding dead entries on the way; nullptr if none.
  const Entry* front_live() {
    switch (policy_) {
      case Policy::Fifo:
        while (!fifo_.empty() && !live(fifo_.front())) {
          fifo_.pop_front();
          --stored_;
        }
        return fifo_.empty() ? nullptr : &fifo_.front();
      case Policy::Priority:
        while (!heap_.empty() && !live(heap_.front())) {
          std::pop_heap(heap_.begin(), heap_.end(), later_entry);
          heap_.pop_back();
          --stored_;
        }
        return heap_.empty() ? nullptr : &heap_.front();
      case Policy::Fair:
        while (!user_heap_.empty()) {
          const UserNode& node = user_heap_.front();
          UserState& u = users_[node.user];
          if (!u.active || node.version != u.version) {
            pop_node();
            continue;
          }
          while (!u.queue.empty() && !live(u.queue.front())) {
            u.queue.pop_front();
            --stored_;
          }
          return &u.queue.front();  // an active user has count > 0, so a live entry
        }
        return nullptr;
    }
    return nullptr;
  }

  // Fair: remove the front entry of the top user and charge that user one turn.
  void serve_fair_front() {
    const int32_t user = user_heap_.front().user;
    UserState& u = users_[user];
    pop_node();
    u.queue.pop_front();
    vtime_ = u.pass;
    u.pass += 1.0 / u.weight;
    ++u.unrefunded_pops;
    if (u.count > 1) {
      ++u.version;
      push_node(user);
    } else {
      // This pop takes the user's last live reservation (consume() follows).
      u.active = false;
      stored_ -= static_cast<int64_t>(u.queue.size());
      u.queue.clear();
      ++u.version;
    }
  }

  void rebuild_user_heap() {
    user_heap_.clear();
    for (size_t i = 0; i < users_.size(); ++i)
      if (users_[i].active) user_heap_.push_back(UserNode{users_[i].pass, users_[i].backlogged_since,
                                                          users_[i].version, static_cast<int32_t>(i)});
    std::make_heap(user_heap_.begin(), user_heap_.end(), later_user);
  }

  void compact() {
    auto dead = [this](const Entry& e) { return !live(e); };
    switch (policy_) {
      case Policy::Fifo:
        fifo_.remove_if(dead);
        break;
      case Policy::Priority:
        heap_.erase(std::remove_if(heap_.begin(), heap_.end(), dead), heap_.end());
        std::make_heap(heap_.begin(), heap_.end(), later_entry);
        break;
      case Policy::Fair:
        for (auto& u : users_) u.queue.remove_if(dead);
        break;
    }
    stored_ = size_;
  }

  Policy policy_;
  double default_weight_;
  VecFifo<Entry> fifo_;
  std::vector<Entry> heap_;
  std::vector<UserState> users_;
  std::vector<UserNode> user_heap_;
  FlatMap<JobState> jobs_;
  uint64_t next_token_ = 1;
  uint64_t next_seq_ = 0;
  uint64_t next_backlog_ = 0;
  double vtime_ = 0.0;
  int64_t size_ = 0;    // live reservations
  int64_t stored_ = 0;  // entries held, live or dead
};

}  // namespace sparrow
