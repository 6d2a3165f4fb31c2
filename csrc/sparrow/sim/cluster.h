// Cluster: the state and mechanics every placement policy of the simulator shares (simulator.h
// runs the event loop; policy/*.h make the decisions).
//
// Held here: the parameters and outputs, the schedulers' Rng, the workload, simulated time, the
// jobs in flight (JobPool), one record per worker (its free slots, and the words the queueing
// policies keep per worker: worker_state.h), the network (one FIFO of messages with a constant
// one-way delay, sparrow/ring.h, payloads in a second FIFO of int64 words, payloads.h),
// the task completions (event_heap.h) and the releases of jobs that wait (submit delay,
// dependencies).
// A message's kind is the policy's own small number: the cluster only carries it. Policy
// state (worker queues, task tables, the omniscient central queue, stealing) lives in the
// policies, never here, but for the few words per worker in the records (kept there so a
// worker is one cache line).
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
#include "sparrow/ring.h"
#include "sparrow/rng.h"
#include "sparrow/sampling.h"
#include "sparrow/sim/event_heap.h"
#include "sparrow/sim/job_pool.h"
#include "sparrow/sim/params.h"
#include "sparrow/sim/payloads.h"
#include "sparrow/sim/worker_state.h"
#include "sparrow/sim/workload.h"

namespace sparrow {
namespace sim {

struct Msg {
  double time;
  int64_t job;
  int64_t task;  // Reply: the task (-1: none); GetTask: the worker the reservation was placed at
  double aux;    // GetTask / Reply: when the slot was granted
  int32_t worker;
  int32_t user;
  int32_t kind;        // the policy's message kind
  uint32_t n_payload;  // int64 words that follow in payload, in send order
};

class Cluster {
 public:
  Cluster(const SimParams& params, SimOutput& output)
      : p(check(params)),
        out(output),
        base_rng_(params.seed),
        workload(params, base_rng_.spawn()),
        rng(base_rng_.spawn()),
        free(workers, static_cast<size_t>(params.n_workers), params.slots,
             params.policy != PlacementPolicy::Omniscient),
        stride(std::max<int64_t>(1, workload.max_tasks_per_job())) {
    if (p.n_trace_jobs > 0 && p.trace_parent_offsets != nullptr) index_children();
  }

  const SimParams& p;
  SimOutput& out;

 private:
  Rng base_rng_;  // seeds the workload's and the schedulers' generators, in that order

 public:
  Workload workload;
  Rng rng;  // the schedulers' (and workers') decisions
  double now = 0.0;
  int64_t next_id = 0;
  std::vector<WorkerState> workers;  // one record per worker (worker_state.h; empty for omniscient)
  FreeSlots free;                    // free slots per worker, in the records (omniscient: apart)
  int64_t stride;             // early binding's queue keys: job * stride + task
  JobPool pool;
  Ring<Msg> msgs;
  CompletionHeap heap;
  Words words;  // the payload of the message being delivered (payloads.h: valid until the next receive)
  double t_release = Workload::kNever;  // the earliest release, kNever if none
  Completion last_done{};               // the task that ended last (complete)

  // A generator of its own for a policy unit (drawn after the workload's and the schedulers').
  Rng spawn() { return base_rng_.spawn(); }

  // ---- messages ----

  void send(int32_t kind, int64_t job, int32_t worker, int64_t task, double aux, int32_t user = 0) {
    msgs.push(Msg{arrival_of_send(), job, task, aux, worker, user, kind, 0});
  }

  // The same with a payload of int64 words (copied).
  void send(int32_t kind, int64_t job, int32_t worker, int64_t task, double aux, int32_t user,
            const std::vector<int64_t>* payload) {
    payload_.push(payload->data(), payload->size());
    msgs.push(Msg{now + p.network_delay, job, task, aux, worker, user, kind, static_cast<uint32_t>(payload->size())});
  }

  // The next message (the caller checked msgs is not empty), its payload in `words`.
  Msg receive() {
    const Msg m = msgs.pop();
    now = m.time;
    ++out.counters.messages;
    words = payload_.next(m.n_payload);
    return m;
  }

  // The payload of msgs[k], a message not yet received, as a view (for prefetch hints: valid
  // until the next send or receive; none if it wraps around the end of the ring).
  Words payload_ahead(size_t k) const {
    size_t skip = 0;
    for (size_t j = 0; j < k; ++j) skip += msgs[j].n_payload;
    return payload_.ahead(skip, msgs[k].n_payload);
  }

  // ---- arrivals and releases ----

  // The next job arrives now; returns it if it reaches its scheduler now, else nullptr (it is
  // released later: release_next).
  Job* arrive() {
    now = workload.next_arrival();
    const int64_t id = next_id++;
    Job& job = pool.acquire(id);
    workload.next(job);
    job.scheduler = static_cast<int32_t>(id % p.n_schedulers);
    if (pool.live() > out.counters.max_jobs_in_flight) out.counters.max_jobs_in_flight = pool.live();
    out.job_arrival[id] = job.arrival;
    out.job_user[id] = job.user;
    out.job_priority[id] = job.priority;
    double ideal = 0.0;
    for (double d : job.durations) ideal = d > ideal ? d : ideal;
    out.job_ideal[id] = ideal;
    job.release = job.arrival + p.submit_delay;
    job.waiting = 0;
    if (!child_offsets_.empty()) wait_for_parents(job);
    if (job.waiting > 0) return nullptr;  // its last parent to finish releases it
    if (job.release <= now) return prepare(job);
    schedule_release(job);
    return nullptr;
  }

  // The earliest waiting job reaches its scheduler now.
  Job& release_next() {
    std::pop_heap(releases_.begin(), releases_.end(), std::greater<>());
    const auto [time, id] = releases_.back();
    releases_.pop_back();
    t_release = releases_.empty() ? Workload::kNever : releases_.front().first;
    now = time;
    return *prepare(pool.get(id));
  }

  // ---- what policies ask of the cluster ----

  // The job's request for probes (job_probes.h): its constraints as they stand.
  JobRequest request(const Job& job) const {
    JobRequest r;
    r.n_workers = p.n_workers;
    if (!job.job_candidates.empty()) {
      r.candidates = job.job_candidates.data();
      r.n_candidates = static_cast<int64_t>(job.job_candidates.size());
    }
    r.n_tasks = job.n_tasks;
    if (job.has_task_constraints()) {
      r.task_candidates = job.task_candidates.data();
      r.task_offsets = job.task_candidate_offsets.data();
    }
    r.probe_ratio = p.probe_ratio;
    return r;
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

  // Batch sampling (the kernel's sample_job: a job constraint and per-task constraints
  // together): workers gets the probes, tags the task each was made for (-1: any unconstrained
  // task).
  void sample_batch_probes(const Job& job, std::vector<int64_t>& workers, std::vector<int64_t>& tags) {
    workers.clear();
    tags.clear();
    if (p.trace_probe_offsets != nullptr) {  // replay: the trace's placement, not a draw (params.h)
      workers.assign(p.trace_probes + p.trace_probe_offsets[job.id], p.trace_probes + p.trace_probe_offsets[job.id + 1]);
      tags.assign(workers.size(), -1);  // made for any task (a replayed trace has no constraints)
      return;
    }
    if (sample_job(rng, request(job), workers, tags) != kFeasible)
      throw std::logic_error("simulator: job " + std::to_string(job.id) + " has a task that can run nowhere");
  }

  // Starts task t of job on worker w (whose slot is already taken), granted at grant_time: it
  // holds the slot for the launch overhead, then for its duration.
  void start(int64_t w, Job& job, int64_t t, double grant_time) { start_at(now, w, job, t, grant_time); }

  // The same for a start at time `at` >= now (sparrow.h: a Reply's start, pushed when it is sent).
  void start_at(double at, int64_t w, Job& job, int64_t t, double grant_time) {
    const double wait = grant_time - job.dispatch;
    if (wait > job.max_wait) job.max_wait = wait;
    if (out.task_wait != nullptr) out.task_wait[job.task_offset + t] = wait;
    const double end = at + p.launch_overhead + job.durations[t];
    heap.push(end, job.id, static_cast<int32_t>(w), static_cast<int32_t>(t));
  }

  // The time a message sent now arrives (send's arithmetic).
  double arrival_of_send() const { return now + p.network_delay; }

  // A task ended now: its slot is free again; a job whose last task it was finishes.
  void complete(const Completion& c) {
    now = c.time;
    last_done = c;
    Job& job = pool.get(c.job);
    ++free[c.worker];
    if (++job.done == job.n_tasks) finish(job);
  }

  // The job leaves the pool once all its tasks are done and its scheduler has forgotten it.
  void release_if_done(Job& job) {
    if (job.done == job.n_tasks && !job.in_table) pool.release(job);
  }

 private:
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

  // A job with both constraints: each constrained task keeps only its candidates that are also
  // the job's (the kernel's rule, candidates_within; the workload checked that none is left
  // without), so every policy places it where sample_job would probe.
  Job* prepare(Job& job) {
    if (!job.job_candidates.empty() && job.has_task_constraints()) {
      if (candidates_within(request(job), narrowed_, narrowed_offsets_) != kFeasible)
        throw std::logic_error("simulator: job " + std::to_string(job.id) + " has a task that can run nowhere");
      job.task_candidates.swap(narrowed_);
      job.task_candidate_offsets.swap(narrowed_offsets_);
    }
    return &job;
  }

  // Dependencies: job waits for its parents that have not finished; the others delay its release.
  void wait_for_parents(Job& job) {
    for (int64_t i = p.trace_parent_offsets[job.id]; i < p.trace_parent_offsets[job.id + 1]; ++i) {
      const double finished = finished_at_[p.trace_parents[i]];
      if (finished < 0) {
        ++job.waiting;
      } else {
        job.release = std::max(job.release, finished + p.result_delay + p.submit_delay);
      }
    }
  }

  void schedule_release(const Job& job) {
    releases_.emplace_back(job.release, job.id);
    std::push_heap(releases_.begin(), releases_.end(), std::greater<>());
    t_release = releases_.front().first;
  }

  void finish(Job& job) {
    out.job_response[job.id] = now + p.result_delay - job.arrival;
    out.job_wait[job.id] = job.max_wait;
    if (!child_offsets_.empty()) release_children(job.id);
    release_if_done(job);
  }

  // children_[child_offsets_[j] ..) lists the jobs that wait for job j.
  void index_children() {
    const int64_t n = p.n_trace_jobs;
    const int64_t* parents = p.trace_parents;
    const int64_t* offsets = p.trace_parent_offsets;
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
    finished_at_[id] = now;
    for (int64_t i = child_offsets_[id]; i < child_offsets_[id + 1]; ++i) {
      const int64_t child = children_[i];
      if (child >= next_id) continue;  // not arrived yet: it will see finished_at_
      Job& c = pool.get(child);
      c.release = std::max(c.release, now + p.result_delay + p.submit_delay);
      if (--c.waiting == 0) schedule_release(c);
    }
  }

  PayloadFifo payload_;
  std::vector<std::pair<double, int64_t>> releases_;  // (time, job): a min-heap by std::greater
  std::vector<int64_t> child_offsets_, children_;     // dependencies only
  std::vector<double> finished_at_;                   // per trace job, -1 until it finishes
  std::vector<int64_t> narrowed_, narrowed_offsets_;  // scratch of prepare()
};

}  // namespace sim
}  // namespace sparrow
