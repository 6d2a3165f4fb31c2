// Probe selection for one job under its constraints: which workers get the job's reservations
// and which task each probe is made for. The one place this is decided: the simulator
// (sim/simulator.h, sim/workload.h) and the runtime's scheduler (through the binding's
// sparrow_core.sample_job) both call it.
//
// Assumptions. Worker ids are [0, n_workers). A job may have a job constraint (its candidates:
// distinct workers; none = every worker), per-task constraints (task t's own candidates, flat
// with offsets; an empty range = unconstrained) and per-task preferences (task t's preferred
// workers, flat with offsets, distinct: where its inputs are; a soft placement). Probes may be
// asked for some of its tasks only (a re-probe of the unlaunched ones). d is the probe ratio.
//
// The rule. A constrained task may run on its own candidates that are also the job's; an
// unconstrained task on the job's candidates (its allowed workers). A task's preferred workers
// count among its allowed ones only (the others are ignored: a preference never makes a task
// infeasible nor lets it run outside its constraints). A constrained task left with none is
// infeasible: sample_job and candidates_within return that task (the first one) and draw nothing. Infeasible
// is an answer, not an exception; broken contracts (a worker id out of range, a candidate listed
// twice, offsets that decrease) throw std::invalid_argument, also before any draw.
//
// Algorithm (m tasks probed, c job candidates, k probes):
//   no constrained task  probe_count(m, d) probes among the job's candidates by Floyd's
//                        algorithm (sampling.h): the draws of sample_batch. O(k).
//   else                 1. no draw yet: each constrained task's allowed workers, its own
//                           candidates tested against a bitmap of the job's (O(c + own); with
//                           no job constraint, range checks only: O(own)); each preferring
//                           task's allowed preferred workers Q (O(pref), and O(own) for a
//                           constrained one: Q then in the order of its allowed workers).
//                        2. ceil(d) probes per constrained or preferring task, in task order.
//                           Without a preference, among its allowed workers. With one ("probe
//                           these first, then random ones"): a = min(|Q|, max(ceil(d) - 1, 1))
//                           distinct ones of Q (Floyd), then ceil(d) - a among its allowed
//                           workers outside Q (as step 3 draws, Q taken), so that a busy
//                           preferred worker never holds it alone (but at d = 1); all of them
//                           on Q when it has no other allowed worker. An unconstrained task
//                           none of whose preferred workers is allowed counts as unpreferring.
//                           With per_task (per-task sampling), every other unconstrained task
//                           too: ceil(d) distinct probes among the job's candidates, its own
//                           (no job constraint: the draws of sample_per_task).
//                        3. the m_u remaining unconstrained tasks together: probe_count(m_u, d)
//                           probes among the job's candidates not probed in 2, by rejection sampling
//                           while at least half of them are free (O(k) expected), else Floyd
//                           over the enumerated free candidates (O(c): the crowded case); past
//                           the free ones, the wrap rule over all the job's candidates.
// Each probe records the task it was made for (-1: any unconstrained task; a preferring or
// per-task sampled task's are made for it, so the TaskTable must know it as soft), the input of
// TaskTable::reserve. (The binding's sample_constrained is sample_job without a job constraint.)
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparrow/id_set.h"
#include "sparrow/rng.h"
#include "sparrow/sampling.h"

namespace sparrow {

// One job's request for probes; the pointed-to arrays belong to the caller.
struct JobRequest {
  int64_t n_workers = 0;                     // worker ids are [0, n_workers)
  const int64_t* candidates = nullptr;       // the job constraint, distinct ids; nullptr: every worker
  int64_t n_candidates = 0;
  int64_t n_tasks = 0;
  const int64_t* task_candidates = nullptr;  // task t's: [task_offsets[t], task_offsets[t + 1])
  const int64_t* task_offsets = nullptr;     // n_tasks + 1 entries, >= 0; nullptr: no task constrained
  const int64_t* tasks = nullptr;            // the tasks to probe for, increasing; nullptr: all of them
  int64_t n_selected = 0;
  double probe_ratio = 2.0;
  const int64_t* prefer = nullptr;           // task t's preferred: [prefer_offsets[t], prefer_offsets[t + 1])
  const int64_t* prefer_offsets = nullptr;   // n_tasks + 1 entries, >= 0; nullptr: no task prefers any worker
  bool per_task = false;                     // per-task sampling: each task probes for itself
};

// What sample_job and candidates_within return when every task can be placed.
constexpr int64_t kFeasible = -1;

namespace detail {

// A constrained or preferring task's allowed workers: [begin, end) of the job scratch's `allowed`
// when the job has a job constraint, else of the request's task_candidates (its own candidates,
// not copied), or the job's population when job_wide (an unconstrained task); its allowed
// preferred workers Q: [prefer_begin, prefer_end) of the job scratch's `preferred` (empty: none).
struct TaskWorkers {
  int64_t task, begin, end, prefer_begin, prefer_end;
  bool job_wide;
};

// The per-thread scratch space of sample_job, next to sampling.h's (looked up once per call, as
// there): the job's candidates for membership tests (bitmap up to kBitmapLimit workers, else the
// hash set) and the constrained tasks' allowed workers.
struct JobScratch {
  Bitmap member;
  IdSet member_set;
  std::vector<int64_t> allowed;
  std::vector<int64_t> preferred;
  std::vector<TaskWorkers> groups;
};

__attribute__((noinline)) inline JobScratch& job_scratch() {
  thread_local JobScratch s;
  return s;
}

inline void check_request(const JobRequest& r) {
  auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
  if (r.n_workers < 0) fail("n_workers must be >= 0, got " + std::to_string(r.n_workers));
  if (r.n_tasks < 0) fail("n_tasks must be >= 0, got " + std::to_string(r.n_tasks));
  probe_count(0, r.probe_ratio);  // throws for a probe ratio that is not valid_probe_ratio
  if (r.candidates != nullptr && r.n_candidates < 0)
    fail("candidates: the count must be >= 0, got " + std::to_string(r.n_candidates));
  for (auto [offsets, name] :
       {std::pair{r.task_offsets, "task_offsets"}, std::pair{r.prefer_offsets, "prefer_offsets"}}) {
    if (offsets == nullptr) continue;
    if (offsets[0] < 0) fail(std::string(name) + " must be >= 0, got " + std::to_string(offsets[0]));
    for (int64_t t = 0; t < r.n_tasks; ++t)
      if (offsets[t + 1] < offsets[t]) fail(std::string(name) + " must not decrease (task " + std::to_string(t) + ")");
  }
  if (r.tasks != nullptr) {
    if (r.n_selected < 0) fail("tasks: the count must be >= 0, got " + std::to_string(r.n_selected));
    for (int64_t i = 0; i < r.n_selected; ++i) {
      const int64_t t = r.tasks[i];
      if (t < 0 || t >= r.n_tasks)
        fail("tasks: task " + std::to_string(t) + " is out of range [0, " + std::to_string(r.n_tasks) + ")");
      if (i > 0 && t <= r.tasks[i - 1]) fail("tasks must be increasing, got " + std::to_string(t) + " after " +
                                             std::to_string(r.tasks[i - 1]));
    }
  }
}

// The job's candidates, checked (distinct, in range) and marked for membership tests while this
// lives (the member bitmap up to kBitmapLimit workers, else the member hash set); the bitmap is
// cleared again on destruction, whatever happened after.
class JobMembers {
 public:
  JobMembers(const JobRequest& r, JobScratch& s) : r_(r), s_(s), bitmap_(r.n_workers <= kBitmapLimit) {
    if (r.candidates != nullptr)
      check_candidates(r.candidates, r.n_candidates, r.n_workers, s.member, s.member_set, /*keep=*/true);
  }
  ~JobMembers() {
    if (r_.candidates != nullptr && bitmap_)
      for (int64_t i = 0; i < r_.n_candidates; ++i) s_.member.unmark(r_.candidates[i]);
  }
  JobMembers(const JobMembers&) = delete;
  JobMembers& operator=(const JobMembers&) = delete;

  bool contains(int64_t w) const {
    return r_.candidates == nullptr || (bitmap_ ? s_.member.test(w) : s_.member_set.contains(w));
  }

 private:
  const JobRequest& r_;
  JobScratch& s_;
  bool bitmap_;
};

// Task t's preferred workers prefer[lo, hi) are distinct ids of [0, n_workers), else
// invalid_argument naming the task; with keep they stay marked in s (see check_candidates).
inline void check_preferred(const JobRequest& r, int64_t t, int64_t lo, int64_t hi, Scratch& s, bool keep) {
  try {
    check_candidates(r.prefer + lo, hi - lo, r.n_workers, s.bitmap, s.set, keep, "prefer");
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("task " + std::to_string(t) + ": " + e.what());
  }
}

// The rule (step 1), after checking the whole request: for each probed constrained task, in
// order, where its allowed workers are (TaskWorkers; with a job constraint they are filtered
// into js.allowed, else they are its own candidates); the number of unconstrained probed tasks
// in n_unconstrained. Returns kFeasible or the first task left with no worker. Throws for a
// broken contract (a bad candidate list names its task). No draw.
inline int64_t allowed_workers(const JobRequest& r, Scratch& s, JobScratch& js, int64_t& n_unconstrained) {
  check_request(r);
  js.allowed.clear();
  js.preferred.clear();
  js.groups.clear();
  const int64_t m = r.tasks != nullptr ? r.n_selected : r.n_tasks;
  n_unconstrained = 0;
  if (r.task_offsets == nullptr && r.prefer_offsets == nullptr && !r.per_task) {
    if (r.candidates != nullptr) check_candidates(r.candidates, r.n_candidates, r.n_workers, s);
    n_unconstrained = m;
    return kFeasible;
  }
  JobMembers members(r, js);  // checks the job's candidates
  for (int64_t i = 0; i < m; ++i) {
    const int64_t t = r.tasks != nullptr ? r.tasks[i] : i;
    const int64_t lo = r.task_offsets != nullptr ? r.task_offsets[t] : 0;
    const int64_t hi = r.task_offsets != nullptr ? r.task_offsets[t + 1] : 0;
    const int64_t plo = r.prefer_offsets != nullptr ? r.prefer_offsets[t] : 0;
    const int64_t phi = r.prefer_offsets != nullptr ? r.prefer_offsets[t + 1] : 0;
    if (hi == lo) {
      const int64_t start = static_cast<int64_t>(js.preferred.size());
      if (phi > plo) {
        check_preferred(r, t, plo, phi, s, false);
        for (int64_t j = plo; j < phi; ++j)
          if (members.contains(r.prefer[j])) js.preferred.push_back(r.prefer[j]);
      }
      const int64_t end = static_cast<int64_t>(js.preferred.size());
      if (end == start && !r.per_task) {
        ++n_unconstrained;
      } else {
        js.groups.push_back(TaskWorkers{t, 0, 0, start, end, true});
      }
      continue;
    }
    const int64_t* own = r.task_candidates + lo;
    try {
      check_candidates(own, hi - lo, r.n_workers, s);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("task " + std::to_string(t) + ": " + e.what());
    }
    int64_t begin = lo, end = hi;  // every worker is the job's: its own candidates
    if (r.candidates != nullptr) {
      begin = static_cast<int64_t>(js.allowed.size());
      for (int64_t j = 0; j < hi - lo; ++j)
        if (members.contains(own[j])) js.allowed.push_back(own[j]);
      end = static_cast<int64_t>(js.allowed.size());
      if (end == begin) return t;
    }
    const int64_t start = static_cast<int64_t>(js.preferred.size());
    if (phi > plo) {  // Q: its allowed workers that it prefers, in their order
      check_preferred(r, t, plo, phi, s, true);
      const int64_t* allowed = (r.candidates != nullptr ? js.allowed.data() : r.task_candidates) + begin;
      const bool bitmap = r.n_workers <= kBitmapLimit;
      for (int64_t j = 0; j < end - begin; ++j)
        if (bitmap ? s.bitmap.test(allowed[j]) : s.set.contains(allowed[j])) js.preferred.push_back(allowed[j]);
      if (bitmap)
        for (int64_t j = plo; j < phi; ++j) s.bitmap.unmark(r.prefer[j]);
    }
    js.groups.push_back(TaskWorkers{t, begin, end, start, static_cast<int64_t>(js.preferred.size()), false});
  }
  return kFeasible;
}

// The array a TaskWorkers range of allowed_workers indexes.
inline const int64_t* allowed_base(const JobRequest& r, const JobScratch& js) {
  return r.candidates != nullptr ? js.allowed.data() : r.task_candidates;
}

// k workers of the population (the job's candidates, or [0, n_pop) when nullptr).
inline void sample_population(Rng& rng, const int64_t* population, int64_t n_pop, int64_t k,
                              std::vector<int64_t>& out, Scratch& s) {
  if (population != nullptr) {
    sample_from(rng, population, n_pop, k, out, s);
  } else {
    sample_workers(rng, n_pop, k, out, s);
  }
}

// Step 3's draws: k members of the population that take(w) accepts (marking them), appended to
// workers. is_free(w) only tests; forget() drops the marks (the scratch space is then free for
// Floyd). Rejection sampling while n_free >= 2k, else Floyd over the enumerated free members.
template <typename Take, typename IsFree, typename Forget>
void draw_unprobed(Rng& rng, const int64_t* population, int64_t n_pop, int64_t k, int64_t n_free, Take take,
                   IsFree is_free, Forget forget, std::vector<int64_t>& workers, Scratch& s) {
  auto member = [population](int64_t i) { return population == nullptr ? i : population[i]; };
  if (n_free >= 2 * k) {
    for (int64_t drawn = 0; drawn < k;) {
      const int64_t w = member(static_cast<int64_t>(rng.below(static_cast<uint64_t>(n_pop))));
      if (take(w)) {
        workers.push_back(w);
        ++drawn;
      }
    }
    return;
  }
  std::vector<int64_t> free_list;
  free_list.reserve(static_cast<size_t>(n_free));
  for (int64_t i = 0; i < n_pop; ++i)
    if (is_free(member(i))) free_list.push_back(member(i));
  forget();
  const int64_t on_free = std::min(k, n_free);
  if (on_free > 0) sample_from(rng, free_list.data(), n_free, on_free, workers, s);
  if (k > on_free) sample_population(rng, population, n_pop, k - on_free, workers, s);
}

// Step 3: k probes among the population's members not probed by workers[first..).
inline void sample_unprobed(Rng& rng, const int64_t* population, int64_t n_pop, int64_t n_workers, int64_t k,
                            size_t first, std::vector<int64_t>& workers, Scratch& s) {
  const size_t end = workers.size();
  if (n_workers <= kBitmapLimit) {
    // Taken workers in the bitmap (one bit test per draw), cleared again before returning.
    Bitmap& taken = s.bitmap;
    taken.ensure(n_workers);
    int64_t n_taken = 0;
    for (size_t i = first; i < end; ++i) n_taken += taken.mark(workers[i]);
    bool marked = true;  // until forget(): then the probes are unmarked already
    auto unmark = [&](size_t from, size_t to) {
      for (size_t i = from; i < to; ++i) taken.unmark(workers[i]);
    };
    draw_unprobed(
        rng, population, n_pop, k, n_pop - n_taken, [&taken](int64_t w) { return taken.mark(w); },
        [&taken](int64_t w) { return !taken.test(w); },
        [&] {
          unmark(first, end);
          marked = false;
        },
        workers, s);
    if (marked) unmark(first, workers.size());
    return;
  }
  IdSet& taken = s.set;
  taken.reset((end - first) + static_cast<size_t>(k));
  for (size_t i = first; i < end; ++i) taken.insert(workers[i]);
  draw_unprobed(
      rng, population, n_pop, k, n_pop - static_cast<int64_t>(taken.size()),
      [&taken](int64_t w) { return taken.insert(w); }, [&taken](int64_t w) { return !taken.contains(w); }, [] {},
      workers, s);
}

// Step 2 for a task with allowed preferred workers Q: a of them, then per_task - a among its
// allowed workers outside Q (Q is put at the end of workers meanwhile, for sample_unprobed to
// take, and removed again); all per_task on Q when Q is all of its allowed workers.
inline void sample_preferring(Rng& rng, const JobRequest& r, const int64_t* base, const TaskWorkers& g,
                              const JobScratch& js, int64_t per_task, std::vector<int64_t>& workers, Scratch& s) {
  const int64_t* q = js.preferred.data() + g.prefer_begin;
  const int64_t n_q = g.prefer_end - g.prefer_begin;
  const int64_t* population = g.job_wide ? r.candidates : base + g.begin;  // nullptr: [0, n_workers)
  const int64_t n_pop = g.job_wide ? (r.candidates != nullptr ? r.n_candidates : r.n_workers) : g.end - g.begin;
  if (n_q == n_pop) {
    sample_from(rng, q, n_q, per_task, workers, s);
    return;
  }
  const int64_t a = std::min(n_q, std::max<int64_t>(per_task - 1, 1));
  sample_from(rng, q, n_q, a, workers, s);
  if (per_task == a) return;
  const size_t at = workers.size();
  workers.insert(workers.end(), q, q + n_q);
  sample_unprobed(rng, population, n_pop, r.n_workers, per_task - a, at, workers, s);
  workers.erase(workers.begin() + static_cast<std::ptrdiff_t>(at),
                workers.begin() + static_cast<std::ptrdiff_t>(at + static_cast<size_t>(n_q)));
}

}  // namespace detail

// Appends the job's probes to workers and, for each, the task it was made for (-1: any
// unconstrained task without a preference) to made_for. Returns kFeasible, or the first task whose
// candidates and the job's have no worker in common: then nothing is appended and rng is untouched.
inline int64_t sample_job(Rng& rng, const JobRequest& r, std::vector<int64_t>& workers,
                          std::vector<int64_t>& made_for) {
  detail::Scratch& s = detail::scratch();
  detail::JobScratch& js = detail::job_scratch();
  int64_t n_unconstrained = 0;
  const int64_t infeasible = detail::allowed_workers(r, s, js, n_unconstrained);
  if (infeasible != kFeasible) return infeasible;
  const int64_t n_pop = r.candidates != nullptr ? r.n_candidates : r.n_workers;
  const int64_t k = probe_count(n_unconstrained, r.probe_ratio);
  detail::check_sizes(n_pop, k, r.candidates != nullptr ? "candidates" : "n_workers");
  if (js.groups.empty()) {  // no constrained task: batch sampling
    detail::sample_population(rng, r.candidates, n_pop, k, workers, s);
    made_for.insert(made_for.end(), static_cast<size_t>(k), -1);
    return kFeasible;
  }
  const int64_t per_task = probe_count(1, r.probe_ratio);
  const int64_t* base = detail::allowed_base(r, js);
  const size_t first = workers.size();
  for (const detail::TaskWorkers& g : js.groups) {
    if (g.prefer_end == g.prefer_begin) {
      if (g.job_wide) {  // per-task sampling
        detail::sample_population(rng, r.candidates, n_pop, per_task, workers, s);
      } else {
        detail::sample_from(rng, base + g.begin, g.end - g.begin, per_task, workers, s);
      }
    } else {
      detail::sample_preferring(rng, r, base, g, js, per_task, workers, s);
    }
    made_for.insert(made_for.end(), static_cast<size_t>(per_task), g.task);
  }
  if (k > 0) {
    detail::sample_unprobed(rng, r.candidates, n_pop, r.n_workers, k, first, workers, s);
    made_for.insert(made_for.end(), static_cast<size_t>(k), -1);
  }
  return kFeasible;
}

// The rule alone: flat and offsets (replaced) give each probed task's allowed workers, task
// i's at flat[offsets[i], offsets[i + 1]) (m + 1 offsets; an empty range is an unconstrained
// task, free to use every job candidate). Returns kFeasible, or the first task left with no
// worker (the outputs are then unspecified).
inline int64_t candidates_within(const JobRequest& r, std::vector<int64_t>& flat, std::vector<int64_t>& offsets) {
  detail::JobScratch& js = detail::job_scratch();
  int64_t n_unconstrained = 0;
  const int64_t infeasible = detail::allowed_workers(r, detail::scratch(), js, n_unconstrained);
  if (infeasible != kFeasible) return infeasible;
  const int64_t* base = detail::allowed_base(r, js);
  const int64_t m = r.tasks != nullptr ? r.n_selected : r.n_tasks;
  flat.clear();
  offsets.assign(1, 0);
  size_t g = 0;
  for (int64_t i = 0; i < m; ++i) {
    const int64_t t = r.tasks != nullptr ? r.tasks[i] : i;
    if (g < js.groups.size() && js.groups[g].task == t) {
      if (!js.groups[g].job_wide) flat.insert(flat.end(), base + js.groups[g].begin, base + js.groups[g].end);
      ++g;
    }
    offsets.push_back(static_cast<int64_t>(flat.size()));
  }
  return kFeasible;
}

}  // namespace sparrow
