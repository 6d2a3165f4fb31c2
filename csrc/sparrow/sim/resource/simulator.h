// The resource simulator: heterogeneous hosts and tasks that ask for resources, placed by Sparrow
// (resource/sparrow.h: probes where the request fits, late binding, the fit launcher) or by the
// omniscient packer (resource/packer.h), on the same arrivals (resource/cluster.h).
//
// A driver of its own beside simulator.h: a task here holds a resource vector instead of one slot,
// and every event (arrivals, messages, completions) goes through one heap ordered by (time, push
// order). Each placement is a class with handle(const TimedEvent&); the loop pops events in order,
// sets the clock and hands each to it. Memory: O(workers x kinds + jobs x tasks_per_job).
#pragma once

#include <stdexcept>
#include <string>

#include "sparrow/sim/params.h"
#include "sparrow/sim/resource/cluster.h"
#include "sparrow/sim/resource/packer.h"
#include "sparrow/sim/resource/params.h"
#include "sparrow/sim/resource/sparrow.h"

namespace sparrow {
namespace sim {

template <class Placement>
void run_resources(const ResourceSimParams& params, ResourceSimOutput& out) {
  ResourceCluster c(params, out);
  Placement placement(c);
  ResourceCounters& counters = out.counters;
  while (!c.heap.empty()) {
    if (++counters.events % kPollEvents == 0 && params.should_stop != nullptr && params.should_stop(params.should_stop_arg)) {
      counters.interrupted = true;
      break;
    }
    const TimedEvent e = c.heap.top();
    c.heap.pop();
    c.now = e.time;
    placement.handle(e);
  }
  counters.end_time = c.now;
}

// Runs one simulation; throws std::invalid_argument for a broken configuration.
inline void simulate_resources(const ResourceSimParams& params, ResourceSimOutput& out) {
  switch (params.policy) {
    case ResourcePlacement::Sparrow:
      return run_resources<ResourceSparrow>(params, out);
    case ResourcePlacement::Packer:
      return run_resources<ResourcePacker>(params, out);
  }
  throw std::invalid_argument("unknown resource placement " + std::to_string(static_cast<int>(params.policy)));
}

}  // namespace sim
}  // namespace sparrow
