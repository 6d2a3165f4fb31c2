// Inputs and outputs of the resource simulator (resource/simulator.h): heterogeneous hosts, tasks
// that ask for resource vectors (sparrow/resources.h), and two placements to compare.
//
// Hosts come in classes (a capacity vector each; kind 0 is slots); host w's class is drawn once
// with the classes' shares. Jobs arrive as a Poisson process, each of tasks_per_job tasks of one
// request class (drawn with the request classes' shares; kind 0 of every request is one slot) with
// exponential durations. The workload is drawn from its own generator, so both placements see the
// same arrivals, classes and durations for one seed. Times are in seconds.
#pragma once

#include <cstdint>

namespace sparrow {
namespace sim {

enum class ResourcePlacement : int32_t {
  Sparrow = 0,  // batch sampling over the hosts that can hold the request + late binding + the fit launcher
  Packer = 1,   // omniscient: a central queue placing every task the moment some host fits it (packer.h)
};

struct ResourceSimParams {
  ResourcePlacement policy = ResourcePlacement::Sparrow;
  int64_t n_workers = 1000;
  int64_t n_kinds = 1;  // resource kinds of every vector (kind 0: slots)
  int64_t n_host_classes = 0;
  const int64_t* host_capacity = nullptr;  // n_host_classes x n_kinds, row-major
  const double* host_share = nullptr;      // n_host_classes, summing to 1
  int64_t n_request_classes = 0;
  const int64_t* request = nullptr;        // n_request_classes x n_kinds, row-major
  const double* request_share = nullptr;   // n_request_classes, summing to 1
  int64_t n_jobs = 1000;
  int64_t tasks_per_job = 10;
  double arrival_rate = 1.0;  // jobs per second
  double mean_duration = 0.1;
  double probe_ratio = 2.0;
  double network_delay = 0.0005;  // one way, every message (Sparrow only: the packer is omniscient)
  int64_t fit_window = 8;         // the fit launcher's rule (sparrow/fit_launcher.h)
  int64_t fit_max_skips = 8;
  uint64_t seed = 0;
  int (*should_stop)(void*) = nullptr;  // polled every kPollEvents events, as SimParams'
  void* should_stop_arg = nullptr;
};

struct ResourceCounters {
  int64_t probes = 0;          // reservations sent
  int64_t get_task = 0;        // reservations that reached the head and asked for a task
  int64_t get_task_empty = 0;  // ... answered "nothing left"
  int64_t cancelled = 0;       // reservations dropped after their job was fully launched
  int64_t skips = 0;           // launches that passed a host's head (the fit launcher's skip-ahead)
  int64_t owed = 0;            // decisions where a host held back for its head (max_skips reached)
  int64_t events = 0;
  double end_time = 0.0;
  bool interrupted = false;
};

struct ResourceSimOutput {
  double* job_arrival = nullptr;   // n_jobs each, arrival order
  double* job_response = nullptr;  // end of its last task - arrival
  double* job_wait = nullptr;      // the latest start of its tasks - arrival
  int32_t* job_class = nullptr;    // its request class
  int32_t* host_class = nullptr;   // n_workers: each host's class
  double* work = nullptr;          // n_kinds: units x seconds of running tasks
  double* held = nullptr;          // n_kinds: units x seconds held (running, or asking for a task)
  ResourceCounters counters;
};

}  // namespace sim
}  // namespace sparrow
