// Sparrow's placement with resources: what the runtime does, in simulated time.
//
// Model. A job's request becomes a constraint: its probes (batch sampling, probe_count(m, d)) are
// drawn only from the hosts whose capacity holds the request (feasible_workers, computed once per
// request class). A reservation reaches its host one network delay later and waits in the host's
// FIFO queue. After every change at a host, the fit launcher (sparrow/fit_launcher.h) picks the reservation to launch; the host takes its
// request and asks the scheduler for a task (late binding): a task, or "nothing left" (the request
// is given back), arrives a round trip later. Once a job's last task is handed out, the scheduler
// cancels its other reservations: a host drops one whose cancellation has arrived (one network
// delay after) when it looks at it.
#pragma once

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/fit_launcher.h"
#include "sparrow/resources.h"
#include "sparrow/sampling.h"
#include "sparrow/sim/resource/cluster.h"

namespace sparrow {
namespace sim {

class ResourceSparrow {
 public:
  explicit ResourceSparrow(ResourceCluster& c) : c_(c), queues_(static_cast<size_t>(c.p.n_workers)) {
    if (!valid_probe_ratio(c.p.probe_ratio)) throw std::invalid_argument("probe_ratio must be finite and >= 1");
    rule_.window = c.p.fit_window;
    rule_.max_skips = c.p.fit_max_skips;
    check_fit_rule(rule_);
    for (int64_t k = 0; k < c.p.n_request_classes; ++k) {  // never empty: the cluster checked
      feasible_.emplace_back();
      feasible_workers(c.capacity.data(), c.p.n_workers, c.r, c.p.request + k * c.r, feasible_.back());
    }
    launched_.assign(static_cast<size_t>(c.p.n_jobs), 0);
    cancel_at_.assign(static_cast<size_t>(c.p.n_jobs), kNever);
  }

  void handle(const TimedEvent& e) {
    switch (e.kind) {
      case ResourceEvent::Arrival:
        return arrive(e.job);
      case ResourceEvent::Reservation:
        queues_[e.host].entries.push_back(Entry{e.job, serial_++});
        return try_launch(e.host);
      case ResourceEvent::GetTask:
        return get_task(e.host, e.job);
      case ResourceEvent::NoTask:
        c_.release(e.host, e.job);
        return try_launch(e.host);
      case ResourceEvent::Task:
        c_.push(c_.start(e.job, e.task), ResourceEvent::Done, e.host, e.job, e.task);
        return;
      case ResourceEvent::Done:
        c_.release(e.host, e.job);
        c_.finish(e.job);
        return try_launch(e.host);
    }
  }

 private:
  static constexpr double kNever = 1e300;

  struct Entry {
    int64_t job;
    int64_t serial;  // tells one reservation from another of the same job (the head's identity)
  };
  struct HostQueue {
    std::deque<Entry> entries;  // service order
    int64_t head = -1;          // serial of the head the skips count for
    int64_t head_skips = 0;
  };

  void arrive(int64_t job) {
    c_.next_arrival(job);
    const std::vector<int64_t>& hosts = feasible_[c_.out.job_class[job]];
    probes_.clear();
    sample_from(c_.placement_rng, hosts.data(), static_cast<int64_t>(hosts.size()),
                probe_count(c_.p.tasks_per_job, c_.p.probe_ratio), probes_);
    c_.out.counters.probes += static_cast<int64_t>(probes_.size());
    for (int64_t w : probes_) c_.push(c_.now + c_.p.network_delay, ResourceEvent::Reservation, w, job, 0);
  }

  void get_task(int64_t host, int64_t job) {
    ++c_.out.counters.get_task;
    const double back = c_.now + c_.p.network_delay;
    if (launched_[job] == c_.p.tasks_per_job) {
      ++c_.out.counters.get_task_empty;
      c_.push(back, ResourceEvent::NoTask, host, job, 0);
      return;
    }
    const int64_t task = launched_[job]++;
    if (launched_[job] == c_.p.tasks_per_job) cancel_at_[job] = back;
    c_.push(back, ResourceEvent::Task, host, job, task);
  }

  void try_launch(int64_t host) {
    HostQueue& q = queues_[host];
    for (;;) {
      drop_cancelled(q);
      std::deque<Entry>& waiting = q.entries;
      if (waiting.empty()) return;
      if (waiting.front().serial != q.head) q.head = waiting.front().serial, q.head_skips = 0;
      const int64_t index = choose_launch_unchecked(
          c_.free_of(host), c_.r, [this, &waiting](int64_t i) { return c_.request_of_job(waiting[i].job); },
          static_cast<int64_t>(waiting.size()), q.head_skips, rule_);
      if (index < 0) {
        if (q.head_skips >= rule_.max_skips) ++c_.out.counters.owed;
        return;
      }
      if (index > 0) ++q.head_skips, ++c_.out.counters.skips;
      const int64_t job = waiting[index].job;
      waiting.erase(waiting.begin() + index);
      c_.hold(host, job);
      c_.push(c_.now + c_.p.network_delay, ResourceEvent::GetTask, host, job, 0);
    }
  }

  // Drops the reservations of the first window whose job's cancellation has arrived.
  void drop_cancelled(HostQueue& q) {
    std::deque<Entry>& waiting = q.entries;
    for (size_t i = 0; i < waiting.size() && i < static_cast<size_t>(rule_.window);) {
      if (cancel_at_[waiting[i].job] <= c_.now) {
        waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
        ++c_.out.counters.cancelled;
      } else {
        ++i;
      }
    }
  }

  ResourceCluster& c_;
  FitRule rule_;
  std::vector<std::vector<int64_t>> feasible_;  // per request class, the hosts that can hold it
  std::vector<HostQueue> queues_;
  std::vector<int64_t> launched_;   // tasks handed out, per job
  std::vector<double> cancel_at_;   // when a job's cancellations reach its hosts (kNever: not yet)
  std::vector<int64_t> probes_;
  int64_t serial_ = 0;
};

}  // namespace sim
}  // namespace sparrow
