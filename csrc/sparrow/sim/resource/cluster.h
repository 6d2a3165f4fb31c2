// What both placements of the resource simulator share: the hosts (class, capacity, what is free),
// the workload (drawn up front from its own generator), the event heap and the accounting.
//
// Events are ordered by time, then by the order they were pushed (a sequence number), so a run is
// reproducible from its seed. Held resources are accounted as integrals: taking units at t0 and
// giving them back at t1 adds units x (t1 - t0), written as -units x t0 then +units x t1.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <queue>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/resources.h"
#include "sparrow/rng.h"
#include "sparrow/sim/params.h"
#include "sparrow/sim/resource/params.h"

namespace sparrow {
namespace sim {

enum class ResourceEvent : int32_t { Arrival, Reservation, GetTask, NoTask, Task, Done };

struct TimedEvent {
  double time;
  uint64_t seq;
  int64_t job;
  int32_t host;
  int32_t task;
  ResourceEvent kind;
};

struct EventLater {
  bool operator()(const TimedEvent& a, const TimedEvent& b) const {
    return a.time > b.time || (a.time == b.time && a.seq > b.seq);
  }
};

inline int64_t draw_class(Rng& rng, const double* share, int64_t n) {
  double u = rng.uniform(), sum = 0.0;
  for (int64_t i = 0; i + 1 < n; ++i)
    if (u < (sum += share[i])) return i;
  return n - 1;
}

inline void check_shares(const double* share, int64_t n, const char* name) {
  if (n < 1) throw std::invalid_argument(std::string(name) + ": at least one class is needed");
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    if (!(share[i] >= 0.0) || !std::isfinite(share[i]))
      throw std::invalid_argument(std::string(name) + " shares must be finite and >= 0");
    sum += share[i];
  }
  if (std::fabs(sum - 1.0) > 1e-9) throw std::invalid_argument(std::string(name) + " shares must sum to 1");
}

class ResourceCluster {
 public:
  ResourceCluster(const ResourceSimParams& params, ResourceSimOutput& output) : p(params), out(output), r(params.n_kinds) {
    check_resource_count(r);
    if (p.n_workers < 1 || p.n_workers > INT32_MAX) throw std::invalid_argument("n_workers must be in [1, 2^31)");
    if (p.n_jobs < 0) throw std::invalid_argument("n_jobs must be >= 0");
    if (p.tasks_per_job < 1 || p.tasks_per_job > INT32_MAX) throw std::invalid_argument("tasks_per_job must be >= 1");
    if (!(p.arrival_rate > 0.0) || !std::isfinite(p.arrival_rate)) throw std::invalid_argument("arrival_rate must be > 0");
    if (!(p.mean_duration > 0.0) || !std::isfinite(p.mean_duration))
      throw std::invalid_argument("mean_duration must be > 0");
    if (!(p.network_delay >= 0.0) || !std::isfinite(p.network_delay))
      throw std::invalid_argument("network_delay must be finite and >= 0");
    check_shares(p.host_share, p.n_host_classes, "host class");
    check_shares(p.request_share, p.n_request_classes, "request class");
    check_amounts(p.host_capacity, p.n_host_classes * r, "host_capacity");
    check_amounts(p.request, p.n_request_classes * r, "request");
    for (int64_t c = 0; c < p.n_request_classes; ++c)
      if (p.request[c * r] != 1) throw std::invalid_argument("every request takes one slot (kind 0)");

    Rng root(p.seed);
    Rng hosts_rng = root.spawn(), workload_rng = root.spawn();
    placement_rng = root.spawn();
    capacity.resize(static_cast<size_t>(p.n_workers * r));
    free.resize(capacity.size());
    for (int64_t w = 0; w < p.n_workers; ++w) {
      const int64_t c = draw_class(hosts_rng, p.host_share, p.n_host_classes);
      out.host_class[w] = static_cast<int32_t>(c);
      for (int64_t k = 0; k < r; ++k) capacity[w * r + k] = free[w * r + k] = p.host_capacity[c * r + k];
    }
    for (int64_t c = 0; c < p.n_request_classes; ++c) {
      bool held = false;
      for (int64_t w = 0; w < p.n_workers && !held; ++w) held = fits(&capacity[w * r], p.request + c * r, r);
      if (!held) throw std::invalid_argument("request class " + std::to_string(c) + " fits no host");
    }
    const int64_t m = p.tasks_per_job;
    durations.resize(static_cast<size_t>(p.n_jobs * m));
    double t = 0.0;
    for (int64_t j = 0; j < p.n_jobs; ++j) {
      t += workload_rng.exponential(1.0 / p.arrival_rate);
      out.job_arrival[j] = t;
      out.job_class[j] = static_cast<int32_t>(draw_class(workload_rng, p.request_share, p.n_request_classes));
      out.job_response[j] = out.job_wait[j] = 0.0;
      for (int64_t i = 0; i < m; ++i) durations[j * m + i] = workload_rng.exponential(p.mean_duration);
    }
    for (int64_t k = 0; k < r; ++k) out.work[k] = out.held[k] = 0.0;
    done.assign(static_cast<size_t>(p.n_jobs), 0);
    if (p.n_jobs > 0) push(out.job_arrival[0], ResourceEvent::Arrival, -1, 0, 0);
  }

  const int64_t* request_of_job(int64_t job) const { return p.request + out.job_class[job] * r; }
  const int64_t* free_of(int64_t host) const { return free.data() + host * r; }

  void push(double time, ResourceEvent kind, int64_t host, int64_t job, int64_t task) {
    heap.push(TimedEvent{time, seq++, job, static_cast<int32_t>(host), static_cast<int32_t>(task), kind});
  }

  // Takes (hold) or gives back (release) a job's request at a host. A placement holds only what
  // fits: anything else is a bug of the placement, reported rather than simulated on.
  void hold(int64_t host, int64_t job) {
    const int64_t* q = request_of_job(job);
    if (!fits(free_of(host), q, r)) throw std::logic_error("resource simulator: a host was given more than it holds");
    for (int64_t k = 0; k < r; ++k) free[host * r + k] -= q[k], out.held[k] -= static_cast<double>(q[k]) * now;
  }
  void release(int64_t host, int64_t job) {
    const int64_t* q = request_of_job(job);
    for (int64_t k = 0; k < r; ++k) free[host * r + k] += q[k], out.held[k] += static_cast<double>(q[k]) * now;
  }

  // Task `task` of `job` starts now on a host that holds its request; returns when it ends.
  double start(int64_t job, int64_t task) {
    const double d = durations[job * p.tasks_per_job + task];
    const int64_t* q = request_of_job(job);
    for (int64_t k = 0; k < r; ++k) out.work[k] += static_cast<double>(q[k]) * d;
    const double wait = now - out.job_arrival[job];
    if (wait > out.job_wait[job]) out.job_wait[job] = wait;
    return now + d;
  }

  // A task of `job` ended now.
  void finish(int64_t job) {
    if (++done[job] == p.tasks_per_job) out.job_response[job] = now - out.job_arrival[job];
  }

  // The next arrival after `job`'s, pushed when `job` arrives (the heap holds one at a time).
  void next_arrival(int64_t job) {
    if (job + 1 < p.n_jobs) push(out.job_arrival[job + 1], ResourceEvent::Arrival, -1, job + 1, 0);
  }

  const ResourceSimParams& p;
  ResourceSimOutput& out;
  const int64_t r;
  Rng placement_rng{0};
  std::vector<int64_t> capacity, free;  // n_workers x r
  std::vector<double> durations;        // n_jobs x tasks_per_job
  std::vector<int64_t> done;            // tasks ended, per job
  std::priority_queue<TimedEvent, std::vector<TimedEvent>, EventLater> heap;
  uint64_t seq = 0;
  double now = 0.0;
};

}  // namespace sim
}  // namespace sparrow
