// EarlyBinding: what the early-binding policies (random, per_task, batch) share: a task is
// bound to a worker when it is placed, and waits in that worker's queue (worker_queues.h;
// entries are tasks, keyed job * stride + task) for a slot.
//
// The probing policies (per_task, batch) send their probes in one Probe message; each probed
// worker answers its load (running + queued), and the scheduler places the job's tasks on the
// least loaded answers (least_loaded.h) in one Tasks message: three hops. Random placement
// sends Tasks at once. A task's queue wait runs from the Tasks message's arrival to its start.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/sim/cluster.h"
#include "sparrow/sim/least_loaded.h"
#include "sparrow/sim/worker_queues.h"

namespace sparrow {
namespace sim {

class EarlyBinding {
 public:
  explicit EarlyBinding(Cluster& c) : c_(c), queues_(c) {}

  void deliver(const Msg& m) {
    switch (m.kind) {
      case kProbe:
        on_probe(m.job);
        break;
      case kAnswers:
        on_answers(m.job);
        break;
      case kTasks:
        on_tasks(m.job);
        break;
      default:
        throw std::logic_error("simulator: early binding got a message of kind " + std::to_string(m.kind));
    }
  }

  void complete(int64_t w) { run_queued_tasks(w); }

 protected:
  enum Kind : int32_t { kProbe, kAnswers, kTasks };

  // Sends job's probes workers_ (tagged with tags_: the task each was made for, -1: any).
  void send_probes(int64_t job) {
    pairs_.clear();
    for (size_t i = 0; i < workers_.size(); ++i) {
      pairs_.push_back(workers_[i]);
      pairs_.push_back(tags_[i]);
    }
    c_.out.counters.probes += static_cast<int64_t>(workers_.size());
    c_.send(kProbe, job, -1, -1, 0.0, 0, &pairs_);
  }

  Cluster& c_;
  WorkerQueues queues_;
  std::vector<int64_t> pairs_, workers_, tags_;

 private:
  void run_queued_tasks(int64_t w) {
    Reservation r;
    while (queues_.dequeue(w, r)) c_.start(w, c_.pool.get(r.job_id / c_.stride), r.job_id % c_.stride, c_.now);
  }

  void on_probe(int64_t id) {
    pairs_.clear();
    for (size_t i = 0; i < c_.words.size(); i += 2) {
      pairs_.push_back(c_.words[i]);
      pairs_.push_back(c_.words[i + 1]);
      pairs_.push_back(queues_.load(c_.words[i]));
    }
    c_.send(kAnswers, id, -1, -1, 0.0, 0, &pairs_);
  }

  void on_answers(int64_t id) {
    Job& job = c_.pool.get(id);
    answers_.clear();
    for (size_t i = 0; i < c_.words.size(); i += 3)
      answers_.push_back(ProbeAnswer{c_.words[i], c_.words[i + 1], c_.words[i + 2]});
    least_loaded_.place(c_.rng, answers_, job.n_tasks, chosen_);
    job.dispatch = c_.now + c_.p.network_delay;  // the tasks' arrival (the Tasks message's time)
    pairs_.clear();
    for (int64_t t = 0; t < job.n_tasks; ++t) {
      pairs_.push_back(chosen_[t]);
      pairs_.push_back(t);
    }
    c_.send(kTasks, id, -1, -1, 0.0, 0, &pairs_);
  }

  void on_tasks(int64_t id) {
    Job& job = c_.pool.get(id);
    for (size_t i = 0; i < c_.words.size(); i += 2) {
      const int64_t w = c_.words[i];
      if (queues_.enqueue(w, id * c_.stride + c_.words[i + 1], job.user, job.priority)) {
        c_.start(w, job, c_.words[i + 1], c_.now);
      } else {
        run_queued_tasks(w);
      }
    }
  }

  LeastLoaded least_loaded_;
  std::vector<ProbeAnswer> answers_;
  std::vector<int64_t> chosen_;
};

}  // namespace sim
}  // namespace sparrow
