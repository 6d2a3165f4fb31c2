// The omniscient multi-resource packer: the baseline Sparrow's placement is measured against.
//
// Model. One central queue sees every task and every host's free resources at once, and placing
// costs no time (no messages). Whenever a job arrives or a task ends, it places tasks until none
// fits anywhere: each time the oldest waiting task (arrival order) among those some host can hold
// now, on a host of the smallest class that holds it (classes ordered by their capacity relative to
// the largest of each kind, summed: so a host with a GPU stays free for a task that needs one). It
// backfills greedily, with no reservation for a large task, as a work-conserving packer does.
// Algorithm. The tasks of a request class are alike, so the queue is one FIFO of jobs per class
// and only each class's head is looked at; a set per (request class, host class) holds the hosts
// that fit that request now, kept up to date as a host's free resources change: O(classes x kinds)
// per change, O(request classes x host classes) per placement.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <numeric>
#include <vector>

#include "sparrow/resources.h"
#include "sparrow/sim/resource/cluster.h"

namespace sparrow {
namespace sim {

class ResourcePacker {
 public:
  explicit ResourcePacker(ResourceCluster& c)
      : c_(c), n_req_(c.p.n_request_classes), n_host_(c.p.n_host_classes), waiting_(static_cast<size_t>(n_req_)) {
    order_hosts();
    fit_.resize(static_cast<size_t>(n_req_ * n_host_));
    position_.assign(static_cast<size_t>(n_req_ * c.p.n_workers), -1);
    placed_.assign(static_cast<size_t>(c.p.n_jobs), 0);
    for (int64_t w = 0; w < c.p.n_workers; ++w) refresh(w);
  }

  void handle(const TimedEvent& e) {
    if (e.kind == ResourceEvent::Arrival) {
      c_.next_arrival(e.job);
      waiting_[c_.out.job_class[e.job]].push_back(e.job);
    } else {  // Done: the packer has no other event
      c_.release(e.host, e.job);
      c_.finish(e.job);
      refresh(e.host);
    }
    place();
  }

 private:
  // Host classes from the smallest to the largest: capacity over the largest of each kind, summed.
  void order_hosts() {
    const int64_t r = c_.r;
    std::vector<double> size(static_cast<size_t>(n_host_), 0.0);
    for (int64_t k = 0; k < r; ++k) {
      int64_t largest = 0;
      for (int64_t h = 0; h < n_host_; ++h) largest = std::max(largest, c_.p.host_capacity[h * r + k]);
      if (largest > 0)
        for (int64_t h = 0; h < n_host_; ++h)
          size[h] += static_cast<double>(c_.p.host_capacity[h * r + k]) / static_cast<double>(largest);
    }
    host_order_.resize(static_cast<size_t>(n_host_));
    std::iota(host_order_.begin(), host_order_.end(), int64_t{0});
    std::stable_sort(host_order_.begin(), host_order_.end(), [&size](int64_t a, int64_t b) { return size[a] < size[b]; });
  }

  // Puts host w in, or takes it out of, the fit set of every request class.
  void refresh(int64_t w) {
    const int64_t h = c_.out.host_class[w];
    for (int64_t q = 0; q < n_req_; ++q) {
      const bool now_fits = fits(c_.free_of(w), c_.p.request + q * c_.r, c_.r);
      int64_t& at = position_[q * c_.p.n_workers + w];
      std::vector<int64_t>& set = fit_[q * n_host_ + h];
      if (now_fits && at < 0) {
        at = static_cast<int64_t>(set.size());
        set.push_back(w);
      } else if (!now_fits && at >= 0) {
        position_[q * c_.p.n_workers + set.back()] = at;
        set[at] = set.back();
        set.pop_back();
        at = -1;
      }
    }
  }

  // A host that holds request class q now, of the smallest class; -1: none.
  int64_t host_for(int64_t q) const {
    for (int64_t h : host_order_) {
      const std::vector<int64_t>& set = fit_[q * n_host_ + h];
      if (!set.empty()) return set.back();
    }
    return -1;
  }

  void place() {
    for (;;) {
      int64_t best = -1, host = -1;
      for (int64_t q = 0; q < n_req_; ++q) {
        if (waiting_[q].empty() || (best >= 0 && waiting_[q].front() > waiting_[best].front())) continue;
        const int64_t w = host_for(q);
        if (w >= 0) best = q, host = w;
      }
      if (best < 0) return;
      const int64_t job = waiting_[best].front();
      const int64_t task = placed_[job]++;
      if (placed_[job] == c_.p.tasks_per_job) waiting_[best].pop_front();
      c_.hold(host, job);
      refresh(host);
      c_.push(c_.start(job, task), ResourceEvent::Done, host, job, task);
    }
  }

  ResourceCluster& c_;
  const int64_t n_req_, n_host_;
  std::vector<std::deque<int64_t>> waiting_;  // per request class, its jobs with tasks not placed, oldest first
  std::vector<int64_t> host_order_;
  std::vector<std::vector<int64_t>> fit_;     // per (request class, host class): the hosts that fit it now
  std::vector<int64_t> position_;             // per (request class, host): its index in its fit set, -1: not in
  std::vector<int64_t> placed_;               // tasks placed, per job
};

}  // namespace sim
}  // namespace sparrow
