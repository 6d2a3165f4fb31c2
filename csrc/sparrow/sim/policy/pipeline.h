// Pipelining: pipelined late binding for the sparrow policy (policies sparrow_pipelined and
// sparrow_steal_pipelined): a worker asks its scheduler for the next task of a busy slot before
// the slot frees, so the round trip that plain late binding idles the slot for (GetTask + Reply,
// 2 x network_delay) overlaps the running task.
//
// Rule. At most one task per running task is asked for ahead (in flight, or bound and waiting
// for the slot), and only while the worker's queue holds reservations (the head one is popped
// and asks, as on a free slot). A running task lets its slot ask ahead ("arms") at once
// (pipeline_after = 0) or once it has run pipeline_after x the median run time of the worker's
// last kRecent tasks (a timer in the completion heap; a worker that has finished no task yet
// does not ask ahead). The price: a task bound ahead waits for its slot even if another worker
// that holds a reservation of its job frees first (late binding's point), so a task asked for
// behind a long one waits out the long one.
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
// Depth (pipeline_depth d, the runtime's --pipeline-depth, services/node_monitor_logic.py). d = 1
// is the rule above. Deeper, while the median run time of the worker's last kRecent tasks is
// under kShortTask (5 ms; none known yet: not), the worker is "deep": up to d requests asked ahead
// or bound per slot it holds (running, or asking for its task) go out, a slot that takes a
// reservation asks ahead with it at once, the timer rule does not apply, and the worker asks ahead
// for at most half of what it holds of the head reservation's job (2 x (its requests ahead + 1)
// <= its queued reservations + its requests ahead; the head stops the asking). Whenever the median
// is 5 ms or more it pipelines one deep as above. So a worker that holds one reservation of a job
// (batch sampling on a large cluster) asks none of it ahead while deep.
//
// Gate (pipeline_gate, the runtime's default): a worker asks ahead at all, even one deep, only
// while each of its last kRecent tasks ran under kShortTask (none known yet: not; that is also
// when it is deep), and the half rule bounds every request asked ahead, one deep too. The median
// would open the gate for 16% of the workers of exponential 10 ms tasks, whose bound tasks then
// wait out a 10 ms-class task (measured at 10,000 workers: p50 1.06-1.09x plain, per_job
// 1.9-4.5x); each of the last 8 short: 0.06%. Without the half rule one deep, per_job still lost
// 2-13% there (a job held once bound behind a long job's task on a node of short tasks lately).
//
// Just in time (pipeline_jit, with the gate: the runtime's --pipeline-jit): the gate also opens, one deep,
// while the worker's last kRecent run times are steady (the longest at most kSpread x the shortest,
// whatever their length), and then a running task asks ahead only shortly before its predicted end:
// a timer at its start + the shortest recent run time - the round trip (2 x network_delay, what a
// GetTask and its answer take) - kJitMargin, so that the answer comes as the slot frees; never behind
// a task that has run past the longest recent run time (it overran its prediction). The half rule
// bounds these requests too. So the task is bound a margin before the slot frees rather than a whole
// task before (asking at once), and a task of a node whose run times vary never waits bound.
//
// Steady (pipeline_steady, with the gate: the runtime's --pipeline-steady): the gate also opens, one deep,
// while the worker's last kRecent run times are steady within kSteadySpread (3: a loaded host stretches a
// 10 ms task to 11-20 ms and more at the node, which 1.5 does not pass; 8 exponential draws pass 3 0.3% of
// the time), and a running task then asks ahead at once, at its start, as ungated pipelining does
// (pipeline_jit, if also set, keeps its rule and timing). Steady work is where binding behind the running
// task costs least (its end is predictable), and its answer has the whole running task to come (and a
// second ask after a "no task"), where one asked a round trip before the end often comes back after the
// slot freed on a loaded host (the runtime; here every message takes network_delay). Never behind a task past the longest recent run time; the half rule still bounds these
// requests, so a worker holding one reservation of a job (batch sampling at scale) asks none of it ahead.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/sim/cluster.h"
#include "sparrow/sim/worker_queues.h"

namespace sparrow {
namespace sim {

class Pipelining {
 public:
  static constexpr int kRecent = 8;          // run times kept per worker for its median
  static constexpr double kShortTask = 0.005;  // seconds: deeper than 1 only under this median
  static constexpr int32_t kMaxDepth = 64;     // the runtime's MAX_PIPELINE_DEPTH
  static constexpr double kSpread = 1.5;       // just in time: steady while longest <= kSpread x shortest
  static constexpr double kSteadySpread = 3.0;  // steady: the same with this spread (header comment)
  static constexpr double kJitMargin = 0.00025;  // seconds: just in time, asked this much earlier still

  Pipelining(Cluster& c, WorkerQueues& queues)
      : c_(c),
        queues_(queues),
        on_(c.p.policy == PlacementPolicy::SparrowPipelined || c.p.policy == PlacementPolicy::SparrowStealPipelined),
        after_(c.p.pipeline_after),
        depth_(c.p.pipeline_depth),
        gate_(c.p.pipeline_gate),
        jit_(c.p.pipeline_gate && (c.p.pipeline_jit || c.p.pipeline_steady)),
        at_start_(!c.p.pipeline_jit) {
    if (!on_) return;
    if (!(after_ >= 0) || !std::isfinite(after_)) throw std::invalid_argument("pipeline_after must be finite and >= 0");
    if (depth_ < 1 || depth_ > kMaxDepth)
      throw std::invalid_argument("pipeline_depth must be in [1, 64], got " + std::to_string(depth_));
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
    if (jit_ && !st.short_recent) {  // just in time: shortly before its predicted end, if steady
      if (!st.steady) return;
      if (st.jit_after <= 0) {
        arm(host, w, *r);
      } else {
        c_.heap.push(c_.now + st.jit_after, job, static_cast<int32_t>(w), -1 - static_cast<int32_t>(t));
      }
    } else if (after_ == 0 || st.deep) {
      arm(host, w, *r);
    } else if (st.n_recent > 0) {
      c_.heap.push(c_.now + after_ * median(w), job, static_cast<int32_t>(w), -1 - static_cast<int32_t>(t));
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
      if (depth_ > 1 || gate_) {
        st.short_recent = (gate_ ? longest(w) : median(w)) < kShortTask;
        st.deep = depth_ > 1 && st.short_recent;
      }
      if (jit_) steady(w, st);
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
    if (gate_ && !st.short_recent && !(jit_ && st.steady)) return;
    const int64_t limit = st.deep ? (c_.p.slots - c_.free[w]) * depth_ : armed(w, st);
    Reservation r;
    while (st.ahead + st.n_bound < limit) {
      if ((st.deep || gate_) && !half_allows(host, w)) break;
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
    if (state_[w].deep || gate_) ask_ahead(host, w);
  }

 private:
  struct State {
    int32_t first_ask = 0, n_asks = 0;  // the FIFO of requests in flight (a ring of 2 x slots)
    int32_t ahead = 0;                  // ... of them asked ahead (no slot yet)
    int32_t n_bound = 0;                // tasks bound, waiting for a slot
    int32_t armed = 0;                  // running tasks whose slot may ask ahead
    int32_t n_recent = 0, next_recent = 0;
    bool short_recent = false;  // the recent median (gated: each recent task) under kShortTask
    bool deep = false;          // depth > 1 and short_recent
    bool steady = false;        // just in time: the recent run times are steady (header comment)
    double jit_after = 0.0;     // ... a running task is armed this long after it started
    double jit_until = 0.0;     // ... and stays so until it has run this long (the longest recent)
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

  bool keeps_recent() const { return after_ > 0 || depth_ > 1 || gate_; }

  // Just in time: whether w's recent run times are steady, and when a task of it asks ahead.
  void steady(int64_t w, State& st) const {
    const double* v = &recent_[w * kRecent];
    const auto [lo, hi] = std::minmax_element(v, v + st.n_recent);
    st.steady = st.n_recent == kRecent && *hi <= (at_start_ ? kSteadySpread : kSpread) * *lo;
    st.jit_after = at_start_ ? 0.0 : std::max(0.0, *lo - 2 * c_.p.network_delay - kJitMargin);
    st.jit_until = *hi;
  }

  // Running tasks of w whose slot may ask ahead now: those armed; just in time (the gate open only
  // for steady run times), those armed that have not run past the longest recent run time.
  int64_t armed(int64_t w, const State& st) const {
    if (!jit_ || st.short_recent) return st.armed;
    int64_t n = 0;
    const Running* r = &running_[w * c_.p.slots];
    for (int32_t i = 0; i < c_.p.slots; ++i) n += r[i].job >= 0 && r[i].armed && c_.now - r[i].start <= st.jit_until;
    return n;
  }

  // The half rule (header comment) for the head of w's queue (which may be empty).
  template <class Host>
  bool half_allows(Host& host, int64_t w) {
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
    return 2 * (ahead + 1) <= queues_.queue(w).job_count(head.job_id) + ahead;
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

  double longest(int64_t w) const {
    const double* v = &recent_[w * kRecent];
    return *std::max_element(v, v + state_[w].n_recent);
  }

  double median(int64_t w) const {
    const State& st = state_[w];
    double v[kRecent];
    std::copy(&recent_[w * kRecent], &recent_[w * kRecent] + st.n_recent, v);
    std::nth_element(v, v + st.n_recent / 2, v + st.n_recent);
    return v[st.n_recent / 2];
  }

  Cluster& c_;
  WorkerQueues& queues_;
  bool on_;
  double after_;
  int32_t depth_;
  bool gate_;
  bool jit_;  // just in time or steady (header comment): the gate opens for steady run times
  bool at_start_;  // ... and a running task asks ahead at its start (steady), not just before its end (jit)
  int32_t ask_cap_ = 0;  // requests in flight per worker at most: (depth + 1) x slots
  std::vector<State> state_;
  std::vector<Ask> asks_;     // per worker ask_cap_: the requests in flight, oldest first
  std::vector<Bound> bound_;  // per worker depth x slots
  std::vector<Running> running_;  // per worker `slots`
  std::vector<double> recent_;    // per worker kRecent run times (keeps_recent())
};

}  // namespace sim
}  // namespace sparrow
