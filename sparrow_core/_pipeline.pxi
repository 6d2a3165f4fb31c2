# Pipelined late binding's rule (csrc/sparrow/pipeline.h): the modes, the constants the simulator and
# the runtime share, and PipelineRule, one node's recent run times and what they say.
from libc.math cimport isfinite

_PIPELINE_MODE = {
    "off": CPipelineMode.Off,
    "gated": CPipelineMode.Gated,
    "steady": CPipelineMode.Steady,
    "jit": CPipelineMode.Jit,
    "always": CPipelineMode.Always,
}
PIPELINE_MODES = tuple(_PIPELINE_MODE)
PIPELINE_RECENT = kPipelineRecent
PIPELINE_SHORT_TASK = kPipelineShortTask
PIPELINE_MAX_DEPTH = kPipelineMaxDepth
PIPELINE_STEADY_SPREAD = kPipelineSteadySpread
PIPELINE_JIT_SPREAD = kPipelineJitSpread
PIPELINE_JIT_MARGIN = kPipelineJitMargin


cdef class PipelineRule:
    """One node's pipelining rule: mode (PIPELINE_MODES) and depth (1..PIPELINE_MAX_DEPTH), its last
    PIPELINE_RECENT run times (`record`) and what they say (`short_recent`, `deep`, `steady`,
    `ask_after`, `ask_until`), and the decisions made from them (`gate_open`, `ahead_limit`,
    `half_rule_applies`, `half_allows`). Bad arguments raise ValueError or TypeError naming them.

    Examples:
        >>> rule = PipelineRule("gated", 4)
        >>> rule.gate_open(False)
        False
        >>> rule.record(0.001)
        >>> rule.gate_open(False), rule.deep, rule.ahead_limit(2, 1)
        (True, True, 8)
    """

    cdef CPipelineMode _mode
    cdef int32_t _depth
    cdef double _recent[kPipelineRecent]
    cdef int32_t _n
    cdef int32_t _next
    cdef CPipelineView _view
    cdef readonly str mode
    cdef readonly bint keeps_recent

    def __cinit__(self, str mode not None, depth):
        if mode not in _PIPELINE_MODE:
            raise ValueError(f"pipeline mode must be one of {', '.join(PIPELINE_MODES)}, got {mode!r}")
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= kPipelineMaxDepth:
            raise ValueError(f"pipeline_depth must be an int in [1, {kPipelineMaxDepth}], got {depth!r}")
        self._mode = _PIPELINE_MODE[mode]
        self._depth = depth
        self.mode = mode
        self.keeps_recent = c_pipeline_keeps_recent(self._mode, self._depth)

    @property
    def depth(self) -> int:
        return self._depth

    def record(self, double run_time, double round_trip=0.0):
        """A task ended after `run_time` seconds (the oldest of PIPELINE_RECENT falls out); `round_trip`:
        seconds a request asked ahead takes to be answered (jit asks that much before the predicted end)."""
        if not (run_time >= 0.0 and round_trip >= 0.0 and isfinite(run_time) and isfinite(round_trip)):
            raise ValueError(f"run_time and round_trip must be finite and >= 0, got {run_time!r}, {round_trip!r}")
        self._recent[self._next] = run_time
        self._next = (self._next + 1) % kPipelineRecent
        if self._n < kPipelineRecent:
            self._n += 1
        self._view = c_read_recent(self._mode, self._depth, self._recent, self._n, round_trip)

    def forget(self):
        """Drop the recent run times (none known: not short, not steady)."""
        self._n = 0
        self._next = 0
        self._view = CPipelineView(False, False, False, 0.0, 0.0)

    @property
    def recent(self) -> list:
        """The recent run times, oldest first."""
        start = (self._next - self._n) % kPipelineRecent
        return [self._recent[(start + i) % kPipelineRecent] for i in range(self._n)]

    @property
    def longest(self) -> float:
        """The longest recent run time (0.0: none yet)."""
        cdef double most = 0.0
        for i in range(self._n):
            most = max(most, self._recent[i])
        return most

    @property
    def short_recent(self) -> bool:
        return self._view.short_recent

    @property
    def deep(self) -> bool:
        return self._view.deep

    @property
    def steady(self) -> bool:
        return self._view.steady

    @property
    def ask_after(self) -> float:
        return self._view.ask_after

    @property
    def ask_until(self) -> float:
        return self._view.ask_until

    def gate_open(self, bint overrunning):
        """Whether the node asks ahead at all now (`overrunning`: a running task has run
        PIPELINE_SHORT_TASK already)."""
        return c_gate_open(self._mode, self._view, overrunning)

    def ahead_limit(self, int64_t held_slots, int64_t may_ask):
        """Requests ahead plus tasks bound the node may hold (`held_slots`: running or asking for their
        task; `may_ask`: running tasks that may ask now)."""
        return c_ahead_limit(self._depth, self._view, held_slots, may_ask)

    def half_rule_applies(self):
        """Whether the half rule bounds the requests asked ahead now (deep, or a gated mode)."""
        return c_half_rule_applies(self._mode, self._view)

    @staticmethod
    def half_allows(int64_t ahead_of_job, int64_t queued_of_job):
        """The half rule: one more request ahead for the head job, of which `ahead_of_job` are asked ahead
        and `queued_of_job` queued."""
        return c_half_allows(ahead_of_job, queued_of_job)
