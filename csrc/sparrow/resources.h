// Resource vectors: how much of a host a task takes, and what a host holds.
//
// Model. A cluster names its resource kinds once (slots, cpus, memory, gpu, custom ones) and every
// amount is a vector of int64 units over those kinds, in the cluster's order: whole slots, milli-CPUs,
// bytes, whole GPUs, milli-units of a custom resource (the runtime's wire/resources.py converts the
// user's "0.5" or "4GiB" into units). Integers make "fits" exact: no rounding decides a placement.
// A host's capacity is one vector, a request another; a request fits when every component is at
// most what is free. The first kind is conventionally "slots" and every task asks for one, so the
// number of tasks at once is one more resource, not a special case.
//
// Algorithm. fits: one pass over the kinds, O(r). feasible_workers: the hosts whose capacity holds
// a request, O(n * r): the candidate set a job's probes are drawn from (sampling.h's constrained
// sampling), computed once per distinct request.
// Broken contracts (a negative amount, more kinds than kMaxResources) throw std::invalid_argument.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace sparrow {

// Resource kinds one cluster may name (bounds every vector a peer can make a kernel read).
constexpr int64_t kMaxResources = 64;

inline void check_resource_count(int64_t r) {
  if (r < 1 || r > kMaxResources)
    throw std::invalid_argument("resource kinds must be in [1, " + std::to_string(kMaxResources) + "], got " +
                                std::to_string(r));
}

// Throws unless every amount of the vector is >= 0; `name` says which vector in the message.
inline void check_amounts(const int64_t* amounts, int64_t r, const char* name) {
  for (int64_t k = 0; k < r; ++k)
    if (amounts[k] < 0)
      throw std::invalid_argument(std::string(name) + "[" + std::to_string(k) + "] must be >= 0, got " +
                                  std::to_string(amounts[k]));
}

// Whether request fits in free, component by component.
inline bool fits(const int64_t* free, const int64_t* request, int64_t r) {
  for (int64_t k = 0; k < r; ++k)
    if (request[k] > free[k]) return false;
  return true;
}

// Appends to out the ids of the hosts whose capacity (row w of the n x r row-major matrix) holds
// the request; returns how many. None is a normal result: no host could ever run the request.
inline int64_t feasible_workers(const int64_t* capacities, int64_t n_workers, int64_t r, const int64_t* request,
                                std::vector<int64_t>& out) {
  check_resource_count(r);
  if (n_workers < 0) throw std::invalid_argument("n_workers must be >= 0, got " + std::to_string(n_workers));
  check_amounts(request, r, "request");
  const size_t start = out.size();
  for (int64_t w = 0; w < n_workers; ++w)
    if (fits(capacities + w * r, request, r)) out.push_back(w);
  return static_cast<int64_t>(out.size() - start);
}

}  // namespace sparrow
