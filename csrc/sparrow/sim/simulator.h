// Simulator: a discrete-event simulation of a Sparrow cluster that makes every decision with
// the runtime's kernels (sparrow/rng.h, sampling.h, reservation_queue.h, task_table.h, steal.h).
//
// Model. n workers with s slots each. Jobs come from a Workload (workload.h) and are spread
// round-robin over independent schedulers. Every message takes the same one-way network delay,
// so messages are delivered in send order from a FIFO (sparrow/ring.h); task completions come
// from a heap (event_heap.h). A job reaches its scheduler submit_delay after it arrives, and a
// trace job that waits for others (dependencies) only once they finished and their results
// reached the client (result_delay later). Each task holds its slot launch_overhead before its
// duration starts. Ties in time: messages, then completions, then releases, then the next
// arrival. A job's response runs from its arrival to its last task's result reaching the
// client. Memory: O(workers + jobs in flight + events in flight) plus the outputs (plus, with
// dependencies, O(trace jobs + dependencies)).
//
// Structure. Cluster (cluster.h) holds what every policy shares; each placement policy is one
// unit in policy/ (random.h, per_task.h, batch.h, sparrow.h, omniscient.h; sparrow_steal is
// sparrow.h with steal.h's work stealing on, sparrow_pipelined with pipeline.h's pipelined late
// binding, sparrow_steal_pipelined with both), and Simulator<Policy> runs the event loop over
// one of them. The policy interface, called by the loop only:
//   explicit P(Cluster& c);            // its own state (queues, tables, central queue, ...)
//   void dispatch(Job& job);           // the job reached its scheduler now: first decision
//   void deliver(const Msg& m);        // a message of one of its own kinds (payload: c.words)
//   void complete(int64_t worker);     // a task of worker just ended (its slot is free again)
//   void timer(const Completion& t);   // optional: a timer it pushed (task < 0) fired
// To add a policy: write policy/<name>.h with that class,
// add its name to PlacementPolicy (params.h) and one case to simulate() below, and the name to
// the binding's table (_sim.pxi). A variant of an existing policy can instead be a unit that
// the policy holds and calls (as sparrow.h holds steal.h), turned on by its PlacementPolicy.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "sparrow/sim/cluster.h"
#include "sparrow/sim/params.h"
#include "sparrow/sim/policy/batch.h"
#include "sparrow/sim/policy/omniscient.h"
#include "sparrow/sim/policy/per_task.h"
#include "sparrow/sim/policy/random.h"
#include "sparrow/sim/policy/sparrow.h"

namespace sparrow {
namespace sim {

// A policy may push timers into the completion heap (a negative task: pipeline.h); it then has
// void timer(const Completion&), called when one fires.
template <class P, class = void>
struct HasTimers : std::false_type {};
template <class P>
struct HasTimers<P, std::void_t<decltype(std::declval<P&>().timer(std::declval<const Completion&>()))>>
    : std::true_type {};

// A policy may have void prefetch(size_t k): a hint for message c.msgs[k], still in flight, to
// start loading what its handler will read (no decision may depend on it).
template <class P, class = void>
struct HasPrefetch : std::false_type {};
template <class P>
struct HasPrefetch<P, std::void_t<decltype(std::declval<P&>().prefetch(size_t{0}))>> : std::true_type {};

template <class Policy>
class Simulator {
 public:
  Simulator(const SimParams& p, SimOutput& out) : c_(p, out), policy_(c_) {}

  void run() {
    Cluster& c = c_;
    int64_t next_poll = kPollEvents;
    // Counts an event; every kPollEvents events, asks should_stop (true: stop now).
    auto stop = [&c, &next_poll]() {
      if (++c.out.counters.events < next_poll) return false;
      next_poll = c.out.counters.events + kPollEvents;
      if (c.p.should_stop == nullptr || !c.p.should_stop(c.p.should_stop_arg)) return false;
      c.out.counters.interrupted = true;
      return true;
    };
    for (;;) {
      // The next release or arrival: only those events and completions change it, no message.
      const double t_job = std::min(c.t_release, c.workload.next_arrival());
      // Messages first (ties: messages, then completions, then releases, then the next arrival).
      while (!c.msgs.empty() && c.msgs.front().time <= std::min(c.heap.next_time(), t_job)) {
        if (stop()) return;
        const Msg m = c.receive();
        if constexpr (HasPrefetch<Policy>::value) {
          if (c.msgs.size() >= kAhead) policy_.prefetch(kAhead - 1);
        }
        policy_.deliver(m);
      }
      const double t_done = c.heap.next_time();  // kNever if none
      if (t_done <= t_job) {
        if (__builtin_expect(t_done == Workload::kNever, 0)) break;  // nothing is left (no message either)
        if (stop()) return;
        const Completion done = c.heap.pop();
        if constexpr (HasTimers<Policy>::value) {
          if (done.task < 0) {  // a policy's timer, not a task
            policy_.timer(done);
            continue;
          }
        }
        c.complete(done);
        policy_.complete(done.worker);
      } else if (stop()) {
        return;
      } else if (c.t_release <= c.workload.next_arrival()) {
        policy_.dispatch(c.release_next());
      } else if (Job* job = c.arrive()) {
        policy_.dispatch(*job);
      }
    }
    c.out.counters.end_time = c.now;
    if (c.pool.live() != 0)
      throw std::logic_error("simulator: " + std::to_string(c.pool.live()) + " jobs never released");
  }

 private:
  // How many messages ahead of the one delivered the policy's prefetch looks: each message is
  // hinted once, this many deliveries before its own (measured: 4..16 about the same).
  static constexpr size_t kAhead = 8;

  Cluster c_;
  Policy policy_;
};

// Runs one simulation; throws std::invalid_argument for a broken configuration.
inline void simulate(const SimParams& params, SimOutput& out) {
  switch (params.policy) {
    case PlacementPolicy::Random:
      return Simulator<RandomPolicy>(params, out).run();
    case PlacementPolicy::PerTask:
      return Simulator<PerTaskPolicy>(params, out).run();
    case PlacementPolicy::Batch:
      return Simulator<BatchPolicy>(params, out).run();
    case PlacementPolicy::Sparrow:
    case PlacementPolicy::SparrowSteal:
    case PlacementPolicy::SparrowPipelined:
    case PlacementPolicy::SparrowStealPipelined:
      return Simulator<SparrowPolicy>(params, out).run();
    case PlacementPolicy::Omniscient:
      return Simulator<OmniscientPolicy>(params, out).run();
  }
  throw std::invalid_argument("unknown placement policy " + std::to_string(static_cast<int>(params.policy)));
}

}  // namespace sim
}  // namespace sparrow
