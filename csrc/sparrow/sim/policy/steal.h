// WorkStealing: Hawk-style randomized work stealing between the workers of the sparrow policy
// (policy sparrow_steal), every decision made by the kernel sparrow/steal.h.
//
// Protocol, four one-way hops (each network_delay), at most one attempt in flight per worker:
//   1. a worker with a free slot and an empty queue (after a task ends or an empty Reply)
//      sends StealProbe to steal_victims random peers (choose_victims); with steal_wait > 0 it
//      sends them that long later (a timer), if it is still idle then: the runtime's time to
//      start an attempt and the part of its steal round trips beyond four hops, measured by a
//      replayed run (experiment/steal_timing.py);
//   2. each peer answers its state: how many reservations wait for its slots (0 if it has a
//      free slot) and how long the task that took its slot last has run (StealAnswer);
//   3. the thief picks the peer queued behind the longest-running task and how many to take
//      (choose_steal), and sends it StealTake; no peer worth it ends the attempt (where the
//      kernel needs no tie-break draw, choose_steal_without_draws decides at step 2, on the
//      same answers, and the Answer carries that choice alone: the same decisions, no payload);
//   4. the victim gives up to that many from the head of its queue (take_reservations; the
//      reservations of constrained jobs stay), in one Stolen message, maybe none by then.
// The thief queues what it gets (SparrowPolicy::accept). A failed attempt is not retried until
// the worker is idle again, so an idle cluster sends at most one attempt per task; a worker that
// became idle again while its attempt was in flight (a task ended, an empty Reply) attempts once
// more when it ends, as the runtime's stealer does (services/steal.py). As in the runtime
// (services/steal_logic.py), a stolen reservation is never stolen again: it stops a take at the
// head of the thief's queue, and a probe's answer does not count it as stealable. Stealing
// draws from its own Rng (spawned after the schedulers'), so the plain sparrow policy's
// decisions are the same with or without this unit compiled in. Its per-worker words (the
// attempt in flight, the stolen reservations held) are in the worker's record (worker_state.h),
// the line a probe reads anyway.
//
// With a steal script (steal_script.h: a run's own attempts), an attempt probes the victims of the run's
// attempt matched to it, and draws them only when none is (Counters::steal_replayed counts the replayed).
//
// StealKeys: a reservation in a queue is keyed by its job id (>= 0) at the worker it was placed
// at; a stolen one by -(job * n_workers + origin) - 1, which keeps the worker whose reservation
// the scheduler's TaskTable will consume (GetTask names it), so n_jobs * n_workers < 2^62.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/rng.h"
#include "sparrow/sim/cluster.h"
#include "sparrow/sim/policy/steal_script.h"
#include "sparrow/sim/worker_queues.h"
#include "sparrow/steal.h"

namespace sparrow {
namespace sim {

struct StealKeys {
  int64_t n_workers = 1;
  int64_t job(int64_t key) const { return key >= 0 ? key : (-key - 1) / n_workers; }
  int64_t origin(int64_t key, int64_t at) const { return key >= 0 ? at : (-key - 1) % n_workers; }
  int64_t stolen(int64_t job, int64_t origin) const { return -(job * n_workers + origin) - 1; }
};

class WorkStealing {
 public:
  static constexpr int32_t kProbe = 16, kAnswer = 17, kTake = 18, kStolen = 19;

  WorkStealing(Cluster& c, WorkerQueues& queues)
      : c_(c),
        queues_(queues),
        on_(c.p.policy == PlacementPolicy::SparrowSteal || c.p.policy == PlacementPolicy::SparrowStealPipelined),
        rng_(c.spawn()),
        script_(c.p) {
    if (!on_) {
      if (script_.active()) throw std::invalid_argument("a steal script needs a stealing policy");
      return;
    }
    config_.victims = c.p.steal_victims;
    config_.max_take = c.p.steal_max_take;
    config_.min_blocked = c.p.steal_min_blocked;
    check_steal_config(config_);
    if (!(c.p.steal_wait >= 0) || !std::isfinite(c.p.steal_wait))
      throw std::invalid_argument("steal_wait must be finite and >= 0");
    const int64_t jobs = c.workload.n_jobs();
    if (jobs > 0 && c.p.n_workers > (int64_t{1} << 62) / jobs)
      throw std::invalid_argument("sparrow_steal: n_jobs * n_workers must be < 2**62");
    keys_of_.n_workers = c.p.n_workers;
    const size_t victims = static_cast<size_t>(victims_count(c.p.n_workers, 0, config_.victims));  // for every thief
    victims_.resize(victims);
    const size_t most = std::max(victims, static_cast<size_t>(script_.max_victims()));
    stealable_.resize(most);
    blocked_.resize(most);
  }

  const StealKeys& keys() const { return keys_of_; }

  // Worker w may have become idle: a free slot, nothing queued, no attempt in flight.
  void if_idle(int64_t w) {
    if (!on_ || c_.free[w] == 0 || queues_.queued(w) != 0) return;
    uint8_t& attempting = c_.workers[w].attempting;
    if (attempting) {
      attempting = 2;  // try again once this attempt ends
      return;
    }
    if (c_.p.n_workers < 2) return;
    attempting = 1;
    if (c_.p.steal_wait > 0) {
      c_.heap.push(c_.now + c_.p.steal_wait, kTimerJob, static_cast<int32_t>(w), -1);
      return;
    }
    probe(w);
  }

  // A steal_wait timer (a completion of job kTimerJob) fired: w attempts if it is still idle.
  void timer(const Completion& done) {
    const int64_t w = done.worker;
    c_.now = done.time;
    if (c_.free[w] == 0 || queues_.queued(w) != 0) {
      attempt_ended(w);
      return;
    }
    probe(w);
  }

  static constexpr int64_t kTimerJob = -1;  // the job of a steal_wait timer (pipelining's are >= 0)

  // A reservation keyed `key` was queued at w, or left w's queue to ask for its task: a stolen
  // one (key < 0, only with stealing on) is counted.
  void queued(int64_t w, int64_t key) {
    if (key < 0) ++c_.workers[w].borrowed;
  }
  void dequeued(int64_t w, int64_t key) {
    if (key < 0) --c_.workers[w].borrowed;
  }

  // A hint for c.msgs[k], one of its messages still in flight (SparrowPolicy::prefetch): the
  // records (and queues) its handler reads.
  void prefetch(size_t k) const {
    const Msg& m = c_.msgs[k];
    switch (m.kind) {
      case kProbe:
        for (int64_t v : c_.payload_ahead(k)) queues_.prefetch_state(v);
        break;
      case kAnswer:
        queues_.prefetch_state(m.worker);
        break;
      case kTake:
        queues_.prefetch(m.job);
        break;
      case kStolen:
        queues_.prefetch(m.worker);
        if (m.task == 1) c_.pool.prefetch(keys_of_.job(m.job));
        break;
    }
  }

  template <class Host>
  void deliver(const Msg& m, Host& host) {
    switch (m.kind) {
      case kProbe:
        on_probe(m);
        break;
      case kAnswer:
        on_answer(m);
        break;
      case kTake:
        on_take(m);
        break;
      case kStolen:  // one key rides in m.job (m.task = 1), more in the payload
        if (m.task == 1) host.accept(m.worker, m.job);
        for (int64_t key : c_.words) host.accept(m.worker, key);
        attempt_ended(m.worker);
        break;
      default:
        throw std::logic_error("simulator: sparrow got a message of kind " + std::to_string(m.kind));
    }
  }

 private:
  // w's attempt sends its probes now.
  void probe(int64_t w) {
    ++c_.out.counters.steal_attempts;
    if (script_.active() && replay(w)) return;
    choose_victims_unchecked(rng_, c_.p.n_workers, w, static_cast<int64_t>(victims_.size()), victims_.data());
    c_.send(kProbe, -1, static_cast<int32_t>(w), -1, 0.0, 0, &victims_);
  }

  // w's attempt probes the victims of its scripted attempt, if one is matched to it.
  bool replay(int64_t w) {
    int64_t count = 0;
    const int64_t* victims = script_.match(w, c_.now, count);
    if (victims == nullptr) return false;
    ++c_.out.counters.steal_replayed;
    scripted_.assign(victims, victims + count);
    c_.send(kProbe, -1, static_cast<int32_t>(w), -1, 0.0, 0, &scripted_);
    return true;
  }

  // At the victims (the payload): each one's state, how many reservations wait for its slots
  // (0 if it has a free slot; stolen ones not counted) and how long it has been blocked. Where
  // the kernel's choice needs no tie-break draw it is made here, on the same answers, and the
  // Answer carries it alone (m.job the victim, -1 none; m.task how many); else the Answer
  // carries the victims' ids, then their counts, then their blocked times (a double's bits) and
  // the thief decides.
  void on_probe(const Msg& m) {
    const Words& victims = c_.words;
    for (int64_t v : victims) queues_.prefetch_state(v);  // the victims' misses overlap
    const size_t n = victims.size();
    auto answer = [this, &victims](int64_t i, int64_t& stealable, double& blocked) {
      const WorkerState& s = c_.workers[victims[static_cast<size_t>(i)]];
      blocked = c_.now - s.granted_at;
      stealable = static_cast<int64_t>(s.queued - s.borrowed) * (s.free == 0);  // branch-free
    };
    StealChoice choice;
    if (choose_steal_without_draws(answer, static_cast<int64_t>(n), config_, choice)) {
      const int64_t victim = choice.victim < 0 ? -1 : victims[static_cast<size_t>(choice.victim)];
      c_.send(kAnswer, victim, m.worker, choice.take, 0.0);
      return;
    }
    int64_t* stealable = stealable_.data();  // a tie: the thief draws, on all the answers
    double* blocked = blocked_.data();
    for (size_t i = 0; i < n; ++i) answer(static_cast<int64_t>(i), stealable[i], blocked[i]);
    answer_.resize(3 * n);
    std::memcpy(answer_.data(), victims.data(), n * sizeof(int64_t));
    std::memcpy(answer_.data() + n, stealable, n * sizeof(int64_t));
    std::memcpy(answer_.data() + 2 * n, blocked, n * sizeof(double));
    c_.send(kAnswer, -1, m.worker, -1, 0.0, 0, &answer_);
  }

  // At the thief: the choice made at the victims, or the kernel's (with its tie-break draw).
  void on_answer(const Msg& m) {
    int64_t victim = m.job, take = m.task;
    if (!c_.words.empty()) {
      const size_t n = c_.words.size() / 3;
      std::memcpy(blocked_.data(), c_.words.data() + 2 * n, n * sizeof(double));
      const StealChoice choice = choose_steal(rng_, c_.words.data() + n, blocked_.data(), static_cast<int64_t>(n), config_);
      victim = choice.victim < 0 ? -1 : c_.words[static_cast<size_t>(choice.victim)];
      take = choice.take;
    }
    if (victim < 0) {
      attempt_ended(m.worker);
      return;
    }
    c_.send(kTake, victim, m.worker, take, 0.0);
  }

  // At the victim (m.job): up to m.task reservations of unconstrained jobs from its queue's head.
  void on_take(const Msg& m) {
    const int64_t v = m.job;
    taken_.clear();
    if (c_.free[v] == 0) {
      auto movable = [this](const Reservation& r) {
        if (r.job_id < 0) return false;  // stolen here: pinned
        const Job& job = c_.pool.get(r.job_id);
        return job.job_candidates.empty() && !job.has_task_constraints();
      };
      take_reservations(queues_.queue(v), m.task, movable, taken_);
    }
    queues_.taken(v, static_cast<int64_t>(taken_.size()));
    keys_.clear();
    for (const Reservation& r : taken_) keys_.push_back(keys_of_.stolen(r.job_id, v));
    if (!keys_.empty()) {
      ++c_.out.counters.steals;
      c_.out.counters.stolen += static_cast<int64_t>(keys_.size());
    }
    if (keys_.size() <= 1) {
      c_.send(kStolen, keys_.empty() ? 0 : keys_[0], m.worker, static_cast<int64_t>(keys_.size()), 0.0);
    } else {
      c_.send(kStolen, -1, m.worker, -1, 0.0, 0, &keys_);
    }
  }

  // w's attempt is over; if w became idle again meanwhile, it attempts once more.
  void attempt_ended(int64_t w) {
    uint8_t& attempting = c_.workers[w].attempting;
    const bool again = attempting == 2;
    attempting = 0;
    if (again) if_idle(w);
  }

  Cluster& c_;
  WorkerQueues& queues_;
  bool on_;
  Rng rng_;
  StealScript script_;
  StealConfig config_;
  StealKeys keys_of_;
  std::vector<int64_t> victims_, scripted_, stealable_, answer_, keys_;  // scratch
  std::vector<double> blocked_;
  std::vector<Reservation> taken_;
};

}  // namespace sim
}  // namespace sparrow
