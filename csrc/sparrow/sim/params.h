// Simulator inputs and outputs: the plain structs the Python binding fills in and reads back.
//
// SimParams describes the cluster, the workload (generated, or a trace given as arrays) and
// the policy; SimOutput points at caller-owned arrays (one entry per job in arrival order,
// optionally one per task) and receives the counters. Times are in seconds.
#pragma once

#include <cstdint>
#include <vector>

#include "sparrow/reservation_queue.h"

namespace sparrow {
namespace sim {

enum class PlacementPolicy : int32_t {
  Random = 0, PerTask = 1, Batch = 2, Sparrow = 3, Omniscient = 4, SparrowSteal = 5,
  SparrowPipelined = 6, SparrowStealPipelined = 7
};
enum class DurationKind : int32_t { Exponential = 0, Constant = 1, Bimodal = 2, PerJob = 3 };

struct SimParams {
  PlacementPolicy policy = PlacementPolicy::Sparrow;
  int64_t n_workers = 1000;
  int32_t slots = 1;
  Policy queue_policy = Policy::Fifo;  // the workers' reservation queues
  double network_delay = 0.0005;
  // Replaying a runtime: a slot is held launch_overhead seconds before each task's duration
  // starts (handing the task to an executor); a job reaches its scheduler submit_delay after
  // its arrival (the client's submission) and a task's outcome reaches the client result_delay
  // after the task ends (job responses end there; a dependent job waits for it, then for its
  // own submission).
  double launch_overhead = 0.0;
  double submit_delay = 0.0;
  double result_delay = 0.0;
  double probe_ratio = 2.0;
  int32_t n_schedulers = 1;
  bool cancellation = true;
  uint64_t seed = 0;
  // Work stealing (policy SparrowSteal, sparrow/steal.h): peers asked per attempt, reservations
  // taken per steal at most, and how long a peer's slot must have been held to be a victim.
  int64_t steal_victims = 2;
  int64_t steal_max_take = 1;
  double steal_min_blocked = 0.0;
  double steal_wait = 0.0;  // seconds from an idle worker's reason to steal to its probes (policy/steal.h)
  // A replayed steal script (policy/steal_script.h; n_steal_script 0: none): attempt i was made by worker
  // steal_script_thief[i] at steal_script_at[i] (not decreasing) and probed steal_script_victims[
  // steal_script_offsets[i] .. steal_script_offsets[i + 1]); a thief's attempt probes those of its attempt
  // within steal_script_tolerance seconds, else draws its own.
  int64_t n_steal_script = 0;
  const double* steal_script_at = nullptr;
  const int64_t* steal_script_thief = nullptr;
  const int64_t* steal_script_offsets = nullptr;
  const int64_t* steal_script_victims = nullptr;
  double steal_script_tolerance = 0.0;
  // Pipelined late binding (policies SparrowPipelined, SparrowStealPipelined, policy/pipeline.h):
  // a busy slot asks for its next task once its task has run pipeline_after x the worker's recent
  // median run time (0: at once); up to pipeline_depth ahead per slot while the worker's tasks are
  // short (pipeline.h); pipeline_gate: asks ahead at all (even one deep) only while they are.
  double pipeline_after = 0.0;
  int32_t pipeline_depth = 1;
  bool pipeline_gate = false;
  // With pipeline_gate: the gate opens one deep also while the worker's recent run times are steady,
  // and a task then asks ahead just before its predicted end (pipeline.h, "Just in time").
  bool pipeline_jit = false;
  // With pipeline_gate: the gate opens one deep also while the recent run times are within 3x, a task
  // then asking ahead at its start (pipeline.h, "Steady"; pipeline_jit, if set too, keeps its own rule).
  bool pipeline_steady = false;

  // Generated workload (ignored when a trace is given).
  int64_t n_jobs = 1000;
  int64_t tasks_per_job = 100;
  double arrival_rate = 1.0;  // jobs per second
  DurationKind duration = DurationKind::Exponential;
  double mean_duration = 0.1;
  double bimodal_long_fraction = 0.1;
  double bimodal_ratio = 10.0;

  // Trace (n_trace_jobs > 0): job j arrives at trace_arrival[j] with trace_tasks[j] tasks whose
  // durations are trace_durations[trace_offsets[j] .. trace_offsets[j + 1]).
  int64_t n_trace_jobs = 0;
  const double* trace_arrival = nullptr;
  const int64_t* trace_tasks = nullptr;
  const int64_t* trace_offsets = nullptr;
  const double* trace_durations = nullptr;
  // Optional: the trace file's line of each job (error messages name it), and the trace's
  // constraints, which then replace the generated ones: job j may run on trace_job_candidates
  // [trace_job_offsets[j] .. trace_job_offsets[j + 1]) (an empty range: anywhere), its task t on
  // trace_task_candidates[trace_task_offsets[i] .. trace_task_offsets[i + 1]) with
  // i = trace_offsets[j] + t (an empty range: unconstrained).
  const int64_t* trace_lines = nullptr;
  const int64_t* trace_job_candidates = nullptr;
  const int64_t* trace_job_offsets = nullptr;
  const int64_t* trace_task_candidates = nullptr;
  const int64_t* trace_task_offsets = nullptr;
  // Optional dependencies (DAG stages): job j is released only once the jobs
  // trace_parents[trace_parent_offsets[j] .. trace_parent_offsets[j + 1]) (earlier jobs) have
  // finished and their results reached the client.
  const int64_t* trace_parents = nullptr;
  const int64_t* trace_parent_offsets = nullptr;
  // Optional replayed placement (a runtime's own probes): job j's reservations go to the workers
  // trace_probes[trace_probe_offsets[j] .. trace_probe_offsets[j + 1]) (a worker listed twice gets
  // two), at least one per task, instead of the batch sampling's draw; only without constraints.
  const int64_t* trace_probes = nullptr;
  const int64_t* trace_probe_offsets = nullptr;

  // Users (fair sharing): job user u drawn with probability user_demand[u]; weight user_weight[u].
  std::vector<double> user_weight{1.0};
  std::vector<double> user_demand{1.0};
  // Priorities: job priority p drawn with probability priority_share[p].
  std::vector<double> priority_share{1.0};

  // Constraints: a job is constrained with probability constrained_jobs to a random set of
  // round(constraint_workers * n_workers) workers; otherwise each of its tasks is constrained
  // with probability constrained_tasks to task_candidates random workers.
  double constrained_jobs = 0.0;
  double constraint_workers = 0.1;
  double constrained_tasks = 0.0;
  int64_t task_candidates = 3;

  // Polled every kPollEvents events from the simulating thread: nonzero stops the run early
  // (Counters::interrupted; the outputs then hold the jobs finished so far). The Python binding
  // checks for Ctrl-C here, so a long simulation can be interrupted.
  int (*should_stop)(void*) = nullptr;
  void* should_stop_arg = nullptr;
};

constexpr int64_t kPollEvents = int64_t{1} << 16;

struct Counters {
  int64_t probes = 0;            // probes / reservations sent to workers
  int64_t get_task = 0;          // get_task requests answered by schedulers
  int64_t get_task_empty = 0;    // ... answered "nothing left"
  int64_t cancel_messages = 0;   // cancellation messages sent (one per worker per job)
  int64_t cancelled = 0;         // reservations removed from worker queues by them
  int64_t messages = 0;          // network messages delivered
  int64_t events = 0;            // events processed (messages, completions, arrivals)
  int64_t max_jobs_in_flight = 0;
  int64_t steal_attempts = 0;    // work stealing: attempts started by idle workers
  int64_t steals = 0;            // ... that moved reservations
  int64_t stolen = 0;            // ... reservations moved
  int64_t steal_replayed = 0;    // ... attempts that probed a steal script's victims (the others drew theirs)
  int64_t asked_ahead = 0;       // pipelining: GetTasks sent for a slot still busy
  int64_t bound_ahead = 0;       // ... answered with a task that then waited for the slot
  double end_time = 0.0;         // simulated time of the last event
  bool interrupted = false;      // stopped early by SimParams::should_stop
};

struct SimOutput {
  double* job_arrival = nullptr;   // n_jobs each, arrival order
  double* job_response = nullptr;  // end of the last task - arrival
  double* job_ideal = nullptr;     // the job's longest task
  double* job_wait = nullptr;      // the longest queue wait of its tasks
  int32_t* job_user = nullptr;
  int32_t* job_priority = nullptr;
  double* task_wait = nullptr;     // optional (nullptr: not kept); job j's tasks at its task offset
  Counters counters;
};

}  // namespace sim
}  // namespace sparrow
