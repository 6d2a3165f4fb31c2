// TaskTable: the scheduler's late-binding state, one entry per job.
//
// A job has m tasks, some with candidate workers (per-task constraints: a task runs only on
// one of them), some with preferred workers instead (soft: a task prefers them but may run
// anywhere), and with per-task sampling the others bound to their own probes (soft too, but a
// bound task runs only where a reservation was made for it), and the probes (reservations) the scheduler placed for it, each at a worker and
// made for a task (-1: any unconstrained task). A probe made for a constrained task is at one
// of its candidates; one made for a soft task may be anywhere. When a worker's reservation
// reaches the head of its queue the worker asks get_task(job, worker), which consumes one of
// its outstanding reservations (one made for any task if it holds one, else the one made for
// the lowest task) and binds a task only now (late binding), preferring
//   1. the lowest unlaunched task a reservation at this worker was made for that lists this
//      worker (a constrained task's candidate, a soft task's preferred worker),
//   2. the lowest unlaunched task that lists this worker,
//   3. the lowest unlaunched soft task a reservation at this worker was made for (elsewhere
//      than it prefers: the probe that keeps a busy preferred worker from holding it),
//   4. the lowest unlaunched unconstrained task,
//   5. the lowest unlaunched soft task with preferred workers (any reservation of the job may
//      run it; never a bound task),
// or answers none (-1). Without soft tasks, rules 3 and 5 never apply. A task given both candidates and preferred workers is constrained:
// its preference only matters to where it is probed (job_probes.h). Decisions depend on the values only, never on the order the
// reservations were recorded in. Once all m tasks are launched, workers_to_cancel lists
// the workers still holding reservations (proactive cancellation, matched by job id value)
// and forgets them, so asking again gives nothing.
//
// Storage: a job's probes made for any task are a count per worker in an open-addressing
// map (flat_map.h; 8-byte slots while the job's workers are below 2^32 - 1, else 16-byte ones),
// so an unconstrained job needs no sort, its workers in first-reservation
// order beside it with pointers to their counts (so workers_to_cancel and remove_job make no
// lookup: it was 5% of the simulator's time with stealing); probes made for a constrained or
// soft task are kept apart, sorted by (worker, task, reservation order) when first needed. Job
// records are pooled and reused (their buffers with them) and found through a flat map of
// job ids, so a steady stream of jobs allocates nothing. A job holds at most 2^31 - 1
// outstanding reservations (the per-worker counts are 32-bit, to keep the map small).
// unlaunch(job, task) undoes a launch (give-back), launch_all marks every task launched.
// Costs (k probes, c candidates and preferred workers): add_job O(m + c log c); reserve O(k); get_task O(1)
// expected for a job without constrained tasks, else O(log k_c) after one O(k_c log k_c)
// sort of its k_c constrained probes (redone after a new reserve), plus the scan of that
// worker's probes and candidate tasks (rule 4: O(m) over the job's life); workers_to_cancel O(k) (plus a sort of the workers
// when constrained probes are held); remove_job O(k); get_task_many overlaps the cache
// misses of its requests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sparrow/flat_map.h"

namespace sparrow {

class TaskTable {
 public:
  // Task t's candidates are cand[cand_offsets[t], cand_offsets[t + 1]), its preferred workers
  // pref[pref_offsets[t], pref_offsets[t + 1]) (nullptr offsets: none; empty: none). With
  // per_task, the tasks with neither are bound to their own probes (per-task sampling).
  void add_job(int64_t job_id, int64_t n_tasks, const int64_t* cand = nullptr, const int64_t* cand_offsets = nullptr,
               const int64_t* pref = nullptr, const int64_t* pref_offsets = nullptr, bool per_task = false) {
    if (n_tasks < 0) throw std::invalid_argument("n_tasks must be >= 0, got " + std::to_string(n_tasks));
    if (index_.find(job_id) != nullptr) throw std::invalid_argument("job_id " + std::to_string(job_id) + " already exists");
    const uint32_t record = take_record();
    Job& job = records_[record];
    try {
      job.n_tasks = n_tasks;
      job.flags.assign(static_cast<size_t>(n_tasks), 0);
      for (int64_t t = 0; cand_offsets && t < n_tasks; ++t) {
        const int64_t lo = cand_offsets[t], hi = cand_offsets[t + 1];
        if (hi < lo) throw std::invalid_argument("candidates: offsets decrease at task " + std::to_string(t));
        if (hi == lo) continue;
        job.flags[t] = kConstrained;
        for (int64_t i = lo; i < hi; ++i) {
          if (cand[i] < 0)
            throw std::invalid_argument("candidates: task " + std::to_string(t) + " has a negative worker id " +
                                        std::to_string(cand[i]));
          job.candidate_index.emplace_back(cand[i], t);
        }
      }
      for (int64_t t = 0; pref_offsets && t < n_tasks; ++t) {
        const int64_t lo = pref_offsets[t], hi = pref_offsets[t + 1];
        if (hi < lo) throw std::invalid_argument("preferred: offsets decrease at task " + std::to_string(t));
        if (hi == lo || (job.flags[t] & kConstrained)) continue;  // a constraint governs
        job.flags[t] = kSoft | kAnywhere;
        job.has_soft = job.has_anywhere = true;
        for (int64_t i = lo; i < hi; ++i) {
          if (pref[i] < 0)
            throw std::invalid_argument("preferred: task " + std::to_string(t) + " has a negative worker id " +
                                        std::to_string(pref[i]));
          job.candidate_index.emplace_back(pref[i], t);
        }
      }
      for (int64_t t = 0; per_task && t < n_tasks; ++t)
        if (job.flags[t] == 0) {
          job.flags[t] = kSoft;
          job.has_soft = true;
        }
      std::sort(job.candidate_index.begin(), job.candidate_index.end());
      for (size_t i = 1; i < job.candidate_index.size(); ++i)
        if (job.candidate_index[i] == job.candidate_index[i - 1]) {
          const int64_t t = job.candidate_index[i].second;
          throw std::invalid_argument(std::string(job.flags[t] & kSoft ? "preferred" : "candidates") + ": task " +
                                      std::to_string(t) + " lists worker " +
                                      std::to_string(job.candidate_index[i].first) + " twice");
        }
      job.plain = job.candidate_index.empty() && !job.has_soft;
    } catch (...) {
      release_record(record);
      throw;
    }
    index_.try_emplace(job_id, record);
  }

  // Records n reservations: probe i at workers[i], made for tasks[i] (nullptr: all -1).
  void reserve(int64_t job_id, const int64_t* workers, const int64_t* tasks, int64_t n) {
    Job& job = find(job_id);
    if (n < 0 || n > kMaxOutstanding - job.outstanding)
      throw std::invalid_argument("workers: a job holds at most 2**31 - 1 outstanding reservations, got " +
                                  std::to_string(job.outstanding) + " + " + std::to_string(n));
    if (tasks == nullptr) return reserve_any(job, workers, n);
    int64_t n_any = 0;
    bool wide = false;  // a probe for any task at a worker beyond the compact map's keys
    for (int64_t i = 0; i < n; ++i) {
      const int64_t w = workers[i], t = tasks ? tasks[i] : -1;
      if (w < 0) throw std::invalid_argument("workers: negative worker id " + std::to_string(w));
      if (t < -1 || t >= job.n_tasks)
        throw std::invalid_argument("tasks: task " + std::to_string(t) + " is out of range [-1, " +
                                    std::to_string(job.n_tasks) + ")");
      if (t >= 0) {
        if (!(job.flags[t] & (kConstrained | kSoft)))
          throw std::invalid_argument("tasks: task " + std::to_string(t) + " is unconstrained; its probes use -1");
        if ((job.flags[t] & kConstrained) && !listed(job, w, t))
          throw std::invalid_argument("workers: worker " + std::to_string(w) + " is not a candidate of task " +
                                      std::to_string(t));
      } else {
        ++n_any;
        wide |= w >= kCompactKeys;
      }
    }
    make_room(job, n_any, wide);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = tasks ? tasks[i] : -1;
      if (t < 0) {
        bool inserted;
        int32_t* count = job.wide ? job.any_wide.emplace_reserved(workers[i], inserted)
                                  : job.any.emplace_reserved(workers[i], inserted);
        ++*count;
        if (inserted) {
          job.any_workers.push_back(workers[i]);
          job.any_counts.push_back(count);
        }
      } else {
        const bool here = (job.flags[t] & kConstrained) || listed(job, workers[i], t);
        job.tagged.push_back(Tagged{workers[i], t, job.tagged_seq++, kOutstanding, here});
        job.tagged_sorted = false;
      }
    }
    job.outstanding += n;
  }

  // The task `worker` should run for the job, or -1; consumes one of its reservations.
  int64_t get_task(int64_t job_id, int64_t worker) {
    Job& job = find(job_id);
    if (job.plain) return get_plain_task(job, worker);
    int32_t* any = find_any(job, worker);
    auto [lo, hi] = tagged_range(job, worker);
    if (any != nullptr && *any > 0) {
      --*any;
    } else {
      Tagged* held = lo;
      while (held != hi && held->state != kOutstanding) ++held;
      if (held == hi) return -1;
      held->state = kConsumed;
    }
    --job.outstanding;
    if (job.n_launched == job.n_tasks) return -1;
    int64_t task = -1;
    for (Tagged* p = lo; p != hi && task < 0; ++p)
      if (p->listed && !(job.flags[p->task] & kLaunched)) task = p->task;
    if (task < 0 && !job.candidate_index.empty()) {
      auto c = std::lower_bound(job.candidate_index.begin(), job.candidate_index.end(), std::make_pair(worker, int64_t{-1}));
      for (; c != job.candidate_index.end() && c->first == worker; ++c)
        if (!(job.flags[c->second] & kLaunched)) {
          task = c->second;
          break;
        }
    }
    if (task < 0 && job.has_soft)  // its probes elsewhere than it prefers (the others are listed)
      for (Tagged* p = lo; p != hi && task < 0; ++p)
        if (!(job.flags[p->task] & kLaunched)) task = p->task;
    if (task < 0) {
      // Unconstrained tasks in index order: skip constrained ones (and none is launched yet).
      while (job.next_unconstrained < job.n_tasks && job.flags[job.next_unconstrained] != 0) ++job.next_unconstrained;
      if (job.next_unconstrained < job.n_tasks) task = job.next_unconstrained++;
    }
    if (task < 0 && job.has_anywhere) {
      // Soft tasks with preferred workers in index order: skip launched and other ones.
      constexpr uint8_t kWanted = kSoft | kAnywhere;
      while (job.next_anywhere < job.n_tasks && job.flags[job.next_anywhere] != kWanted) ++job.next_anywhere;
      if (job.next_anywhere < job.n_tasks) task = job.next_anywhere++;
    }
    if (task >= 0) {
      job.flags[task] |= kLaunched;
      ++job.n_launched;
    }
    return task;
  }

  // get_task for requests i < n in order, answers in out[i]; all or nothing: returns -1
  // once all are answered, or (answering none) the first i whose job does not exist. Looks
  // the worker up kAhead requests early, so the lookups' cache misses overlap.
  int64_t get_task_many(const int64_t* job_ids, const int64_t* workers, int64_t n, int64_t* out) {
    for (int64_t i = 0; i < n; ++i)
      if (!contains(job_ids[i])) return i;
    for (int64_t i = 0; i < n; ++i) {
      if (i + kAhead < n) prefetch_get_task(job_ids[i + kAhead], workers[i + kAhead]);
      out[i] = get_task(job_ids[i], workers[i]);
    }
    return -1;
  }

  // Starts loading what get_task(job_id, worker) reads first (the worker's count in the job's
  // map), so that a caller who knows its next requests overlaps their misses. A hint only.
  void prefetch_get_task(int64_t job_id, int64_t worker) const {
    const uint32_t* record = index_.find(job_id);
    if (record == nullptr) return;
    const Job& job = records_[*record];
    job.wide ? job.any_wide.prefetch(worker) : job.any.prefetch(worker);
  }

  bool all_launched(int64_t job_id) const {
    const Job& job = find(job_id);
    return job.n_launched == job.n_tasks;
  }

  // Once all tasks are launched: appends the workers still holding reservations of the job,
  // each once, in an unspecified but reproducible order (the same calls give the same order;
  // not sorted: callers that show them sort), and forgets those reservations. Before that:
  // appends nothing.
  void workers_to_cancel(int64_t job_id, std::vector<int64_t>& out) {
    Job& job = find(job_id);
    if (job.n_launched < job.n_tasks || job.outstanding == 0) return;
    const size_t start = out.size();
    const size_t n_any = job.any_workers.size();
    out.resize(start + n_any);
    size_t end = start;
    for (size_t i = 0; i < n_any; ++i) {  // no lookup: the counts' places were kept
      int32_t& count = *job.any_counts[i];
      out[end] = job.any_workers[i];
      end += count > 0;
      count = 0;
    }
    out.resize(end);
    bool tagged_held = false;
    for (Tagged& p : job.tagged)
      if (p.state == kOutstanding) {
        p.state = kCancelled;
        out.push_back(p.worker);
        tagged_held = true;
      }
    if (tagged_held) {  // a worker may hold both kinds: keep one of each
      std::sort(out.begin() + static_cast<std::ptrdiff_t>(start), out.end());
      out.erase(std::unique(out.begin() + static_cast<std::ptrdiff_t>(start), out.end()), out.end());
    }
    job.outstanding = 0;
  }

  // Forgets the outstanding reservations of the job at a worker that is gone; returns how many.
  int64_t drop_worker(int64_t job_id, int64_t worker) {
    Job& job = find(job_id);
    int64_t dropped = 0;
    if (int32_t* any = find_any(job, worker)) {
      dropped = *any;
      *any = 0;
    }
    auto [lo, hi] = tagged_range(job, worker);
    for (Tagged* p = lo; p != hi; ++p)
      if (p->state == kOutstanding) {
        p->state = kCancelled;
        ++dropped;
      }
    job.outstanding -= dropped;
    return dropped;
  }

  // Give-back: task `task`, launched, did not start where it was sent (its node monitor handed it back), so it
  // is unlaunched again and the job's next get_task may bind it as if it had never been handed out. Its
  // reservations are not touched (those consumed stay consumed). Throws if the task is not launched.
  void unlaunch(int64_t job_id, int64_t task) {
    Job& job = find(job_id);
    if (task < 0 || task >= job.n_tasks)
      throw std::invalid_argument("task " + std::to_string(task) + " is out of range [0, " +
                                  std::to_string(job.n_tasks) + ")");
    uint8_t& flags = job.flags[static_cast<size_t>(task)];
    if (!(flags & kLaunched)) throw std::invalid_argument("task " + std::to_string(task) + " is not launched");
    flags &= static_cast<uint8_t>(~kLaunched);
    --job.n_launched;
    if (flags == 0) job.next_unconstrained = std::min(job.next_unconstrained, task);
    if (flags == (kSoft | kAnywhere)) job.next_anywhere = std::min(job.next_anywhere, task);
  }

  // Marks every task of the job launched (a job added back to take a given-back task: unlaunch that one next).
  void launch_all(int64_t job_id) {
    Job& job = find(job_id);
    for (uint8_t& flags : job.flags) flags |= kLaunched;
    job.n_launched = job.next_unconstrained = job.next_anywhere = job.n_tasks;
  }

  void unlaunched(int64_t job_id, std::vector<int64_t>& out) const {
    const Job& job = find(job_id);
    for (int64_t t = 0; t < job.n_tasks; ++t)
      if (!(job.flags[t] & kLaunched)) out.push_back(t);
  }

  void remove_job(int64_t job_id) {
    const uint32_t* record = index_.find(job_id);
    if (record == nullptr) throw unknown_job(job_id);
    const uint32_t r = *record;
    index_.erase(job_id);
    release_record(r);
  }

  bool contains(int64_t job_id) const { return index_.find(job_id) != nullptr; }
  int64_t size() const { return static_cast<int64_t>(index_.size()); }
  int64_t n_tasks(int64_t job_id) const { return find(job_id).n_tasks; }
  int64_t n_launched(int64_t job_id) const { return find(job_id).n_launched; }
  int64_t outstanding(int64_t job_id) const { return find(job_id).outstanding; }

 private:
  static constexpr uint8_t kOutstanding = 0, kConsumed = 1, kCancelled = 2;  // Tagged::state
  // Job::flags bits. kSoft: a probe made for the task may be at any worker; kAnywhere: any
  // reservation of the job may run it (a soft task with preferred workers, not a bound one).
  static constexpr uint8_t kLaunched = 1, kConstrained = 2, kSoft = 4, kAnywhere = 8;
  // A pooled record keeps its buffers for the next job unless they outgrew this many entries.
  static constexpr size_t kKeptCapacity = 1 << 14;
  static constexpr int64_t kMaxOutstanding = INT32_MAX;  // so a per-worker count fits 32 bits
  static constexpr int64_t kAhead = 8;                   // get_task_many's lookahead

  struct Tagged {  // a probe made for constrained or soft task `task`
    int64_t worker;
    int64_t task;
    uint32_t seq;  // reservation order within the job
    uint8_t state;
    bool listed;  // `task` lists `worker` (always, for a constrained task)
  };
  struct Job {
    int64_t n_tasks = 0;
    int64_t n_launched = 0;
    int64_t outstanding = 0;
    int64_t next_unconstrained = 0;  // no unconstrained task below it is unlaunched
    int64_t next_anywhere = 0;       // no kAnywhere task below it is unlaunched
    bool has_soft = false;           // some task is soft (rule 3 is looked at only then)
    bool has_anywhere = false;       // some task is kAnywhere (rule 5 is looked at only then)
    bool plain = true;               // no task is constrained or soft (get_plain_task)
    std::vector<uint8_t> flags;      // per task: kLaunched | kConstrained | kSoft | kAnywhere
    std::vector<std::pair<int64_t, int64_t>> candidate_index;  // (worker, task), sorted
    // worker -> outstanding probes made for any task: 8-byte slots while every such worker is below
    // kCompactKeys (half the cache lines of 16), else (wide) all of them in any_wide instead
    FlatMap<int32_t, uint32_t> any;
    FlatMap<int32_t> any_wide;
    bool wide = false;
    std::vector<int64_t> any_workers;  // the keys of the map, in the order they were first reserved
    std::vector<int32_t*> any_counts;  // their values in the map (kept up to date when it rehashes)
    std::vector<Tagged> tagged;     // sorted by (worker, task, seq) when tagged_sorted
    uint32_t tagged_seq = 0;
    bool tagged_sorted = true;
  };

  // reserve with every probe made for any task (tasks == nullptr): one pass to check, one to count.
  static void reserve_any(Job& job, const int64_t* workers, int64_t n) {
    bool wide = false;
    for (int64_t i = 0; i < n; ++i) {
      if (workers[i] < 0) throw std::invalid_argument("workers: negative worker id " + std::to_string(workers[i]));
      wide |= workers[i] >= kCompactKeys;
    }
    make_room(job, n, wide);
    if (job.wide) return count_any(job, job.any_wide, workers, n);
    count_any(job, job.any, workers, n);
  }

  // reserve_any's counting in the job's map (room made).
  template <typename Map>
  static void count_any(Job& job, Map& map, const int64_t* workers, int64_t n) {
    size_t held = job.any_workers.size();
    job.any_workers.resize(held + static_cast<size_t>(n));  // room for n new workers, trimmed below
    job.any_counts.resize(held + static_cast<size_t>(n));
    int64_t* held_workers = job.any_workers.data();
    int32_t** held_counts = job.any_counts.data();
    for (int64_t i = 0; i < n; ++i) {
      bool inserted;
      int32_t* count = map.emplace_reserved(workers[i], inserted);  // a new count is 0 (an unused slot's V())
      ++*count;
      held_workers[held] = workers[i];  // kept only if new
      held_counts[held] = count;
      held += inserted;
    }
    job.any_workers.resize(held);
    job.any_counts.resize(held);
    job.outstanding += n;
  }

  // Room in the job's map for n_any more workers, so no insertion below rehashes (a rehash
  // moves the counts: their places are found again). wide: one of them is beyond the compact
  // map's keys, so the job's counts move to any_wide first (for good).
  static void make_room(Job& job, int64_t n_any, bool wide) {
    if (n_any == 0) return;
    bool moved = false;
    if (wide && !job.wide) {
      job.any_wide.reserve(job.any_workers.size() + static_cast<size_t>(n_any));
      for (size_t i = 0; i < job.any_workers.size(); ++i) job.any_wide.try_emplace(job.any_workers[i], *job.any_counts[i]);
      job.any = FlatMap<int32_t, uint32_t>();
      job.wide = moved = true;
    }
    auto room = [&job, n_any, moved](auto& map) {
      const size_t capacity = map.capacity();
      map.reserve(map.size() + static_cast<size_t>(n_any));
      if (moved || map.capacity() != capacity)
        for (size_t i = 0; i < job.any_workers.size(); ++i) job.any_counts[i] = map.find(job.any_workers[i]);
    };
    job.wide ? room(job.any_wide) : room(job.any);
  }

  // The job's count of probes for any task at worker, or nullptr.
  static int32_t* find_any(Job& job, int64_t worker) {
    return job.wide ? job.any_wide.find(worker) : job.any.find(worker);
  }

  // get_task for a plain job: every probe is made for any task, so only rule 4 applies.
  static int64_t get_plain_task(Job& job, int64_t worker) {
    int32_t* any = find_any(job, worker);
    if (any == nullptr || *any == 0) return -1;
    --*any;
    --job.outstanding;
    if (job.n_launched == job.n_tasks) return -1;
    // Some task is unlaunched, so the scan stops at one (the bound only guards a broken invariant).
    while (job.next_unconstrained < job.n_tasks && job.flags[job.next_unconstrained] != 0) ++job.next_unconstrained;
    if (job.next_unconstrained == job.n_tasks) return -1;
    const int64_t task = job.next_unconstrained++;
    job.flags[task] = kLaunched;
    ++job.n_launched;
    return task;
  }

  // Whether task t lists worker w (as a candidate or a preferred worker).
  static bool listed(const Job& job, int64_t w, int64_t t) {
    return std::binary_search(job.candidate_index.begin(), job.candidate_index.end(), std::make_pair(w, t));
  }

  static std::invalid_argument unknown_job(int64_t job_id) {
    return std::invalid_argument("job_id " + std::to_string(job_id) + " does not exist");
  }

  Job& find(int64_t job_id) {
    const uint32_t* record = index_.find(job_id);
    if (record == nullptr) throw unknown_job(job_id);
    return records_[*record];
  }
  const Job& find(int64_t job_id) const { return const_cast<TaskTable*>(this)->find(job_id); }

  uint32_t take_record() {
    if (free_.empty()) {
      records_.emplace_back();
      return static_cast<uint32_t>(records_.size() - 1);
    }
    const uint32_t r = free_.back();
    free_.pop_back();
    return r;
  }

  // Resets a record for the next job, keeping its buffers unless they are large.
  void release_record(uint32_t r) {
    Job& job = records_[r];
    job.n_tasks = job.n_launched = job.outstanding = job.next_unconstrained = job.next_anywhere = 0;
    job.has_soft = job.has_anywhere = false;
    job.plain = true;
    job.tagged_seq = 0;
    job.tagged_sorted = true;
    reset(job.flags);
    reset(job.candidate_index);
    reset(job.tagged);
    if (job.wide) {
      job.any_wide = FlatMap<int32_t>();  // rare: the next job starts compact again
      job.wide = false;
    } else if (job.any.capacity() > kKeptCapacity) {
      job.any = FlatMap<int32_t, uint32_t>();
    } else {
      job.any.clear_values(job.any_counts.data(), job.any_counts.size());
    }
    reset(job.any_workers);
    reset(job.any_counts);
    free_.push_back(r);
  }

  template <typename T>
  static void reset(std::vector<T>& v) {
    if (v.capacity() > kKeptCapacity) {
      std::vector<T>().swap(v);
    } else {
      v.clear();
    }
  }

  // The job's probes made for constrained or soft tasks at `worker`, lowest task first.
  static std::pair<Tagged*, Tagged*> tagged_range(Job& job, int64_t worker) {
    if (job.tagged.empty()) return {nullptr, nullptr};
    if (!job.tagged_sorted) {
      // By worker, task, then reservation order: a total order, so every sort gives the same
      // sequence, and a worker's reservations offer their tasks lowest index first.
      std::sort(job.tagged.begin(), job.tagged.end(), [](const Tagged& a, const Tagged& b) {
        if (a.worker != b.worker) return a.worker < b.worker;
        return a.task != b.task ? a.task < b.task : a.seq < b.seq;
      });
      job.tagged_sorted = true;
    }
    Tagged* lo = std::lower_bound(job.tagged.data(), job.tagged.data() + job.tagged.size(), worker,
                                  [](const Tagged& p, int64_t w) { return p.worker < w; });
    Tagged* hi = lo;
    while (hi != job.tagged.data() + job.tagged.size() && hi->worker == worker) ++hi;
    return {lo, hi};
  }

  FlatMap<uint32_t> index_;  // job id -> record
  std::vector<Job> records_;
  std::vector<uint32_t> free_;
};

}  // namespace sparrow
