# Cython declarations of the C++ kernels in csrc/sparrow/ (the only cdef extern block of the
# project). Every call that can break a contract is `except +`: C++ std::invalid_argument
# surfaces in Python as ValueError.
from libc.stdint cimport int32_t, int64_t, uint64_t
from libcpp cimport bool as cbool
from libcpp.vector cimport vector


cdef extern from "<algorithm>" namespace "std" nogil:
    void c_sort_int64 "std::sort"(int64_t* first, int64_t* last)


cdef extern from "sparrow/rng.h" namespace "sparrow" nogil:
    cdef cppclass CRng "sparrow::Rng":
        CRng(uint64_t seed)
        uint64_t next()
        uint64_t below(uint64_t n) except +
        double uniform()
        double exponential(double mean)
        CRng spawn()


cdef extern from "sparrow/sampling.h" namespace "sparrow" nogil:
    cbool c_valid_probe_ratio "sparrow::valid_probe_ratio"(double probe_ratio)
    int64_t c_probe_count "sparrow::probe_count"(int64_t n_tasks, double probe_ratio) except +
    void c_sample_workers "sparrow::sample_workers"(CRng& rng, int64_t n, int64_t k, vector[int64_t]& out) except +
    void c_sample_workers_into "sparrow::sample_workers"(CRng& rng, int64_t n, int64_t k, int64_t* out) except +
    void c_check_candidates "sparrow::check_candidates"(const int64_t* candidates, int64_t n_candidates, int64_t n_workers) except +
    void c_sample_from "sparrow::sample_from"(CRng& rng, const int64_t* candidates, int64_t n_candidates, int64_t k,
                     vector[int64_t]& out) except +
    void c_sample_from_into "sparrow::sample_from"(CRng& rng, const int64_t* candidates, int64_t n_candidates,
                     int64_t k, int64_t* out) except +
    void c_sample_batch "sparrow::sample_batch"(CRng& rng, int64_t n_workers, int64_t n_tasks, double probe_ratio,
                      vector[int64_t]& out) except +
    void c_sample_per_task "sparrow::sample_per_task"(CRng& rng, int64_t n_workers, int64_t n_tasks, int64_t d,
                         vector[int64_t]& out) except +


cdef extern from "sparrow/job_probes.h" namespace "sparrow" nogil:
    cdef struct CJobRequest "sparrow::JobRequest":
        int64_t n_workers
        const int64_t* candidates
        int64_t n_candidates
        int64_t n_tasks
        const int64_t* task_candidates
        const int64_t* task_offsets
        const int64_t* tasks
        int64_t n_selected
        double probe_ratio
        const int64_t* prefer
        const int64_t* prefer_offsets
        cbool per_task

    int64_t c_sample_job "sparrow::sample_job"(CRng& rng, const CJobRequest& request, vector[int64_t]& workers,
                         vector[int64_t]& made_for) except +


cdef extern from "sparrow/reservation_queue.h" namespace "sparrow" nogil:
    cdef enum class CPolicy "sparrow::Policy":
        Fifo "sparrow::Policy::Fifo"
        Priority "sparrow::Policy::Priority"
        Fair "sparrow::Policy::Fair"

    cdef struct CReservation "sparrow::Reservation":
        int64_t job_id
        int32_t user
        int32_t priority

    cdef cppclass CReservationQueue "sparrow::ReservationQueue":
        CReservationQueue(CPolicy policy, double default_weight) except +
        void set_weight(int32_t user, double weight) except +
        double weight(int32_t user)
        void push(int64_t job_id, int32_t user, int32_t priority) except +
        int64_t push_many(const int64_t* job_ids, const int32_t* users, const int64_t* priorities, int64_t n,
                          int32_t& owner) except +
        cbool peek(CReservation& out)
        cbool pop(CReservation& out)
        void refund(int32_t user) except +
        int64_t cancel(int64_t job_id)
        int64_t size()
        int64_t count(int32_t user)
        int32_t job_user(int64_t job_id)
        cbool can_refund(int32_t user)


cdef extern from "sparrow/task_table.h" namespace "sparrow" nogil:
    cdef cppclass CTaskTable "sparrow::TaskTable":
        CTaskTable()
        void add_job(int64_t job_id, int64_t n_tasks, const int64_t* cand, const int64_t* cand_offsets,
                     const int64_t* pref, const int64_t* pref_offsets, cbool per_task) except +
        void reserve(int64_t job_id, const int64_t* workers, const int64_t* tasks, int64_t n) except +
        int64_t get_task(int64_t job_id, int64_t worker) except +
        int64_t get_task_many(const int64_t* job_ids, const int64_t* workers, int64_t n, int64_t* out) except +
        cbool all_launched(int64_t job_id) except +
        void workers_to_cancel(int64_t job_id, vector[int64_t]& out) except +
        int64_t drop_worker(int64_t job_id, int64_t worker) except +
        void unlaunched(int64_t job_id, vector[int64_t]& out) except +
        void unlaunch(int64_t job_id, int64_t task) except +
        void launch_all(int64_t job_id) except +
        void remove_job(int64_t job_id) except +
        cbool contains(int64_t job_id)
        int64_t size()
        int64_t n_tasks(int64_t job_id) except +
        int64_t n_launched(int64_t job_id) except +
        int64_t outstanding(int64_t job_id) except +


cdef extern from "sparrow/steal.h" namespace "sparrow" nogil:
    cdef struct CStealConfig "sparrow::StealConfig":
        int64_t victims
        int64_t max_take
        double min_blocked

    cdef struct CStealChoice "sparrow::StealChoice":
        int64_t victim
        int64_t take

    void c_check_steal_config "sparrow::check_steal_config"(const CStealConfig& config) except +
    void c_choose_victims "sparrow::choose_victims"(CRng& rng, int64_t n_workers, int64_t thief, int64_t k,
                          vector[int64_t]& out) except +
    CStealChoice c_choose_steal "sparrow::choose_steal"(CRng& rng, const int64_t* stealable, const double* blocked_for,
                                int64_t n, const CStealConfig& config) except +
    int64_t c_take_reservations "sparrow::take_reservations"(CReservationQueue& q, int64_t n, const int64_t* pinned,
                                int64_t n_pinned, vector[CReservation]& out) except +

cdef extern from "sparrow/pipeline.h" namespace "sparrow" nogil:
    cdef enum class CPipelineMode "sparrow::PipelineMode":
        Off "sparrow::PipelineMode::Off"
        Gated "sparrow::PipelineMode::Gated"
        Steady "sparrow::PipelineMode::Steady"
        Jit "sparrow::PipelineMode::Jit"
        Always "sparrow::PipelineMode::Always"

    cdef struct CPipelineView "sparrow::PipelineView":
        cbool short_recent
        cbool deep
        cbool steady
        double ask_after
        double ask_until

    const int32_t kPipelineModes "sparrow::kPipelineModes"
    const int32_t kPipelineRecent "sparrow::kPipelineRecent"
    const double kPipelineShortTask "sparrow::kPipelineShortTask"
    const int32_t kPipelineMaxDepth "sparrow::kPipelineMaxDepth"
    const double kPipelineSteadySpread "sparrow::kPipelineSteadySpread"
    const double kPipelineJitSpread "sparrow::kPipelineJitSpread"
    const double kPipelineJitMargin "sparrow::kPipelineJitMargin"

    void c_check_pipeline "sparrow::check_pipeline"(int32_t mode, int32_t depth) except +
    cbool c_pipeline_keeps_recent "sparrow::pipeline_keeps_recent"(CPipelineMode mode, int32_t depth)
    CPipelineView c_read_recent "sparrow::read_recent"(CPipelineMode mode, int32_t depth, const double* recent,
                                int32_t n, double round_trip) except +
    cbool c_gate_open "sparrow::gate_open"(CPipelineMode mode, const CPipelineView& view, cbool overrunning)
    int64_t c_ahead_limit "sparrow::ahead_limit"(int32_t depth, const CPipelineView& view, int64_t held_slots,
                          int64_t may_ask)
    cbool c_half_rule_applies "sparrow::half_rule_applies"(CPipelineMode mode, const CPipelineView& view)
    cbool c_half_allows "sparrow::half_allows"(int64_t ahead_of_job, int64_t queued_of_job)
cdef extern from "sparrow/resources.h" namespace "sparrow" nogil:
    int64_t c_max_resources "sparrow::kMaxResources"
    int64_t c_feasible_workers "sparrow::feasible_workers"(const int64_t* capacities, int64_t n_workers, int64_t r,
                               const int64_t* request, vector[int64_t]& out) except +


cdef extern from "sparrow/fit_launcher.h" namespace "sparrow" nogil:
    cdef struct CFitRule "sparrow::FitRule":
        int64_t window
        int64_t max_skips

    void c_check_fit_rule "sparrow::check_fit_rule"(const CFitRule& rule) except +
    int64_t c_choose_launch "sparrow::choose_launch"(const int64_t* free, int64_t r, const int64_t* requests, int64_t n,
                            int64_t head_skips, const CFitRule& rule) except +

# ---- simulator (csrc/sparrow/sim) ----
# Declarations of csrc/sparrow/sim/ (params.h, simulator.h), used by _sim.pxi.
from libcpp cimport bool as cpp_bool

cdef extern from "sparrow/sim/params.h" namespace "sparrow::sim" nogil:
    cdef enum class CPlacementPolicy "sparrow::sim::PlacementPolicy":
        Random "sparrow::sim::PlacementPolicy::Random"
        PerTask "sparrow::sim::PlacementPolicy::PerTask"
        Batch "sparrow::sim::PlacementPolicy::Batch"
        Sparrow "sparrow::sim::PlacementPolicy::Sparrow"
        Omniscient "sparrow::sim::PlacementPolicy::Omniscient"
        SparrowSteal "sparrow::sim::PlacementPolicy::SparrowSteal"
        SparrowPipelined "sparrow::sim::PlacementPolicy::SparrowPipelined"
        SparrowStealPipelined "sparrow::sim::PlacementPolicy::SparrowStealPipelined"

    cdef enum class CDurationKind "sparrow::sim::DurationKind":
        Exponential "sparrow::sim::DurationKind::Exponential"
        Constant "sparrow::sim::DurationKind::Constant"
        Bimodal "sparrow::sim::DurationKind::Bimodal"
        PerJob "sparrow::sim::DurationKind::PerJob"

    cdef cppclass CSimParams "sparrow::sim::SimParams":
        CSimParams()
        CPlacementPolicy policy
        int64_t n_workers
        int32_t slots
        CPolicy queue_policy
        double network_delay
        double launch_overhead
        double submit_delay
        double result_delay
        double probe_ratio
        int32_t n_schedulers
        cpp_bool cancellation
        uint64_t seed
        int64_t steal_victims
        int64_t steal_max_take
        double steal_min_blocked
        double steal_wait
        int64_t n_steal_script
        const double* steal_script_at
        const int64_t* steal_script_thief
        const int64_t* steal_script_offsets
        const int64_t* steal_script_victims
        double steal_script_tolerance
        double pipeline_after
        int32_t pipeline_depth
        cpp_bool pipeline_gate
        cpp_bool pipeline_jit
        cpp_bool pipeline_steady
        int64_t n_jobs
        int64_t tasks_per_job
        double arrival_rate
        CDurationKind duration
        double mean_duration
        double bimodal_long_fraction
        double bimodal_ratio
        int64_t n_trace_jobs
        const double* trace_arrival
        const int64_t* trace_tasks
        const int64_t* trace_offsets
        const double* trace_durations
        const int64_t* trace_lines
        const int64_t* trace_job_candidates
        const int64_t* trace_job_offsets
        const int64_t* trace_task_candidates
        const int64_t* trace_task_offsets
        const int64_t* trace_parents
        const int64_t* trace_parent_offsets
        const int64_t* trace_probes
        const int64_t* trace_probe_offsets
        vector[double] user_weight
        vector[double] user_demand
        vector[double] priority_share
        double constrained_jobs
        double constraint_workers
        double constrained_tasks
        int64_t task_candidates
        int (*should_stop)(void*) noexcept nogil
        void* should_stop_arg

    cdef cppclass CSimCounters "sparrow::sim::Counters":
        int64_t probes
        int64_t get_task
        int64_t get_task_empty
        int64_t cancel_messages
        int64_t cancelled
        int64_t messages
        int64_t events
        int64_t max_jobs_in_flight
        int64_t steal_attempts
        int64_t steals
        int64_t stolen
        int64_t steal_replayed
        int64_t asked_ahead
        int64_t bound_ahead
        double end_time
        bint interrupted

    cdef cppclass CSimOutput "sparrow::sim::SimOutput":
        CSimOutput()
        double* job_arrival
        double* job_response
        double* job_ideal
        double* job_wait
        int32_t* job_user
        int32_t* job_priority
        double* task_wait
        CSimCounters counters


cdef extern from "sparrow/sim/simulator.h" namespace "sparrow::sim" nogil:
    void c_simulate "sparrow::sim::simulate"(const CSimParams& params, CSimOutput& out) except +



cdef extern from "sparrow/sim/resource/params.h" namespace "sparrow::sim" nogil:
    cdef enum class CResourcePlacement "sparrow::sim::ResourcePlacement":
        Sparrow "sparrow::sim::ResourcePlacement::Sparrow"
        Packer "sparrow::sim::ResourcePlacement::Packer"

    cdef cppclass CResourceSimParams "sparrow::sim::ResourceSimParams":
        CResourceSimParams()
        CResourcePlacement policy
        int64_t n_workers
        int64_t n_kinds
        int64_t n_host_classes
        const int64_t* host_capacity
        const double* host_share
        int64_t n_request_classes
        const int64_t* request
        const double* request_share
        int64_t n_jobs
        int64_t tasks_per_job
        double arrival_rate
        double mean_duration
        double probe_ratio
        double network_delay
        int64_t fit_window
        int64_t fit_max_skips
        uint64_t seed
        int (*should_stop)(void*) noexcept nogil
        void* should_stop_arg

    cdef cppclass CResourceCounters "sparrow::sim::ResourceCounters":
        int64_t probes
        int64_t get_task
        int64_t get_task_empty
        int64_t cancelled
        int64_t skips
        int64_t owed
        int64_t events
        double end_time
        bint interrupted

    cdef cppclass CResourceSimOutput "sparrow::sim::ResourceSimOutput":
        CResourceSimOutput()
        double* job_arrival
        double* job_response
        double* job_wait
        int32_t* job_class
        int32_t* host_class
        double* work
        double* held
        CResourceCounters counters


cdef extern from "sparrow/sim/resource/simulator.h" namespace "sparrow::sim" nogil:
    void c_simulate_resources "sparrow::sim::simulate_resources"(const CResourceSimParams& params,
                              CResourceSimOutput& out) except +
