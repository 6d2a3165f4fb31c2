// Simulator: a discrete-event simulation of a Sparrow cluster that makes every decision with
// the runtime's kernels (sparrow/rng.h, sampling.h, reservation_queue.h, task_table.h).
//
// Model. n workers with s slots each; a ReservationQueue per worker (fifo, priority or fair
// between users) holds what waits for a slot. Jobs come from a Workload (workload.h) and are
// spread round-robin over independent schedulers. Every message takes the same one-way
// network delay, so messages are delivered in send order from a FIFO (sparrow/ring.h); task
// completions come from a heap (event_heap.h). A job reaches its scheduler submit_delay after
// it arrives, and a trace job that waits for others (dependencies) only once they finished and
// their results reached the client (result_delay later); such later releases wait in a small
// heap. Each task holds its slot launch_overhead before its duration starts. Ties in time:
// messages, then completions, then releases, then the next arrival.
//
// Policies (the scheduler side):
//   random      each task to a uniformly random (candidate) worker: arrival -> tasks at workers.
//   per_task    ceil(d) probes per task; the workers answer their load (running + queued), the
//   batch       scheduler places each task on its least loaded probe / the m least loaded of
//               ceil(d*m) probes (least_loaded.h): probes -> answers -> tasks, three hops.
//   sparrow     batch sampling + late binding: probes put reservations in worker queues; a
//               reservation at the head of a queue with a free slot holds the slot and asks
//               its scheduler for a task (TaskTable::get_task); the answer launches a task or
//               frees the slot. With cancellation, the scheduler cancels the job's leftover
//               reservations once all its tasks are launched.
//   omniscient  one infinitely fast central queue: a task starts at once on any free slot
//               its constraints allow, otherwise waits centrally (constrained tasks first, in
//               FIFO order, then the central ReservationQueue) for the next freed slot. No
//               network delay.
// A task's queue wait runs from the moment the task (early binding) or the reservation that
// launched it (sparrow) reached its worker until a slot was assigned to it; omniscient: from
// release to start. A job's response runs from its arrival to its last task's result reaching
// the client. Memory: O(workers + jobs in flight + events in flight) plus the outputs (plus,
// with dependencies, O(trace jobs + dependencies)).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sparrow/job_probes.h"
#include "sparrow/reservation_queue.h"
#include "sparrow/ring.h"
#include "sparrow/rng.h"
#include "sparrow/sampling.h"
#include "sparrow/sim/event_heap.h"
#include "sparrow/sim/idle_pool.h"
#include "sparrow/sim/job_pool.h"
#include "sparrow/sim/least_loaded.h"
#include "sparrow/sim/params.h"
#include "sparrow/sim/workload.h"
#include "sparrow/task_table.h"

namespace sparrow {
namespace sim {

class Simulator {
 public:
  Simulator(const SimParams& p, SimOutput& out)
      : p_(check(p)),
        out_(out),
        base_rng_(p.seed),
        workload_(p, base_rng_.spawn()),
        rng_(base_rng_.spawn()),
        free_(static_cast<size_t>(p.n_workers), p.slots),
        bypass_(p.queue_policy != Policy::Fair),
        tables_(static_cast<size_t>(p.n_schedulers)),
        central_(p.queue_policy),
        idle_(p.policy == PlacementPolicy::Omniscient ? p.n_workers : 0),
        stride_(std::max<int64_t>(1, workload_.max_tasks_per_job())) {
    if (p.n_trace_jobs > 0 && p.trace_parent_offsets != nullptr) index_children();
    if (p.policy == PlacementPolicy::Omniscient) {
      for (int64_t w = 0; w < p.n_workers; ++w) idle_.add(static_cast<int32_t>(w));
      set_weights(central_);
    } else {
      queued_.assign(static_cast<size_t>(p.n_workers), 0);
      queues_.reserve(static_cast<size_t>(p.n_workers));
      for (int64_t w = 0; w < p.n_workers; ++w) {
        queues_.emplace_back(p.queue_policy);
        set_weights(queues_.back());
      }
    }
  }

  void run() {
    for (;;) {
      const double t_msg = msgs_.empty() ? Workload::kNever : msgs_.front().time;
      const double t_done = heap_.empty() ? Workload::kNever : heap_.top_time();
      const double t_job = std::min(t_release_, workload_.next_arrival());  // a release or an arrival
      if (t_msg == Workload::kNever && t_done == Workload::kNever && t_job == Workload::kNever) break;
      if (++out_.counters.events % kPollEvents == 0 && p_.should_stop != nullptr && p_.should_stop(p_.should_stop_arg)) {
        out_.counters.interrupted = true;
        return;
      }
      if (t_msg <= t_done && t_msg <= t_job) {
        deliver(msgs_.pop());
      } else if (t_done <= t_job) {
        complete(heap_.pop());
      } else if (t_release_ <= workload_.next_arrival()) {
        release_next();
      } else {
        arrive();
      }
    }
    out_.counters.end_time = now_;
    if (pool_.live() != 0) throw std::logic_error("simulator: " + std::to_string(pool_.live()) + " jobs never released");
  }

 private:
  enum class Kind : int32_t { Reserve, Probe, Answers, Tasks, GetTask, Reply, Cancel };
  struct Msg {
    double time;
    int64_t job;
    int64_t task;
    double aux;  // GetTask / Reply: when the slot was granted
    int32_t worker;
    int32_t user;
    Kind kind;
    uint32_t n_payload;  // int64 words that follow in payload_, in send order
  };

  static const SimParams& check(const SimParams& p) {
    auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
    if (p.n_workers <= 0) fail("n_workers must be positive");
    if (p.n_workers > INT32_MAX) fail("n_workers must be < 2**31");
    if (p.slots <= 0) fail("slots must be positive");
    if (p.n_schedulers <= 0) fail("n_schedulers must be positive");
    auto check_delay = [&fail](double seconds, const char* name) {
      if (!(seconds >= 0) || !std::isfinite(seconds)) fail(std::string(name) + " must be finite and >= 0");
    };
    check_delay(p.network_delay, "network_delay");
    check_delay(p.launch_overhead, "launch_overhead");
    check_delay(p.submit_delay, "submit_delay");
    check_delay(p.result_delay, "result_delay");
    if (!valid_probe_ratio(p.probe_ratio)) fail("probe_ratio must be a finite number >= 1");
    if (p.user_weight.size() != p.user_demand.size()) fail("user_weight and user_demand must have one entry per user");
    if (p.n_trace_jobs == 0) {
      if (p.n_jobs < 0) fail("n_jobs must be >= 0");
      if (p.tasks_per_job <= 0) fail("tasks_per_job must be positive");
      if (!(p.mean_duration > 0) || !std::isfinite(p.mean_duration)) fail("mean_duration must be positive");
    }
    if (p.task_candidates <= 0) fail("task_candidates must be positive");
    return p;
  }

  // Weights matter to fair queues only; the others are left without per-user state.
  void set_weights(ReservationQueue& q) const {
    if (q.policy() != Policy::Fair) return;
    for (size_t u = 0; u < p_.user_weight.size(); ++u) q.set_weight(static_cast<int32_t>(u), p_.user_weight[u]);
  }

  // ---- messages ----

  void send(Kind kind, int64_t job, int32_t worker, int64_t task, double aux, int32_t user = 0,
            const std::vector<int64_t>* payload = nullptr) {
    Msg m{now_ + p_.network_delay, job, task, aux, worker, user, kind, 0};
    if (payload != nullptr) {
      m.n_payload = static_cast<uint32_t>(payload->size());
      payload_.push_many(payload->data(), payload->size());
    }
    msgs_.push(m);
  }

  void deliver(const Msg& m) {
    now_ = m.time;
    ++out_.counters.messages;
    words_.resize(m.n_payload);
    payload_.pop_many(words_.data(), m.n_payload);
    switch (m.kind) {
      case Kind::Reserve:
        on_reserve(m.job);
        break;
      case Kind::Probe:
        on_probe(m.job);
        break;
      case Kind::Answers:
        on_answers(m.job);
        break;
      case Kind::Tasks:
        on_tasks(m.job);
        break;
      case Kind::GetTask:
        on_get_task(m);
        break;
      case Kind::Reply:
        on_reply(m);
        break;
      case Kind::Cancel:
        on_cancel(m.job);
        break;
    }
  }

  // ---- arrivals and releases: then the scheduler's first decision ----

  void arrive() {
    now_ = workload_.next_arrival();
    const int64_t id = next_id_++;
    Job& job = pool_.acquire(id);
    workload_.next(job);
    job.scheduler = static_cast<int32_t>(id % p_.n_schedulers);
    if (pool_.live() > out_.counters.max_jobs_in_flight) out_.counters.max_jobs_in_flight = pool_.live();
    out_.job_arrival[id] = job.arrival;
    out_.job_user[id] = job.user;
    out_.job_priority[id] = job.priority;
    double ideal = 0.0;
    for (double d : job.durations) ideal = d > ideal ? d : ideal;
    out_.job_ideal[id] = ideal;
    job.release = job.arrival + p_.submit_delay;
    job.waiting = 0;
    if (!child_offsets_.empty()) wait_for_parents(job);
    if (job.waiting > 0) return;  // its last parent to finish releases it
    if (job.release <= now_) {
      dispatch(job);
    } else {
      schedule_release(job);
    }
  }

  // Dependencies: job waits for its parents that have not finished; the others delay its release.
  void wait_for_parents(Job& job) {
    for (int64_t i = p_.trace_parent_offsets[job.id]; i < p_.trace_parent_offsets[job.id + 1]; ++i) {
      const double finished = finished_at_[p_.trace_parents[i]];
      if (finished < 0) {
        ++job.waiting;
      } else {
        job.release = std::max(job.release, finished + p_.result_delay + p_.submit_delay);
      }
    }
  }

  void schedule_release(const Job& job) {
    releases_.emplace_back(job.release, job.id);
    std::push_heap(releases_.begin(), releases_.end(), std::greater<>());
    t_release_ = releases_.front().first;
  }

  void release_next() {
    std::pop_heap(releases_.begin(), releases_.end(), std::greater<>());
    const auto [time, id] = releases_.back();
    releases_.pop_back();
    t_release_ = releases_.empty() ? Workload::kNever : releases_.front().first;
    now_ = time;
    dispatch(pool_.get(id));
  }

  // The job reaches its scheduler now: the policy's first decision.
  void dispatch(Job& job) {
    if (!job.job_candidates.empty() && job.has_task_constraints()) narrow_task_candidates(job);
    switch (p_.policy) {
      case PlacementPolicy::Random:
        place_random(job);
        break;
      case PlacementPolicy::PerTask:
        probe_per_task(job);
        break;
      case PlacementPolicy::Batch:
        probe_batch(job);
        break;
      case PlacementPolicy::Sparrow:
        reserve_sparrow(job);
        break;
      case PlacementPolicy::Omniscient:
        place_omniscient(job);
        break;
    }
  }

  // The job's request for probes (job_probes.h): its constraints as they stand.
  JobRequest request(const Job& job) const {
    JobRequest r;
    r.n_workers = p_.n_workers;
    if (!job.job_candidates.empty()) {
      r.candidates = job.job_candidates.data();
      r.n_candidates = static_cast<int64_t>(job.job_candidates.size());
    }
    r.n_tasks = job.n_tasks;
    if (job.has_task_constraints()) {
      r.task_candidates = job.task_candidates.data();
      r.task_offsets = job.task_candidate_offsets.data();
    }
    r.probe_ratio = p_.probe_ratio;
    return r;
  }

  // A job with both constraints: each constrained task keeps only its candidates that are also
  // the job's (the kernel's rule, candidates_within; the workload checked that none is left
  // without), so every policy places it where sample_job would probe.
  void narrow_task_candidates(Job& job) {
    if (candidates_within(request(job), narrowed_, narrowed_offsets_) != kFeasible)
      throw std::logic_error("simulator: job " + std::to_string(job.id) + " has a task that can run nowhere");
    job.task_candidates.swap(narrowed_);
    job.task_candidate_offsets.swap(narrowed_offsets_);
  }

  // Task t's candidate workers (its own, within the job's; else the job's), or count 0 for any
  // worker.
  const int64_t* candidates(const Job& job, int64_t t, int64_t& count) const {
    if (job.has_task_constraints()) {
      const int64_t lo = job.task_candidate_offsets[t];
      count = job.task_candidate_offsets[t + 1] - lo;
      if (count > 0) return job.task_candidates.data() + lo;
    }
    count = static_cast<int64_t>(job.job_candidates.size());
    return count > 0 ? job.job_candidates.data() : nullptr;
  }

  void place_random(Job& job) {
    job.dispatch = now_ + p_.network_delay;
    pairs_.clear();
    for (int64_t t = 0; t < job.n_tasks; ++t) {
      int64_t count;
      const int64_t* cand = candidates(job, t, count);
      const int64_t w = cand ? cand[rng_.below(static_cast<uint64_t>(count))]
                             : static_cast<int64_t>(rng_.below(static_cast<uint64_t>(p_.n_workers)));
      pairs_.push_back(w);
      pairs_.push_back(t);
    }
    send(Kind::Tasks, job.id, -1, -1, 0.0, 0, &pairs_);
  }

  // Batch sampling for `batch` and `sparrow` (the kernel's sample_job: a job constraint and
  // per-task constraints together): workers_ gets the probes, tags_ the task each was made for
  // (-1: any unconstrained task).
  void sample_batch_probes(const Job& job) {
    workers_.clear();
    tags_.clear();
    if (sample_job(rng_, request(job), workers_, tags_) != kFeasible)
      throw std::logic_error("simulator: job " + std::to_string(job.id) + " has a task that can run nowhere");
  }

  void probe_batch(Job& job) {
    sample_batch_probes(job);
    send_probes(job);
  }

  void probe_per_task(Job& job) {
    const int64_t d = probe_count(1, p_.probe_ratio);
    workers_.clear();
    tags_.clear();
    if (job.job_candidates.empty() && !job.has_task_constraints()) {
      sample_per_task(rng_, p_.n_workers, job.n_tasks, d, workers_);
      for (int64_t t = 0; t < job.n_tasks; ++t) tags_.insert(tags_.end(), static_cast<size_t>(d), t);
    } else {
      for (int64_t t = 0; t < job.n_tasks; ++t) {
        int64_t count;
        const int64_t* cand = candidates(job, t, count);
        if (cand) {
          sample_from(rng_, cand, count, d, workers_);
        } else {
          sample_workers(rng_, p_.n_workers, d, workers_);
        }
        tags_.insert(tags_.end(), static_cast<size_t>(d), t);
      }
    }
    send_probes(job);
  }

  void send_probes(Job& job) {
    pairs_.clear();
    for (size_t i = 0; i < workers_.size(); ++i) {
      pairs_.push_back(workers_[i]);
      pairs_.push_back(tags_[i]);
    }
    out_.counters.probes += static_cast<int64_t>(workers_.size());
    send(Kind::Probe, job.id, -1, -1, 0.0, 0, &pairs_);
  }

  void reserve_sparrow(Job& job) {
    sample_batch_probes(job);
    const bool tagged = job.has_task_constraints();
    TaskTable& table = tables_[job.scheduler];
    if (job.has_task_constraints()) {
      table.add_job(job.id, job.n_tasks, job.task_candidates.data(), job.task_candidate_offsets.data());
    } else {
      table.add_job(job.id, job.n_tasks);
    }
    const int64_t k = static_cast<int64_t>(workers_.size());
    table.reserve(job.id, workers_.data(), tagged ? tags_.data() : nullptr, k);
    job.in_table = true;
    job.live_reservations = k;
    job.dispatch = now_ + p_.network_delay;
    out_.counters.probes += k;
    send(Kind::Reserve, job.id, -1, -1, 0.0, 0, &workers_);
  }

  // ---- workers ----

  int64_t load(int64_t w) const { return (p_.slots - free_[w]) + queued_[w]; }

  // Queues an entry at worker w. A worker with a free slot has an empty queue (queues are
  // drained whenever a slot frees), so under fifo and priority the entry would be popped at
  // once: it skips the queue (same outcome, fewer cache misses). Fair queues see every
  // entry, since each pop charges the user. Returns whether the entry took a slot directly.
  bool enqueue(int64_t w, int64_t key, const Job& job) {
    if (free_[w] > 0 && bypass_) {
      --free_[w];
      return true;
    }
    queues_[w].push(key, job.user, job.priority);
    ++queued_[w];
    return false;
  }

  bool dequeue(int64_t w, Reservation& r) {
    if (free_[w] == 0 || queued_[w] == 0 || !queues_[w].pop(r)) return false;
    --free_[w];
    --queued_[w];
    return true;
  }

  // Starts task t of job on worker w (whose slot is already taken), granted at grant_time: it
  // holds the slot for the launch overhead, then for its duration.
  void start(int64_t w, Job& job, int64_t t, double grant_time) {
    const double wait = grant_time - job.dispatch;
    if (wait > job.max_wait) job.max_wait = wait;
    if (out_.task_wait != nullptr) out_.task_wait[job.task_offset + t] = wait;
    const double end = now_ + p_.launch_overhead + job.durations[t];
    heap_.push(end, job.id, static_cast<int32_t>(w), static_cast<int32_t>(t));
  }

  // Early binding: queued entries are tasks, numbered job * stride_ + task.
  void run_queued_tasks(int64_t w) {
    Reservation r;
    while (dequeue(w, r)) start(w, pool_.get(r.job_id / stride_), r.job_id % stride_, now_);
  }

  // Late binding: a reservation at the head with a free slot holds it and asks for a task.
  void run_reservations(int64_t w) {
    Reservation r;
    while (dequeue(w, r)) ask_for_task(w, r.job_id, r.user);
  }

  void ask_for_task(int64_t w, int64_t job_id, int32_t user) {
    ++out_.counters.get_task;
    send(Kind::GetTask, job_id, static_cast<int32_t>(w), -1, now_, user);
  }

  void on_probe(int64_t id) {
    pairs_.clear();
    for (size_t i = 0; i < words_.size(); i += 2) {
      pairs_.push_back(words_[i]);
      pairs_.push_back(words_[i + 1]);
      pairs_.push_back(load(words_[i]));
    }
    send(Kind::Answers, id, -1, -1, 0.0, 0, &pairs_);
  }

  void on_answers(int64_t id) {
    Job& job = pool_.get(id);
    answers_.clear();
    for (size_t i = 0; i < words_.size(); i += 3) answers_.push_back(ProbeAnswer{words_[i], words_[i + 1], words_[i + 2]});
    least_loaded_.place(rng_, answers_, job.n_tasks, chosen_);
    job.dispatch = now_ + p_.network_delay;  // the tasks' arrival (the Tasks message's time)
    pairs_.clear();
    for (int64_t t = 0; t < job.n_tasks; ++t) {
      pairs_.push_back(chosen_[t]);
      pairs_.push_back(t);
    }
    send(Kind::Tasks, id, -1, -1, 0.0, 0, &pairs_);
  }

  void on_tasks(int64_t id) {
    const Job& job = pool_.get(id);
    for (size_t i = 0; i < words_.size(); i += 2) {
      const int64_t w = words_[i];
      if (enqueue(w, id * stride_ + words_[i + 1], job)) {
        start(w, pool_.get(id), words_[i + 1], now_);
      } else {
        run_queued_tasks(w);
      }
    }
  }

  void on_reserve(int64_t id) {
    const Job& job = pool_.get(id);
    for (int64_t w : words_) {
      if (enqueue(w, id, job)) {
        ask_for_task(w, id, job.user);
      } else {
        run_reservations(w);
      }
    }
  }

  void on_reply(const Msg& m) {
    if (m.task >= 0) {
      start(m.worker, pool_.get(m.job), m.task, m.aux);
      return;
    }
    ++free_[m.worker];
    queues_[m.worker].refund(m.user);
    run_reservations(m.worker);
  }

  void on_cancel(int64_t id) {
    Job* job = pool_.find(id);
    for (int64_t w : words_) {
      if (queued_[w] == 0) continue;
      const int64_t removed = queues_[w].cancel(id);
      queued_[w] -= removed;
      out_.counters.cancelled += removed;
      if (job != nullptr) job->live_reservations -= removed;
    }
    if (job != nullptr) leave_table(*job);
  }

  // ---- the sparrow scheduler ----

  void on_get_task(const Msg& m) {
    Job& job = pool_.get(m.job);  // live: this request's reservation is counted in it
    TaskTable& table = tables_[job.scheduler];
    const int64_t t = table.get_task(job.id, m.worker);
    --job.live_reservations;
    if (t >= 0) {
      send(Kind::Reply, job.id, m.worker, t, m.aux);
      if (++job.launched == job.n_tasks && p_.cancellation) {
        cancel_.clear();
        table.workers_to_cancel(job.id, cancel_);
        if (!cancel_.empty()) {
          out_.counters.cancel_messages += static_cast<int64_t>(cancel_.size());
          send(Kind::Cancel, job.id, -1, -1, 0.0, 0, &cancel_);
        }
      }
    } else {
      ++out_.counters.get_task_empty;
      send(Kind::Reply, job.id, m.worker, -1, m.aux, m.user);
    }
    leave_table(job);
  }

  // Once every task is launched and no reservation can still ask, the scheduler forgets the job.
  void leave_table(Job& job) {
    if (!job.in_table || job.launched < job.n_tasks || job.live_reservations > 0) return;
    if (job.live_reservations < 0) throw std::logic_error("simulator: negative reservation count");
    tables_[job.scheduler].remove_job(job.id);
    job.in_table = false;
    release_if_done(job);
  }

  // ---- omniscient ----

  void take_slot(int64_t w) {
    if (--free_[w] == 0) idle_.remove(static_cast<int32_t>(w));
  }

  void place_omniscient(Job& job) {
    job.dispatch = now_;
    for (int64_t t = 0; t < job.n_tasks; ++t) {
      int64_t count;
      const int64_t* cand = candidates(job, t, count);
      if (cand == nullptr) {
        if (idle_.empty()) {
          central_.push(job.id * stride_ + t, job.user, job.priority);
        } else {
          const int32_t w = idle_.any();
          take_slot(w);
          start(w, job, t, now_);
        }
        continue;
      }
      const int64_t first = static_cast<int64_t>(rng_.below(static_cast<uint64_t>(count)));
      int64_t w = -1;
      for (int64_t i = 0; i < count && w < 0; ++i)
        if (free_[cand[(first + i) % count]] > 0) w = cand[(first + i) % count];
      if (w < 0) {
        waiting_constrained_.push_back(job.id * stride_ + t);
      } else {
        take_slot(w);
        start(w, job, t, now_);
      }
    }
  }

  // A slot of w just freed: the oldest waiting constrained task that may run there, else the
  // central queue's next task.
  void refill_omniscient(int64_t w) {
    if (free_[w] == 1) idle_.add(static_cast<int32_t>(w));
    for (size_t i = 0; i < waiting_constrained_.size(); ++i) {
      const int64_t g = waiting_constrained_[i];
      Job& job = pool_.get(g / stride_);
      int64_t count;
      const int64_t* cand = candidates(job, g % stride_, count);
      for (int64_t c = 0; c < count; ++c) {
        if (cand[c] != w) continue;
        waiting_constrained_.erase(waiting_constrained_.begin() + static_cast<std::ptrdiff_t>(i));
        take_slot(w);
        start(w, job, g % stride_, now_);
        return;
      }
    }
    Reservation r;
    if (central_.pop(r)) {
      take_slot(w);
      start(w, pool_.get(r.job_id / stride_), r.job_id % stride_, now_);
    }
  }

  // ---- completions ----

  void complete(const Completion& c) {
    now_ = c.time;
    Job& job = pool_.get(c.job);
    ++free_[c.worker];
    if (++job.done == job.n_tasks) finish(job);
    switch (p_.policy) {
      case PlacementPolicy::Sparrow:
        run_reservations(c.worker);
        break;
      case PlacementPolicy::Omniscient:
        refill_omniscient(c.worker);
        break;
      default:
        run_queued_tasks(c.worker);
        break;
    }
  }

  void finish(Job& job) {
    out_.job_response[job.id] = now_ + p_.result_delay - job.arrival;
    out_.job_wait[job.id] = job.max_wait;
    if (!child_offsets_.empty()) release_children(job.id);
    release_if_done(job);
  }

  // ---- dependencies (trace jobs that wait for earlier ones) ----

  // children_[child_offsets_[j] ..) lists the jobs that wait for job j.
  void index_children() {
    const int64_t n = p_.n_trace_jobs;
    const int64_t* parents = p_.trace_parents;
    const int64_t* offsets = p_.trace_parent_offsets;
    child_offsets_.assign(static_cast<size_t>(n + 1), 0);
    for (int64_t i = offsets[0]; i < offsets[n]; ++i) ++child_offsets_[parents[i] + 1];
    for (int64_t j = 0; j < n; ++j) child_offsets_[j + 1] += child_offsets_[j];
    children_.resize(static_cast<size_t>(offsets[n] - offsets[0]));
    std::vector<int64_t> next(child_offsets_.begin(), child_offsets_.end() - 1);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = offsets[j]; i < offsets[j + 1]; ++i) children_[next[parents[i]]++] = j;
    finished_at_.assign(static_cast<size_t>(n), -1.0);
  }

  // Job id finished now: the children that arrived already and waited only for it are released
  // once its result reached the client and they were submitted.
  void release_children(int64_t id) {
    finished_at_[id] = now_;
    for (int64_t i = child_offsets_[id]; i < child_offsets_[id + 1]; ++i) {
      const int64_t child = children_[i];
      if (child >= next_id_) continue;  // not arrived yet: it will see finished_at_
      Job& c = pool_.get(child);
      c.release = std::max(c.release, now_ + p_.result_delay + p_.submit_delay);
      if (--c.waiting == 0) schedule_release(c);
    }
  }

  void release_if_done(Job& job) {
    if (job.done == job.n_tasks && !job.in_table) pool_.release(job);
  }

  const SimParams& p_;
  SimOutput& out_;
  Rng base_rng_;
  Workload workload_;
  Rng rng_;  // the schedulers' decisions
  double now_ = 0.0;
  int64_t next_id_ = 0;

  std::vector<int32_t> free_;  // free slots per worker
  bool bypass_;                // fifo / priority: see enqueue()
  std::vector<ReservationQueue> queues_;
  std::vector<int32_t> queued_;  // live entries per worker queue (mirrors queues_[w].size())
  std::vector<TaskTable> tables_;
  ReservationQueue central_;  // omniscient
  IdlePool idle_;             // omniscient
  std::vector<int64_t> waiting_constrained_;  // omniscient
  int64_t stride_;

  JobPool pool_;
  std::vector<std::pair<double, int64_t>> releases_;  // (time, job): a min-heap by std::greater
  double t_release_ = Workload::kNever;               // the earliest release, kNever if none
  std::vector<int64_t> child_offsets_, children_;     // dependencies only
  std::vector<double> finished_at_;                   // per trace job, -1 until it finishes
  Ring<Msg> msgs_;
  Ring<int64_t> payload_;
  CompletionHeap heap_;
  LeastLoaded least_loaded_;

  // scratch
  std::vector<int64_t> words_, pairs_, workers_, tags_, cancel_, chosen_, narrowed_, narrowed_offsets_;
  std::vector<ProbeAnswer> answers_;
};

// Runs one simulation; throws std::invalid_argument for a broken configuration.
inline void simulate(const SimParams& params, SimOutput& out) { Simulator(params, out).run(); }

}  // namespace sim
}  // namespace sparrow
