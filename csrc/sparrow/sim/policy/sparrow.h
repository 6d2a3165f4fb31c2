// Sparrow: batch sampling + late binding + proactive cancellation (the paper's policy).
//
// The job's ceil(d * m) probes (the kernel's sample_job) put reservations in worker queues
// (worker_queues.h) in one Reserve message; the scheduler records them in its TaskTable. A
// reservation at the head of a queue with a free slot holds the slot and asks its scheduler
// for a task (GetTask, naming the worker the reservation was placed at); the scheduler binds
// one now (TaskTable::get_task) and its Reply launches the task or frees the slot (a Reply
// that launches a task is not an event of its own where nothing else can come between: see
// launch()). With
// cancellation, once all of a job's tasks are launched the scheduler cancels its leftover
// reservations (Cancel, to the workers the table still counts). A task's queue wait runs from
// the Reserve message's arrival to the grant of the slot that ran it.
//
// With stealing on (policy sparrow_steal, steal.h), a worker left with a free slot and an empty
// queue, after a task or an empty Reply, takes reservations from its peers' queues. A stolen
// reservation is queued at the thief under a negative key that carries the job and the worker
// it was placed at (StealKeys, steal.h), and asks for its task on that worker's behalf.
//
// With pipelining on (policies sparrow_pipelined, sparrow_steal_pipelined, pipeline.h), a busy
// worker whose queue holds reservations asks for the next task of a slot before the slot frees;
// the unit then decides what every answer and every freed slot does.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/sim/cluster.h"
#include "sparrow/sim/policy/pipeline.h"
#include "sparrow/sim/policy/steal.h"
#include "sparrow/sim/worker_queues.h"
#include "sparrow/task_table.h"

namespace sparrow {
namespace sim {

class SparrowPolicy {
 public:
  explicit SparrowPolicy(Cluster& c)
      : c_(c),
        queues_(c),
        tables_(static_cast<size_t>(c.p.n_schedulers)),
        stealing_(c, queues_),
        pipelining_(c, queues_),
        fold_replies_(!pipelining_.on() && c.p.steal_wait == 0) {}

  void dispatch(Job& job) {
    c_.sample_batch_probes(job, workers_, tags_);
    const bool tagged = job.has_task_constraints();
    TaskTable& table = tables_[job.scheduler];
    if (tagged) {
      table.add_job(job.id, job.n_tasks, job.task_candidates.data(), job.task_candidate_offsets.data());
    } else {
      table.add_job(job.id, job.n_tasks);
    }
    const int64_t k = static_cast<int64_t>(workers_.size());
    table.reserve(job.id, workers_.data(), tagged ? tags_.data() : nullptr, k);
    job.in_table = true;
    job.live_reservations = k;
    job.dispatch = c_.now + c_.p.network_delay;
    c_.out.counters.probes += k;
    c_.send(kReserve, job.id, -1, -1, 0.0, 0, &workers_);
  }

  void deliver(const Msg& m) {
    switch (m.kind) {
      case kReserve:
        on_reserve(m.job);
        break;
      case kGetTask:
        on_get_task(m);
        break;
      case kReply:
        on_reply(m);
        break;
      case kCancel:
        on_cancel(m.job);
        break;
      default:
        stealing_.deliver(m, *this);
        break;
    }
  }

  // A hint for message c.msgs[k], still in flight (simulator.h): load what its handler reads first.
  void prefetch(size_t k) {
    const Msg& m = c_.msgs[k];
    switch (m.kind) {
      case kGetTask: {
        const TaskTable& table = tables_.size() == 1 ? tables_[0] : tables_[c_.pool.get(m.job).scheduler];
        table.prefetch_get_task(m.job, m.task);
        c_.pool.prefetch(m.job);
        break;
      }
      case kReply:
        c_.pool.prefetch(m.job);
        break;
      case kReserve:
      case kCancel:
        break;  // their handlers prefetch over their workers themselves
      default:
        stealing_.prefetch(k);
        break;
    }
  }

  void complete(int64_t w) {
    if (pipelining_.on()) return pipelining_.complete(*this, w);
    serve(w);
  }

  // A timer (a completion of a negative task) fired: work stealing's (steal_wait) or pipelining's.
  void timer(const Completion& done) {
    if (done.job == WorkStealing::kTimerJob) return stealing_.timer(done);
    pipelining_.timer(*this, done);
  }

  // A slot of w is free (or several): serve the queue; left idle, try to steal.
  void serve(int64_t w) {
    run_reservations(w);
    stealing_.if_idle(w);
  }

  // The job of a queue key (a job id, or a stolen reservation's key).
  int64_t job_of(int64_t key) const { return stealing_.keys().job(key); }

  // Pipelining popped the reservation keyed `key` from w's queue to ask for its task ahead.
  void ask_ahead_for(int64_t w, int64_t key, int32_t user) {
    stealing_.dequeued(w, key);
    send_get_task(w, key, user);
  }

  // GetTask for the reservation keyed `key` at worker w, on behalf of the worker it was placed at.
  void send_get_task(int64_t w, int64_t key, int32_t user) {
    ++c_.out.counters.get_task;
    const StealKeys& keys = stealing_.keys();
    c_.send(kGetTask, keys.job(key), static_cast<int32_t>(w), keys.origin(key, w), c_.now, user);
  }

  // Work stealing's thief side: a reservation (a queue key: a job id, or a stolen key) arrives
  // at worker w; it queues, or takes a free slot and asks for its task at once.
  void accept(int64_t w, int64_t key) {
    const int64_t job = stealing_.keys().job(key);
    const Job& j = c_.pool.get(job);
    if (queues_.enqueue(w, key, j.user, j.priority)) {
      ask_for_task(w, key, j.user);
      if (pipelining_.on()) pipelining_.deep_ask(*this, w);
    } else {
      stealing_.queued(w, key);
      run_reservations(w);
      if (pipelining_.on()) pipelining_.ask_ahead(*this, w);
    }
  }

 private:
  enum Kind : int32_t { kReserve, kGetTask, kReply, kCancel };  // steal.h's kinds come after

  // Late binding: a reservation at the head with a free slot holds it and asks for a task.
  void run_reservations(int64_t w) {
    Reservation r;
    while (queues_.dequeue(w, r)) {
      stealing_.dequeued(w, r.job_id);
      ask_for_task(w, r.job_id, r.user);
    }
  }

  // GetTask for the reservation keyed `key`, which holds a slot of worker w now.
  void ask_for_task(int64_t w, int64_t key, int32_t user) {
    send_get_task(w, key, user);
    if (pipelining_.on()) pipelining_.asked(w, stealing_.keys().job(key));
  }

  void on_reserve(int64_t id) {
    const Job& job = c_.pool.get(id);
    queues_.for_each_prefetched(c_.words.data(), c_.words.size(), id, [&](int64_t w) {
      if (queues_.enqueue(w, id, job.user, job.priority)) {
        ask_for_task(w, id, job.user);
        if (pipelining_.on()) pipelining_.deep_ask(*this, w);
      } else {
        run_reservations(w);
        if (pipelining_.on()) pipelining_.ask_ahead(*this, w);
      }
    });
  }

  void on_reply(const Msg& m) {
    if (pipelining_.on()) return pipelining_.on_reply(*this, m);
    if (m.task >= 0) {
      c_.start(m.worker, c_.pool.get(m.job), m.task, m.aux);
      return;
    }
    ++c_.free[m.worker];
    queues_.queue(m.worker).refund(m.user);
    run_reservations(m.worker);
    stealing_.if_idle(m.worker);
  }

  void on_cancel(int64_t id) {
    Job* job = c_.pool.find(id);
    queues_.for_each_prefetched(c_.words.data(), c_.words.size(), id, [&](int64_t w) {
      const int64_t removed = queues_.cancel(w, id);
      c_.out.counters.cancelled += removed;
      if (job != nullptr) job->live_reservations -= removed;
      if (removed > 0 && pipelining_.on()) pipelining_.deep_ask(*this, w);
    });
    if (job != nullptr) leave_table(*job);
  }

  // The scheduler: the reservation placed at m.task (asked for by m.worker) binds a task or none.
  void on_get_task(const Msg& m) {
    Job& job = c_.pool.get(m.job);  // live: this request's reservation is counted in it
    TaskTable& table = tables_[job.scheduler];
    const int64_t t = table.get_task(job.id, m.task);
    --job.live_reservations;
    if (t >= 0) {
      launch(m.worker, job, t, m.aux);
      if (++job.launched == job.n_tasks && c_.p.cancellation) {
        cancel_.clear();
        table.workers_to_cancel(job.id, cancel_);
        if (!cancel_.empty()) {
          c_.out.counters.cancel_messages += static_cast<int64_t>(cancel_.size());
          c_.send(kCancel, job.id, -1, -1, 0.0, 0, &cancel_);
        }
      }
    } else {
      ++c_.out.counters.get_task_empty;
      c_.send(kReply, job.id, m.worker, -1, m.aux, m.user);
    }
    leave_table(job);
  }

  // The Reply binding task t of job to worker w (its slot granted at `granted`). Its one effect
  // at the worker is the task's start when it arrives (on_reply: Cluster::start, which pushes
  // the completion). Where no completion can be pushed but from such starts (no pipelining, no
  // steal_wait timers), pushing it now, at the Reply's arrival time, keeps every decision: the
  // completions are pushed in the same order (Replies arrive in send order), each one's time is
  // the same arithmetic, and none can pop before the Reply would have arrived. The Reply is then
  // counted as delivered (messages, events) but costs no event (it would be a fifth of a
  // task's events).
  void launch(int64_t w, Job& job, int64_t t, double granted) {
    if (!fold_replies_) {
      c_.send(kReply, job.id, static_cast<int32_t>(w), t, granted);
      return;
    }
    c_.start_at(c_.arrival_of_send(), w, job, t, granted);
    ++c_.out.counters.messages;
    ++c_.out.counters.events;
  }

  // Once every task is launched and no reservation can still ask, the scheduler forgets the job.
  void leave_table(Job& job) {
    if (!job.in_table || job.launched < job.n_tasks || job.live_reservations > 0) return;
    if (job.live_reservations < 0) throw std::logic_error("simulator: negative reservation count");
    tables_[job.scheduler].remove_job(job.id);
    job.in_table = false;
    c_.release_if_done(job);
  }

  Cluster& c_;
  WorkerQueues queues_;
  std::vector<TaskTable> tables_;
  WorkStealing stealing_;
  Pipelining pipelining_;
  bool fold_replies_;  // launch(): a Reply with a task pushes its completion when sent
  std::vector<int64_t> workers_, tags_, cancel_;  // scratch
};

}  // namespace sim
}  // namespace sparrow
