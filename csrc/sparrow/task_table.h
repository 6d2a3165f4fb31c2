// TaskTable: the scheduler's late-binding state, one entry per job.
//
// A job has m tasks, some with candidate workers (per-task constraints), and the probes
// (reservations) the scheduler placed for it, each at a worker and made for a task
// (-1: any unconstrained task). When a worker's reservation reaches the head of its queue
// the worker asks get_task(job, worker), which consumes one of its outstanding reservations
// and binds a task only now (late binding), preferring
//   1. an unlaunched constrained task a reservation at this worker was made for,
//   2. any unlaunched constrained task that has this worker as a candidate,
//   3. the next unlaunched unconstrained task (in index order),
// or answers none (-1). Once all m tasks are launched, workers_to_cancel lists the workers
// still holding reservations (proactive cancellation, matched by job id value) and forgets
// them, so asking again gives nothing.
// Costs: add_job O(m + c log c) for c candidates; reserve O(k); get_task O(log k) after
// one O(k log k) sort of a job's probes by (worker, task) (redone only after a new reserve), plus
// the scan of that worker's probes and candidate tasks; workers_to_cancel O(k).
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sparrow {

class TaskTable {
 public:
  void add_job(int64_t job_id, int64_t n_tasks, const int64_t* cand = nullptr, const int64_t* cand_offsets = nullptr) {
    if (n_tasks < 0) throw std::invalid_argument("n_tasks must be >= 0, got " + std::to_string(n_tasks));
    if (jobs_.count(job_id)) throw std::invalid_argument("job_id " + std::to_string(job_id) + " already exists");
    Job job;
    job.n_tasks = n_tasks;
    job.flags.assign(static_cast<size_t>(n_tasks), 0);
    for (int64_t t = 0; cand_offsets && t < n_tasks; ++t) {
      const int64_t lo = cand_offsets[t], hi = cand_offsets[t + 1];
      if (hi < lo) throw std::invalid_argument("candidates: offsets decrease at task " + std::to_string(t));
      if (hi == lo) continue;
      job.flags[t] = kConstrained;
      for (int64_t i = lo; i < hi; ++i) {
        if (cand[i] < 0)
          throw std::invalid_argument("candidates: task " + std::to_string(t) + " has a negative worker id " +
                                      std::to_string(cand[i]));
        job.candidate_index.emplace_back(cand[i], t);
      }
    }
    std::sort(job.candidate_index.begin(), job.candidate_index.end());
    for (size_t i = 1; i < job.candidate_index.size(); ++i)
      if (job.candidate_index[i] == job.candidate_index[i - 1])
        throw std::invalid_argument("candidates: task " + std::to_string(job.candidate_index[i].second) +
                                    " lists worker " + std::to_string(job.candidate_index[i].first) + " twice");
    jobs_.emplace(job_id, std::move(job));
  }

  // Records n reservations: probe i at workers[i], made for tasks[i] (nullptr: all -1).
  void reserve(int64_t job_id, const int64_t* workers, const int64_t* tasks, int64_t n) {
    Job& job = find(job_id);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t w = workers[i], t = tasks ? tasks[i] : -1;
      if (w < 0) throw std::invalid_argument("workers: negative worker id " + std::to_string(w));
      if (t < -1 || t >= job.n_tasks)
        throw std::invalid_argument("tasks: task " + std::to_string(t) + " is out of range [-1, " +
                                    std::to_string(job.n_tasks) + ")");
      if (t >= 0) {
        if (!(job.flags[t] & kConstrained))
          throw std::invalid_argument("tasks: task " + std::to_string(t) + " is unconstrained; its probes use -1");
        if (!std::binary_search(job.candidate_index.begin(), job.candidate_index.end(), std::make_pair(w, t)))
          throw std::invalid_argument("workers: worker " + std::to_string(w) + " is not a candidate of task " +
                                      std::to_string(t));
      }
    }
    for (int64_t i = 0; i < n; ++i)
      job.probes.push_back(Probe{workers[i], tasks ? tasks[i] : -1, static_cast<uint32_t>(job.probes.size()), kOutstanding});
    job.outstanding += n;
    job.probes_sorted = n == 0 && job.probes_sorted;
  }

  // The task `worker` should run for the job, or -1; consumes one of its reservations.
  int64_t get_task(int64_t job_id, int64_t worker) {
    Job& job = find(job_id);
    sort_probes(job);
    auto [lo, hi] = probe_range(job, worker);
    Probe* held = nullptr;
    for (Probe* p = lo; p != hi; ++p)
      if (p->state == kOutstanding) {
        held = p;
        break;
      }
    if (held == nullptr) return -1;
    held->state = kConsumed;
    --job.outstanding;
    if (job.n_launched == job.n_tasks) return -1;
    int64_t task = -1;
    for (Probe* p = lo; p != hi && task < 0; ++p)
      if (p->task >= 0 && !(job.flags[p->task] & kLaunched)) task = p->task;
    if (task < 0) {
      auto c = std::lower_bound(job.candidate_index.begin(), job.candidate_index.end(), std::make_pair(worker, int64_t{-1}));
      for (; c != job.candidate_index.end() && c->first == worker; ++c)
        if (!(job.flags[c->second] & kLaunched)) {
          task = c->second;
          break;
        }
    }
    if (task < 0) {
      // Unconstrained tasks in index order: skip constrained ones (and none is launched yet).
      while (job.next_unconstrained < job.n_tasks && job.flags[job.next_unconstrained] != 0) ++job.next_unconstrained;
      if (job.next_unconstrained < job.n_tasks) task = job.next_unconstrained++;
    }
    if (task >= 0) {
      job.flags[task] |= kLaunched;
      ++job.n_launched;
    }
    return task;
  }

  bool all_launched(int64_t job_id) const {
    const Job& job = find(job_id);
    return job.n_launched == job.n_tasks;
  }

  // Once all tasks are launched: appends the workers (sorted, unique) still holding
  // reservations of the job, and forgets those reservations. Before that: appends nothing.
  void workers_to_cancel(int64_t job_id, std::vector<int64_t>& out) {
    Job& job = find(job_id);
    if (job.n_launched < job.n_tasks || job.outstanding == 0) return;
    sort_probes(job);
    for (Probe& p : job.probes) {
      if (p.state != kOutstanding) continue;
      p.state = kCancelled;
      if (out.empty() || out.back() != p.worker) out.push_back(p.worker);
    }
    job.outstanding = 0;
  }

  // Forgets the outstanding reservations of the job at a worker that is gone; returns how many.
  int64_t drop_worker(int64_t job_id, int64_t worker) {
    Job& job = find(job_id);
    sort_probes(job);
    auto [lo, hi] = probe_range(job, worker);
    int64_t dropped = 0;
    for (Probe* p = lo; p != hi; ++p)
      if (p->state == kOutstanding) {
        p->state = kCancelled;
        ++dropped;
      }
    job.outstanding -= dropped;
    return dropped;
  }

  void unlaunched(int64_t job_id, std::vector<int64_t>& out) const {
    const Job& job = find(job_id);
    for (int64_t t = 0; t < job.n_tasks; ++t)
      if (!(job.flags[t] & kLaunched)) out.push_back(t);
  }

  void remove_job(int64_t job_id) {
    if (jobs_.erase(job_id) == 0) throw unknown_job(job_id);
  }

  bool contains(int64_t job_id) const { return jobs_.count(job_id) != 0; }
  int64_t size() const { return static_cast<int64_t>(jobs_.size()); }
  int64_t n_tasks(int64_t job_id) const { return find(job_id).n_tasks; }
  int64_t n_launched(int64_t job_id) const { return find(job_id).n_launched; }
  int64_t outstanding(int64_t job_id) const { return find(job_id).outstanding; }

 private:
  static constexpr uint8_t kOutstanding = 0, kConsumed = 1, kCancelled = 2;  // Probe::state
  static constexpr uint8_t kLaunched = 1, kConstrained = 2;                  // Job::flags bits

  struct Probe {
    int64_t worker;
    int64_t task;
    uint32_t seq;  // reservation order within the job
    uint8_t state;
  };
  struct Job {
    int64_t n_tasks = 0;
    int64_t n_launched = 0;
    int64_t outstanding = 0;
    std::vector<uint8_t> flags;  // per task: kLaunched | kConstrained
    int64_t next_unconstrained = 0;  // no unconstrained task below it is unlaunched
    std::vector<std::pair<int64_t, int64_t>> candidate_index;  // (worker, task), sorted
    std::vector<Probe> probes;
    bool probes_sorted = true;
  };

  static std::invalid_argument unknown_job(int64_t job_id) {
    return std::invalid_argument("job_id " + std::to_string(job_id) + " does not exist");
  }

  Job& find(int64_t job_id) {
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) throw unknown_job(job_id);
    return it->second;
  }
  const Job& find(int64_t job_id) const {
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) throw unknown_job(job_id);
    return it->second;
  }

  static void sort_probes(Job& job) {
    if (job.probes_sorted) return;
    // By worker, task, then reservation order: a total order, so every sort gives the same
    // sequence, and a worker's reservations offer their tasks lowest index first.
    std::sort(job.probes.begin(), job.probes.end(), [](const Probe& a, const Probe& b) {
      if (a.worker != b.worker) return a.worker < b.worker;
      return a.task != b.task ? a.task < b.task : a.seq < b.seq;
    });
    job.probes_sorted = true;
  }

  static std::pair<Probe*, Probe*> probe_range(Job& job, int64_t worker) {
    auto lo = std::lower_bound(job.probes.begin(), job.probes.end(), worker,
                               [](const Probe& p, int64_t w) { return p.worker < w; });
    auto hi = lo;
    while (hi != job.probes.end() && hi->worker == worker) ++hi;
    Probe* base = job.probes.data();
    return {base + (lo - job.probes.begin()), base + (hi - job.probes.begin())};
  }

  std::unordered_map<int64_t, Job> jobs_;
};

}  // namespace sparrow
