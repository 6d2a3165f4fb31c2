// Pipelining: pipelined late binding for the sparrow policy (policies sparrow_pipelined and
// sparrow_steal_pipelined): a worker asks its scheduler for the next task of a busy slot before
// the slot frees, so the round trip that plain late binding idles the slot for (GetTask + Reply,
// 2 x network_delay) overlaps the running task.
//
// Bookkeeping. A worker's GetTask requests are answered in the order it sent them (every message
// takes the same delay and a scheduler answers at once; checked), so a FIFO per worker says which
// answer is which: each request holds a slot (from when it was granted) or is ahead (no slot
// yet). When a slot frees (a task ended, or an empty answer to a request that held it): a bound
// task starts on it (its queue wait ends then); else the oldest ahead request takes it (its
// answer then starts at once); else the worker serves its queue as usual (and may steal). An
// ahead answer with a task binds it; an empty one refunds the user's fair-share charge and the
// worker may ask ahead again.
//
// The rule (when a worker asks ahead, how many, the gate, depth, steady and just-in-time timing, the
// half rule) is the kernel's, sparrow/pipeline.h, which the runtime's node monitor uses too; its mode
// comes from the params: pipeline_gate off is "always", on it is "gated", with pipeline_steady
// "steady", with pipeline_jit "jit" (jit wins over steady). This file keeps the requests and bound
// tasks in simulated time: a running task is "armed" (may ask) at its start, or, with pipeline_after
// > 0 (the simulator's own knob), once it has run pipeline_after x the median recent run time (a timer
// in the completion heap; a worker that has finished no task yet does not ask ahead), or, steady and
// jit, at its start + the view's ask_after; the round trip is 2 x network_delay (every message takes
// it). The price: a task asked for behind a long one waits out the long one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/pipeline.h"
#include "sparrow/sim/cluster.h"
#include "sparrow/sim/worker_queues.h"

namespace sparrow {
namespace sim {

class Pipelining {
 public:
  static constexpr int kRecent = kPipelineRecent;

  Pipelining(Cluster& c, WorkerQueues& queues)
      : c_(c),
        queues_(queues),
        on_(c.p.policy == PlacementPolicy::SparrowPipelined || c.p.policy == PlacementPolicy::SparrowStealPipelined),
        after_(c.p.pipeline_after),
        depth_(c.p.pipeline_depth),
        mode_(mode_of(c.p)),
        watches_(pipeline_watches_steadiness(mode_)) {
    if (!on_) return;
    if (!(after_ >= 0) || !std::isfinite(after_)) throw std::invalid_argument("pipeline_after must be finite and >= 0");
    check_pipeline(static_cast<int32_t>(mode_), depth_);
    const size_t n = static_cast<size_t>(c.p.n_workers), s = static_cast<size_t>(c.p.slots);
    const size_t d = static_cast<size_t>(depth_);
    ask_cap_ = static_cast<int32_t>((d + 1) * s);  // a request per slot held, d ahead per slot
    state_.assign(n, State{});
    asks_.assign(n * static_cast<size_t>(ask_cap_), Ask{0.0, -1});
    bound_.assign(n * d * s, Bound{});
    running_.assign(n * s, Running{});
    recent_.assign(keeps_recent() ? n * kRecent : 0, 0.0);
  }

  bool on() const { return on_; }

  // The host sent a GetTask for job at worker w, whose slot it holds now.
  void asked(int64_t w, int64_t job) { push_ask(w, job, c_.now); }

  // Task t of job started on worker w now (its completion is in the heap).
  template <class Host>
  void started(Host& host, int64_t w, int64_t job, int64_t t) {
    State& st = state_[w];
    Running* r = &running_[w * c_.p.slots];
    while (r->job >= 0) ++r;  // a free entry: w runs fewer than `slots` tasks
    *r = Running{job, static_cast<int32_t>(t), 0, c_.now};
    if (watches_ && !st.view.short_recent) {  // steady or jit: at ask_after, if steady
      if (!st.view.steady) return;
      if (st.view.ask_after <= 0) {
        arm(host, w, *r);
      } else {
        c_.heap.push(c_.now + st.view.ask_after, job, static_cast<int32_t>(w), -1 - static_cast<int32_t>(t));
      }
    } else if (after_ == 0 || st.view.deep) {
      arm(host, w, *r);
    } else if (st.n_recent > 0) {
      c_.heap.push(c_.now + after_ * pipeline_median(&recent_[w * kRecent], st.n_recent), job, static_cast<int32_t>(w), -1 - static_cast<int32_t>(t));
    }
  }

  // A timer (a completion with a negative task) fired: arm its task if it is still running.
  template <class Host>
  void timer(Host& host, const Completion& done) {
    Running* r = find(done.worker, done.job, -1 - done.task);
    if (r == nullptr || r->armed) return;  // it ended first: the timer is stale
    c_.now = done.time;
    arm(host, done.worker, *r);
  }

  // A task of worker w ended now (c_.last_done; the cluster freed its slot).
  template <class Host>
  void complete(Host& host, int64_t w) {
    const Completion& done = c_.last_done;
    Running* r = find(w, done.job, done.task);
    if (r == nullptr) throw std::logic_error("simulator: pipelining lost a running task");
    State& st = state_[w];
    if (r->armed) --st.armed;
    if (keeps_recent()) {
      recent_[w * kRecent + st.next_recent] = c_.now - r->start;
      st.next_recent = (st.next_recent + 1) % kRecent;
      if (st.n_recent < kRecent) ++st.n_recent;
      st.view = read_recent(mode_, depth_, &recent_[w * kRecent], st.n_recent, 2 * c_.p.network_delay);
    }
    r->job = -1;
    slot_freed(host, w);
    ask_ahead(host, w);
  }

  // An answer (Reply) reached worker w: the oldest request it sent.
  template <class Host>
  void on_reply(Host& host, const Msg& m) {
    const int64_t w = m.worker;
    const double granted = pop_ask(w, m.job);
    if (granted >= 0) {  // it held a slot
      if (m.task >= 0) {
        c_.start(w, c_.pool.get(m.job), m.task, granted);
        started(host, w, m.job, m.task);
      } else {
        ++c_.free[w];
        queues_.queue(w).refund(m.user);
        slot_freed(host, w);
      }
    } else {  // it was asked ahead
      --state_[w].ahead;
      if (m.task >= 0) {
        ++c_.out.counters.bound_ahead;
        State& st = state_[w];
        bound_[w * c_.p.slots * depth_ + st.n_bound++] = Bound{m.job, m.task};
        if (c_.free[w] > 0) slot_freed(host, w);  // a slot freed with nothing to take it
      } else {
        queues_.queue(w).refund(m.user);
      }
    }
    ask_ahead(host, w);
  }

  // Worker w's queue may hold reservations and a running task may be armed: ask ahead.
  template <class Host>
  void ask_ahead(Host& host, int64_t w) {
    State& st = state_[w];
    if (!gate_open(mode_, st.view, false)) return;
    const int64_t limit = ahead_limit(depth_, st.view, c_.p.slots - c_.free[w], armed(w, st));
    Reservation r;
    while (st.ahead + st.n_bound < limit) {
      if (half_rule_applies(mode_, st.view) && !head_half_allows(host, w)) break;
      if (!queues_.pop_ahead(w, r)) break;
      ++st.ahead;
      ++c_.out.counters.asked_ahead;
      push_ask(w, host.job_of(r.job_id), -1.0);
      host.ask_ahead_for(w, r.job_id, r.user);
    }
  }

  // A deep (or gated) worker asks ahead now: a slot of w took a reservation and asked for its task
  // (deep, it asks ahead with it), or a cancel took reservations from w's queue (its head may have
  // held the half rule back).
  template <class Host>
  void deep_ask(Host& host, int64_t w) {
    if (half_rule_applies(mode_, state_[w].view)) ask_ahead(host, w);
  }

 private:
  struct State {
    int32_t first_ask = 0, n_asks = 0;  // the FIFO of requests in flight (a ring of 2 x slots)
    int32_t ahead = 0;                  // ... of them asked ahead (no slot yet)
    int32_t n_bound = 0;                // tasks bound, waiting for a slot
    int32_t armed = 0;                  // running tasks whose slot may ask ahead
    int32_t n_recent = 0, next_recent = 0;
    PipelineView view;  // what the recent run times say (sparrow/pipeline.h)
  };
  struct Ask {
    double granted;  // when it got its slot; -1: asked ahead, none yet
    int64_t job;
  };
  struct Bound {
    int64_t job = -1;
    int64_t task = -1;
  };
  struct Running {
    int64_t job = -1;  // -1: a free entry
    int32_t task = -1;
    int32_t armed = 0;
    double start = 0.0;
  };

  // The kernel's mode for the params (header comment).
  static PipelineMode mode_of(const SimParams& p) {
    if (!p.pipeline_gate) return PipelineMode::Always;
    if (p.pipeline_jit) return PipelineMode::Jit;
    return p.pipeline_steady ? PipelineMode::Steady : PipelineMode::Gated;
  }

  bool keeps_recent() const { return after_ > 0 || pipeline_keeps_recent(mode_, depth_); }

  // Running tasks of w whose slot may ask ahead now: those armed; steady or jit (the gate open only
  // for steady run times), those armed that have not run past the longest recent run time.
  int64_t armed(int64_t w, const State& st) const {
    if (!watches_ || st.view.short_recent) return st.armed;
    int64_t n = 0;
    const Running* r = &running_[w * c_.p.slots];
    for (int32_t i = 0; i < c_.p.slots; ++i)
      n += r[i].job >= 0 && r[i].armed && c_.now - r[i].start <= st.view.ask_until;
    return n;
  }

  // The kernel's half rule for the head of w's queue (which may be empty: nothing to ask for).
  template <class Host>
  bool head_half_allows(Host& host, int64_t w) {
    Reservation head;
    if (queues_.queued(w) == 0 || !queues_.queue(w).peek(head)) return true;  // nothing to ask for
    const int64_t job = host.job_of(head.job_id);
    const State& st = state_[w];
    const Ask* asks = &asks_[w * ask_cap_];
    int64_t ahead = 0;
    for (int32_t i = 0; i < st.n_asks; ++i) {
      const Ask& a = asks[(st.first_ask + i) % ask_cap_];
      ahead += a.granted < 0 && a.job == job;
    }
    return half_allows(ahead, queues_.queue(w).job_count(head.job_id));
  }

  template <class Host>
  void arm(Host& host, int64_t w, Running& r) {
    r.armed = 1;
    ++state_[w].armed;
    ask_ahead(host, w);
  }

  // A slot of worker w is free now (c_.free counts it): a bound task, else the oldest request
  // asked ahead, takes it; else the host serves the queue as plain late binding does.
  template <class Host>
  void slot_freed(Host& host, int64_t w) {
    State& st = state_[w];
    if (st.n_bound > 0) {
      Bound* b = &bound_[w * c_.p.slots * depth_];
      const Bound next = b[0];
      std::copy(b + 1, b + st.n_bound, b);
      --st.n_bound;
      queues_.hold_slot(w);
      c_.start(w, c_.pool.get(next.job), next.task, c_.now);
      started(host, w, next.job, next.task);
      return;
    }
    if (st.ahead > 0) {
      const int32_t cap = ask_cap_;
      Ask* asks = &asks_[w * cap];
      for (int32_t i = 0; i < st.n_asks; ++i) {
        Ask& a = asks[(st.first_ask + i) % cap];
        if (a.granted < 0) {
          a.granted = c_.now;
          break;
        }
      }
      --st.ahead;
      queues_.hold_slot(w);
      return;
    }
    host.serve(w);
  }

  void push_ask(int64_t w, int64_t job, double granted) {
    State& st = state_[w];
    const int32_t cap = ask_cap_;
    if (st.n_asks == cap) throw std::logic_error("simulator: pipelining has too many requests in flight");
    asks_[w * cap + (st.first_ask + st.n_asks) % cap] = Ask{granted, job};
    ++st.n_asks;
  }

  // The oldest request of w in flight, which the answer about job must be.
  double pop_ask(int64_t w, int64_t job) {
    State& st = state_[w];
    const int32_t cap = ask_cap_;
    const Ask a = asks_[w * cap + st.first_ask];
    if (st.n_asks == 0 || a.job != job) throw std::logic_error("simulator: pipelining got answers out of order");
    st.first_ask = (st.first_ask + 1) % cap;
    --st.n_asks;
    return a.granted;
  }

  Running* find(int64_t w, int64_t job, int64_t t) {
    Running* r = &running_[w * c_.p.slots];
    for (int32_t i = 0; i < c_.p.slots; ++i)
      if (r[i].job == job && r[i].task == t) return &r[i];
    return nullptr;
  }

  Cluster& c_;
  WorkerQueues& queues_;
  bool on_;
  double after_;
  int32_t depth_;
  PipelineMode mode_;
  bool watches_;  // steady or jit: the gate opens for steady run times too
  int32_t ask_cap_ = 0;  // requests in flight per worker at most: (depth + 1) x slots
  std::vector<State> state_;
  std::vector<Ask> asks_;     // per worker ask_cap_: the requests in flight, oldest first
  std::vector<Bound> bound_;  // per worker depth x slots
  std::vector<Running> running_;  // per worker `slots`
  std::vector<double> recent_;    // per worker kRecent run times (keeps_recent())
};

}  // namespace sim
}  // namespace sparrow
