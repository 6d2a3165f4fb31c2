// Workload: the jobs of a simulation, one at a time in arrival order.
//
// Generated: Poisson arrivals at SimParams::arrival_rate, tasks_per_job tasks each, with
// durations exponential, constant, bimodal (short or long, mean kept) or per job (one
// exponential duration shared by all the job's tasks). Or replayed from a trace given as
// arrays, constraints included if it has any (checked at construction: a task that could run
// nowhere fails before the simulation starts). Users, priorities and constraints are drawn per
// job. All draws come from the workload's own Rng, so every policy sees exactly the same jobs
// for a given seed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/job_probes.h"
#include "sparrow/rng.h"
#include "sparrow/sampling.h"
#include "sparrow/sim/job_pool.h"
#include "sparrow/sim/params.h"

namespace sparrow {
namespace sim {

class Workload {
 public:
  Workload(const SimParams& p, Rng rng)
      : p_(p), rng_(rng), user_cdf_(cdf(p.user_demand)), priority_cdf_(cdf(p.priority_share)) {
    n_jobs_ = p.n_trace_jobs > 0 ? p.n_trace_jobs : p.n_jobs;
    if (p.n_trace_jobs > 0) check_trace(p);
    if (p.n_trace_jobs == 0) {
      if (!(p.arrival_rate > 0)) throw std::invalid_argument("arrival_rate must be positive");
      const double short_share = 1.0 - p.bimodal_long_fraction + p.bimodal_long_fraction * p.bimodal_ratio;
      short_duration_ = p.mean_duration / short_share;
    }
    next_arrival_ = n_jobs_ > 0 ? first_arrival() : kNever;
  }

  int64_t n_jobs() const { return n_jobs_; }
  double next_arrival() const { return next_arrival_; }
  int64_t max_tasks_per_job() const {
    if (p_.n_trace_jobs == 0) return p_.tasks_per_job;
    return *std::max_element(p_.trace_tasks, p_.trace_tasks + p_.n_trace_jobs);
  }
  int64_t total_tasks() const {
    if (p_.n_trace_jobs == 0) return p_.n_jobs * p_.tasks_per_job;
    return p_.trace_offsets[p_.n_trace_jobs];
  }

  // Fills `job` with the next job (its id is the arrival index) and draws the next arrival.
  void next(Job& job) {
    const int64_t id = issued_++;
    job.arrival = next_arrival_;
    job.done = job.launched = job.live_reservations = 0;
    job.max_wait = 0.0;
    job.in_table = false;
    job.durations.clear();
    job.job_candidates.clear();
    job.task_candidates.clear();
    job.task_candidate_offsets.clear();
    if (p_.n_trace_jobs > 0) {
      job.n_tasks = p_.trace_tasks[id];
      job.task_offset = p_.trace_offsets[id];
      job.durations.assign(p_.trace_durations + p_.trace_offsets[id], p_.trace_durations + p_.trace_offsets[id + 1]);
    } else {
      job.n_tasks = p_.tasks_per_job;
      job.task_offset = id * p_.tasks_per_job;
      draw_durations(job);
    }
    job.user = draw(user_cdf_);
    job.priority = draw(priority_cdf_);
    if (p_.trace_job_offsets != nullptr) {
      trace_constraints(id, job);
    } else {
      draw_constraints(job);
    }
    if (issued_ == n_jobs_) {
      next_arrival_ = kNever;
    } else if (p_.n_trace_jobs > 0) {
      next_arrival_ = p_.trace_arrival[issued_];
    } else {
      next_arrival_ += rng_.exponential(1.0 / p_.arrival_rate);
    }
  }

  static constexpr double kNever = std::numeric_limits<double>::infinity();

 private:
  static void check_trace(const SimParams& p) {
    auto fail = [&p](const std::string& what, int64_t j) {
      const std::string where =
          p.trace_lines ? "trace line " + std::to_string(p.trace_lines[j]) : "trace job " + std::to_string(j);
      throw std::invalid_argument(where + ": " + what);
    };
    for (int64_t j = 0; j < p.n_trace_jobs; ++j) {
      if (!std::isfinite(p.trace_arrival[j]) || p.trace_arrival[j] < 0) fail("arrival time must be finite and >= 0", j);
      if (j > 0 && p.trace_arrival[j] < p.trace_arrival[j - 1]) fail("arrival times must not decrease", j);
      if (p.trace_tasks[j] < 1) fail("n_tasks must be >= 1", j);
      if (p.trace_offsets[j + 1] - p.trace_offsets[j] != p.trace_tasks[j]) fail("offsets do not match n_tasks", j);
      for (int64_t i = p.trace_offsets[j]; i < p.trace_offsets[j + 1]; ++i)
        if (!std::isfinite(p.trace_durations[i]) || p.trace_durations[i] < 0) fail("durations must be finite and >= 0", j);
      if (p.trace_parent_offsets != nullptr) {
        const int64_t* parents = p.trace_parents + p.trace_parent_offsets[j];
        const int64_t n_parents = p.trace_parent_offsets[j + 1] - p.trace_parent_offsets[j];
        if (n_parents < 0) fail("parent offsets must not decrease", j);
        for (int64_t i = 0; i < n_parents; ++i) {
          if (parents[i] < 0 || parents[i] >= j) fail("a job may only wait for earlier jobs", j);
          if (std::count(parents, parents + i, parents[i]) > 0) fail("a parent is listed twice", j);
        }
      }
      if (p.trace_probe_offsets != nullptr) check_probes(p, j, fail);
      if (p.trace_job_offsets == nullptr) continue;
      std::vector<int64_t> flat, offsets;
      int64_t infeasible = kFeasible;
      try {
        infeasible = candidates_within(trace_request(p, j), flat, offsets);
      } catch (const std::invalid_argument& e) {
        fail(e.what(), j);
      }
      if (infeasible != kFeasible)
        fail("task " + std::to_string(infeasible) + ": none of its candidate workers is among the job's", j);
    }
  }

  // Job j's replayed placement (params.h): at least one reservation per task, on workers that exist.
  template <class Fail>
  static void check_probes(const SimParams& p, int64_t j, const Fail& fail) {
    if (p.trace_job_offsets != nullptr) fail("a replayed placement (probes) cannot be combined with constraints", j);
    const int64_t lo = p.trace_probe_offsets[j], hi = p.trace_probe_offsets[j + 1];
    if (hi - lo < p.trace_tasks[j]) fail("probes must give at least one worker per task", j);
    for (int64_t i = lo; i < hi; ++i)
      if (p.trace_probes[i] < 0 || p.trace_probes[i] >= p.n_workers)
        fail("probes: worker " + std::to_string(p.trace_probes[i]) + " is not one of the n_workers", j);
  }

  // Job j's constraints in the trace, as a request to the probe kernel.
  static JobRequest trace_request(const SimParams& p, int64_t j) {
    JobRequest r;
    r.n_workers = p.n_workers;
    const int64_t lo = p.trace_job_offsets[j], hi = p.trace_job_offsets[j + 1];
    if (hi > lo) {
      r.candidates = p.trace_job_candidates + lo;
      r.n_candidates = hi - lo;
    }
    r.n_tasks = p.trace_tasks[j];
    r.task_candidates = p.trace_task_candidates;
    r.task_offsets = p.trace_task_offsets + p.trace_offsets[j];
    r.probe_ratio = p.probe_ratio;
    return r;
  }

  // Job `id` of the trace gets the trace's constraints (rebased: offsets from 0).
  void trace_constraints(int64_t id, Job& job) {
    const int64_t lo = p_.trace_job_offsets[id], hi = p_.trace_job_offsets[id + 1];
    job.job_candidates.assign(p_.trace_job_candidates + lo, p_.trace_job_candidates + hi);
    const int64_t* offsets = p_.trace_task_offsets + p_.trace_offsets[id];
    if (offsets[job.n_tasks] == offsets[0]) return;  // no task constrained
    job.task_candidates.assign(p_.trace_task_candidates + offsets[0],
                               p_.trace_task_candidates + offsets[job.n_tasks]);
    for (int64_t t = 0; t <= job.n_tasks; ++t) job.task_candidate_offsets.push_back(offsets[t] - offsets[0]);
  }

  static std::vector<double> cdf(const std::vector<double>& weights) {
    if (weights.empty()) throw std::invalid_argument("a share list must not be empty");
    std::vector<double> out;
    double total = 0.0;
    for (double w : weights) {
      if (!(w >= 0)) throw std::invalid_argument("shares must be >= 0");
      total += w;
      out.push_back(total);
    }
    if (!(total > 0)) throw std::invalid_argument("shares must not all be 0");
    for (double& c : out) c /= total;
    return out;
  }

  int32_t draw(const std::vector<double>& cdf) {
    if (cdf.size() == 1) return 0;
    const double u = rng_.uniform();
    const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
    return static_cast<int32_t>(std::min<size_t>(it - cdf.begin(), cdf.size() - 1));
  }

  double first_arrival() {
    if (p_.n_trace_jobs > 0) return p_.trace_arrival[0];
    return rng_.exponential(1.0 / p_.arrival_rate);
  }

  void draw_durations(Job& job) {
    const int64_t m = job.n_tasks;
    switch (p_.duration) {
      case DurationKind::Exponential:
        for (int64_t t = 0; t < m; ++t) job.durations.push_back(rng_.exponential(p_.mean_duration));
        break;
      case DurationKind::Constant:
        job.durations.assign(static_cast<size_t>(m), p_.mean_duration);
        break;
      case DurationKind::Bimodal:
        for (int64_t t = 0; t < m; ++t)
          job.durations.push_back(rng_.uniform() < p_.bimodal_long_fraction ? short_duration_ * p_.bimodal_ratio
                                                                             : short_duration_);
        break;
      case DurationKind::PerJob:
        job.durations.assign(static_cast<size_t>(m), rng_.exponential(p_.mean_duration));
        break;
    }
  }

  void draw_constraints(Job& job) {
    if (p_.constrained_jobs > 0 && rng_.uniform() < p_.constrained_jobs) {
      const int64_t c = std::max<int64_t>(1, std::llround(p_.constraint_workers * static_cast<double>(p_.n_workers)));
      sample_workers(rng_, p_.n_workers, std::min(c, p_.n_workers), job.job_candidates);
      return;
    }
    if (!(p_.constrained_tasks > 0)) return;
    bool any = false;
    job.task_candidate_offsets.push_back(0);
    for (int64_t t = 0; t < job.n_tasks; ++t) {
      if (rng_.uniform() < p_.constrained_tasks) {
        sample_workers(rng_, p_.n_workers, std::min(p_.task_candidates, p_.n_workers), job.task_candidates);
        any = true;
      }
      job.task_candidate_offsets.push_back(static_cast<int64_t>(job.task_candidates.size()));
    }
    if (!any) job.task_candidate_offsets.clear();
  }

  const SimParams& p_;
  Rng rng_;
  std::vector<double> user_cdf_;
  std::vector<double> priority_cdf_;
  int64_t n_jobs_ = 0;
  int64_t issued_ = 0;
  double next_arrival_ = kNever;
  double short_duration_ = 0.0;
};

}  // namespace sim
}  // namespace sparrow
