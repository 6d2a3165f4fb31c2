"""The probes of one job under its constraints (csrc/sparrow/job_probes.h: sample_job, and
sample_constrained, its form without a job constraint): the rule (a task's candidates are its
own that are also the job's; unconstrained tasks stay among the job's) on the binding and the
reference, the binding equal to the reference array for array, and the unhappy paths."""

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import sparrow_core

from . import reference

# ---- the rule, on the binding and the reference model ----


def probes_by_task(workers, made_for):
    """{task (-1: unconstrained): list of its probes' workers}."""
    out = {}
    for w, t in zip(workers.tolist(), made_for.tolist(), strict=True):
        out.setdefault(t, []).append(w)
    return out


def test_job_constraint_holds_alongside_per_task_constraints(impl):
    """Job candidates 0-7 of 20 workers, two constrained tasks reaching outside them: every probe is
    a job candidate, a constrained task's only where its own candidates meet the job's, and the
    unconstrained probes are distinct and apart from the constrained ones."""
    job = list(range(8))
    own = [[1, 9, 15], None, [3, 4, 12], None]
    for seed in range(50):
        workers, made_for = impl.sample_job(impl.Rng(seed), 20, 4, 2.0, candidates=job, task_candidates=own)
        by_task = probes_by_task(workers, made_for)
        assert set(workers.tolist()) <= set(job)
        assert by_task[0] == [1, 1] and sorted(by_task[2]) == [3, 4]
        assert len(by_task[-1]) == 4 and len(set(by_task[-1])) == 4 and not set(by_task[-1]) & {1, 3, 4}


def test_task_with_no_candidate_in_the_job_is_infeasible_and_draws_nothing(impl):
    """Own candidates all outside the job's: InfeasibleTaskError (a ValueError) names the first such
    task, and the generator is untouched."""
    rng = impl.Rng(5)
    with pytest.raises(impl.InfeasibleTaskError, match="task 2: none of its candidate workers") as caught:
        impl.sample_job(rng, 10, 4, 2.0, candidates=[0, 1], task_candidates=[[1], None, [5, 6], [7]])
    assert caught.value.task == 2 and isinstance(caught.value, ValueError)
    assert rng.next_u64() == impl.Rng(5).next_u64()


def test_job_without_constrained_tasks_draws_what_sample_batch_draws(impl):
    """No constrained task (none given, or all entries None): the batch sampling draws of sample_batch,
    with or without a job constraint, every probe made for any task."""
    for candidates in (None, [3, 9, 4, 17, 11, 0]):
        want = impl.sample_batch(impl.Rng(8), 20, 3, 1.5, candidates=candidates).tolist()
        for task_candidates in (None, [None, None, None]):
            workers, made_for = impl.sample_job(impl.Rng(8), 20, 3, 1.5, candidates, task_candidates)
            assert workers.tolist() == want and made_for.tolist() == [-1] * 5


def test_selected_tasks_only_are_probed(impl):
    """tasks=[1, 3]: ceil(d) probes for constrained task 3, probe_count(1, d) for unconstrained task
    1, none for the others."""
    own = [[0, 1], None, [2, 3], [4, 5]]
    workers, made_for = impl.sample_job(impl.Rng(2), 10, 4, 2.0, task_candidates=own, tasks=[1, 3])
    assert Counter(made_for.tolist()) == {3: 2, -1: 2}
    assert set(probes_by_task(workers, made_for)[3]) == {4, 5}


def test_crowded_job_candidates_fill_the_free_ones_before_wrapping(impl):
    """Unconstrained probes outnumbering the job's free candidates: every free candidate gets one,
    then the rest wrap over all the job's candidates, never outside them."""
    workers, made_for = impl.sample_job(
        impl.Rng(3), 50, 4, 2.0, candidates=[10, 20, 30, 40], task_candidates=[[10], None, None, None]
    )
    unconstrained = probes_by_task(workers, made_for)[-1]
    assert len(unconstrained) == 6 and {20, 30, 40} <= set(unconstrained) <= {10, 20, 30, 40}


def test_one_constrained_task_probes_its_preferred_workers(impl):
    """One task with 3 preferred workers, d = 2: 2 reservations, both preferred."""
    for seed in range(30):
        workers, tasks = impl.sample_constrained(impl.Rng(seed), 10, [[2, 5, 7]], 2.0)
        assert tasks.tolist() == [0, 0]
        assert len(set(workers.tolist())) == 2 and set(workers.tolist()) <= {2, 5, 7}


def test_overlapping_preferred_windows_are_all_honoured(impl):
    """Three tasks preferring workers i..i+2 of 5, d = 2: 6 reservations, all preferred."""
    windows = [[i, i + 1, i + 2] for i in range(3)]
    for seed in range(30):
        workers, tasks = impl.sample_constrained(impl.Rng(seed), 5, windows, 2.0)
        assert len(workers) == 6
        assert all(w in windows[t] for w, t in zip(workers.tolist(), tasks.tolist()))
        assert Counter(tasks.tolist()) == {0: 2, 1: 2, 2: 2}


def test_mixed_job_keeps_constrained_probes_on_preferred_workers(impl):
    """3 constrained tasks + 1 unconstrained, d = 2: 8 reservations, at most 2 off the
    preferred workers, and the unconstrained ones on workers not already probed."""
    candidates = [[0, 1, 2], [1, 2, 3], [2, 3, 4], None]
    preferred = {0, 1, 2, 3, 4}
    for seed in range(50):
        workers, tasks = impl.sample_constrained(impl.Rng(seed), 20, candidates, 2.0)
        assert len(workers) == 8
        assert sum(w not in preferred for w in workers.tolist()) <= 2
        constrained = {w for w, t in zip(workers.tolist(), tasks.tolist()) if t >= 0}
        free = [w for w, t in zip(workers.tolist(), tasks.tolist()) if t < 0]
        assert len(free) == 2 and len(set(free)) == 2 and not constrained & set(free)


def test_unconstrained_tasks_fill_the_free_workers_when_crowded(impl):
    """With fewer free workers than probes, every free worker gets one before any wraps."""
    workers, tasks = impl.sample_constrained(impl.Rng(3), 6, [[0, 1], [0, 1], None, None], 2.0)
    free = [w for w, t in zip(workers.tolist(), tasks.tolist()) if t < 0]
    assert len(free) == 4 and set(free) == {2, 3, 4, 5}


@st.composite
def constrained_jobs(draw):
    n = draw(st.integers(1, 40))
    entry = st.one_of(st.none(), st.lists(st.integers(0, n - 1), unique=True, max_size=8))
    return n, draw(st.lists(entry, max_size=10)), draw(st.sampled_from([1.0, 1.5, 2.0, 3.0]))


@given(seed=st.integers(0, 2**64 - 1), job=constrained_jobs())
def test_sample_constrained_matches_reference(seed, job):
    """Constrained sampling (rejection and crowded paths) gives the reference's arrays."""
    n, candidates, d = job
    workers, tasks = sparrow_core.sample_constrained(sparrow_core.Rng(seed), n, candidates, d)
    ref_workers, ref_tasks = reference.sample_constrained(reference.Rng(seed), n, candidates, d)
    assert workers.tolist() == ref_workers.tolist() and tasks.tolist() == ref_tasks.tolist()


def test_unconstrained_part_of_a_mixed_job_is_uniform_over_free_workers():
    """The unconstrained probes of a mixed job are uniform over the workers left free."""
    rng = sparrow_core.Rng(105)
    counts = Counter()
    for _ in range(4000):
        workers, tasks = sparrow_core.sample_constrained(rng, 30, [[0, 1, 2, 3], None, None], 2.0)
        counts.update(w for w, t in zip(workers.tolist(), tasks.tolist()) if t < 0)
    assert min(counts) >= 0 and max(counts) < 30
    assert stats.chisquare([counts[w] for w in range(4, 30)]).pvalue > 0.001  # workers 0-3 are sometimes taken


TASK_LISTS = st.lists(
    st.one_of(st.none(), st.lists(st.integers(0, 39), min_size=1, max_size=6, unique=True)), max_size=12
)


@given(seed=st.integers(0, 2**64 - 1), job=TASK_LISTS)
def test_sample_constrained_flat_draws_what_sample_constrained_draws(seed, job):
    """The flat form (candidates + offsets) gives the same probes as the per-task lists."""
    flat = [w for c in job if c for w in c]
    offsets = np.cumsum([0] + [len(c) if c else 0 for c in job]).tolist()
    got = sparrow_core.sample_constrained_flat(sparrow_core.Rng(seed), 40, flat, offsets, 2.0)
    want = sparrow_core.sample_constrained(sparrow_core.Rng(seed), 40, job, 2.0)
    assert [a.tolist() for a in got] == [a.tolist() for a in want]


@pytest.mark.parametrize(
    "candidates, offsets, message",
    [
        ([1, 2], [], "offsets must start at 0"),
        ([1, 2], [1, 2], "offsets must start at 0"),
        ([1, 2], [0, 1], "end at len"),
        ([1, 2, 3], [0, 2, 1, 3], "must not decrease"),
        ([1, 1], [0, 2], "appears twice"),
        ([1, 99], [0, 2], "out of range"),
    ],
)
def test_sample_constrained_flat_rejects_bad_offsets_and_candidates(candidates, offsets, message):
    with pytest.raises(ValueError, match=message):
        sparrow_core.sample_constrained_flat(sparrow_core.Rng(1), 40, candidates, offsets, 2.0)


# ---- the binding equals the reference, array for array ----


@st.composite
def jobs(draw):
    """A job among n workers: maybe a job constraint, per-task constraints (list form) that may
    reach outside it, maybe a subset of tasks to probe, and d."""
    n = draw(st.integers(1, 40))
    worker_lists = st.lists(st.integers(0, n - 1), unique=True, min_size=1, max_size=10)
    job = draw(st.one_of(st.none(), worker_lists))
    own = draw(st.lists(st.one_of(st.none(), worker_lists), max_size=10))
    tasks = draw(st.one_of(st.none(), st.sets(st.integers(0, max(len(own) - 1, 0))).map(sorted)))
    if not own:
        tasks = None
    return n, job, own, tasks, draw(st.sampled_from([1.0, 1.5, 2.0, 3.0]))


@given(seed=st.integers(0, 2**64 - 1), job=jobs())
def test_sample_job_matches_reference(seed, job):
    """The same draws as the reference (all paths: batch, rejection, crowded, wrap), or the same
    infeasible task; either way the generators end in the same state."""
    n, candidates, own, tasks, d = job
    ours, ref = sparrow_core.Rng(seed), reference.Rng(seed)
    try:
        want = reference.sample_job(ref, n, len(own), d, candidates, own, tasks=tasks)
    except reference.InfeasibleTaskError as exc:
        with pytest.raises(sparrow_core.InfeasibleTaskError) as caught:
            sparrow_core.sample_job(ours, n, len(own), d, candidates, own, tasks=tasks)
        assert caught.value.task == exc.task
    else:
        got = sparrow_core.sample_job(ours, n, len(own), d, candidates, own, tasks=tasks)
        assert [a.tolist() for a in got] == [a.tolist() for a in want]
    assert ours.next_u64() == ref.next_u64()


@given(seed=st.integers(0, 2**64 - 1), job=jobs())
def test_flat_form_draws_what_the_list_form_draws(seed, job):
    """task_candidates + task_offsets (numpy arrays) give the probes of the per-task lists."""
    n, candidates, own, tasks, d = job
    flat = np.array([w for c in own if c for w in c], dtype=np.int64)
    offsets = np.cumsum([0] + [len(c) if c else 0 for c in own], dtype=np.int64)
    try:
        want = sparrow_core.sample_job(sparrow_core.Rng(seed), n, len(own), d, candidates, own, tasks=tasks)
    except sparrow_core.InfeasibleTaskError:
        with pytest.raises(sparrow_core.InfeasibleTaskError):
            sparrow_core.sample_job(sparrow_core.Rng(seed), n, len(own), d, candidates, flat, offsets, tasks)
        return
    got = sparrow_core.sample_job(sparrow_core.Rng(seed), n, len(own), d, candidates, flat, offsets, tasks)
    assert [a.tolist() for a in got] == [a.tolist() for a in want]


def test_large_worker_ids_use_the_hash_sets():
    """Above 2**28 workers the job's candidates are a hash set; the reference agrees there too."""
    n = 2**40
    job = [7, 2**39, 5, 2**40 - 1, 12, 99]
    own = [[2**39, 3], None, [2**40 - 1, 5, 8], None]
    got = sparrow_core.sample_job(sparrow_core.Rng(4), n, 4, 2.0, job, own)
    want = reference.sample_job(reference.Rng(4), n, 4, 2.0, job, own)
    assert [a.tolist() for a in got] == [a.tolist() for a in want]
    assert set(got[0].tolist()) <= set(job)


def test_unconstrained_probes_are_uniform_over_the_free_job_candidates():
    """With a job constraint, the unconstrained probes are uniform over its candidates left free."""
    rng = sparrow_core.Rng(106)
    job = list(range(100, 140))
    counts = Counter()
    for _ in range(4000):
        workers, made_for = sparrow_core.sample_job(rng, 200, 3, 2.0, job, [[100, 101, 102, 150], None, None])
        counts.update(workers[made_for < 0].tolist())
    assert set(counts) <= set(job)
    assert stats.chisquare([counts[w] for w in range(103, 140)]).pvalue > 0.001


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"candidates": [1, 1]}, "candidates: worker id 1 appears twice"),
        ({"candidates": [1, 10]}, r"candidates: worker id 10 is out of range \[0, 10\)"),
        ({"candidates": []}, "candidates is 0"),
        ({"task_candidates": [None, [3, 3]]}, "task 1: candidates: worker id 3 appears twice"),
        ({"task_candidates": [[12], None]}, "task 0: candidates: worker id 12 is out of range"),
        ({"task_candidates": [None]}, r"task_candidates must have one entry per task \(2\)"),
        ({"task_candidates": [1, 2], "task_offsets": [0, 2]}, r"task_offsets must have n_tasks \+ 1 = 3 entries"),
        ({"task_candidates": [1, 2], "task_offsets": [0, 1, 1]}, r"end at len\(task_candidates\) \(2\)"),
        ({"task_candidates": [1, 2], "task_offsets": [1, 1, 2]}, "task_offsets must start at 0"),
        ({"task_offsets": [0, 0, 0]}, "task_offsets needs task_candidates"),
        ({"tasks": [2]}, r"tasks: task 2 is out of range \[0, 2\)"),
        ({"tasks": [1, 0]}, "tasks must be increasing"),
        ({"tasks": [1, 1]}, "tasks must be increasing"),
        ({"tasks": [[0]]}, "tasks must be one-dimensional"),
    ],
)
def test_bad_arguments_name_what_is_wrong_and_draw_nothing(kwargs, message):
    """Each broken contract is a ValueError naming the argument (or the task), raised before any draw."""
    rng = sparrow_core.Rng(9)
    with pytest.raises(ValueError, match=message):
        sparrow_core.sample_job(rng, 10, 2, 2.0, **kwargs)
    assert rng.next_u64() == sparrow_core.Rng(9).next_u64()


def test_decreasing_flat_offsets_are_refused():
    with pytest.raises(ValueError, match=r"task_offsets must not decrease \(task 1\)"):
        sparrow_core.sample_job(sparrow_core.Rng(1), 10, 3, 2.0, None, [1, 2], [0, 2, 1, 2])


# ---- preferences: "probe these first, then random ones" ----


def test_preferring_task_probes_one_preferred_worker_then_one_elsewhere_at_d_2(impl):
    """A task preferring workers 3 and 7 of 20, d = 2: one probe on one of them, one on a worker
    it does not prefer, both made for it; the unconstrained task probes apart from them."""
    for seed in range(50):
        workers, made_for = impl.sample_job(impl.Rng(seed), 20, 2, 2.0, prefer=[[3, 7], None])
        by_task = probes_by_task(workers, made_for)
        assert len(by_task[0]) == 2 and by_task[0][0] in {3, 7} and by_task[0][1] not in {3, 7}
        assert len(by_task[-1]) == 2 and not set(by_task[-1]) & set(by_task[0])


def test_preferring_task_keeps_one_random_probe_whatever_d(impl):
    """d = 3 with three preferred workers: two probes on distinct preferred ones, one elsewhere;
    d = 1: its one probe on a preferred worker."""
    for seed in range(30):
        workers, made_for = impl.sample_job(impl.Rng(seed), 30, 1, 3.0, prefer=[[4, 5, 6]])
        assert made_for.tolist() == [0, 0, 0]
        assert len(set(workers[:2].tolist())) == 2 and set(workers[:2].tolist()) <= {4, 5, 6}
        assert workers[2] not in {4, 5, 6}
        workers, made_for = impl.sample_job(impl.Rng(seed), 30, 1, 1.0, prefer=[[4, 5, 6]])
        assert workers.tolist()[0] in {4, 5, 6} and made_for.tolist() == [0]


def test_preferred_workers_outside_the_job_constraint_are_ignored(impl):
    """Preferred workers none of which is a job candidate: the task is sampled as if it preferred
    nothing (batch sampling, the same draws); some inside: only those count."""
    job = [0, 1, 2, 3, 4, 5]
    want = impl.sample_job(impl.Rng(4), 20, 2, 2.0, job)
    got = impl.sample_job(impl.Rng(4), 20, 2, 2.0, job, prefer=[[10, 11], None])
    assert [a.tolist() for a in got] == [a.tolist() for a in want]
    for seed in range(30):
        workers, made_for = impl.sample_job(impl.Rng(seed), 20, 1, 2.0, job, prefer=[[10, 2]])
        assert workers[0] == 2 and workers[1] in set(job) - {2} and made_for.tolist() == [0, 0]


def test_a_task_preferring_all_its_allowed_workers_probes_only_those(impl):
    """Every allowed worker preferred (its constraint {1, 2}, preferring both): both probes there;
    with a constraint the preferred ones come first among its candidates, outside them never."""
    for seed in range(30):
        workers, made_for = impl.sample_job(impl.Rng(seed), 10, 1, 2.0, task_candidates=[[1, 2]], prefer=[[2, 1]])
        assert sorted(workers.tolist()) == [1, 2] and made_for.tolist() == [0, 0]
        workers, _ = impl.sample_job(impl.Rng(seed), 10, 1, 2.0, task_candidates=[[1, 2, 3, 4]], prefer=[[3, 9]])
        assert workers[0] == 3 and workers[1] in {1, 2, 4}


def test_no_preference_draws_what_a_job_without_prefer_draws(impl):
    """prefer of empty entries (or None) changes nothing: the draws of the same job without it."""
    own = [[1, 2, 3], None, None]
    want = impl.sample_job(impl.Rng(12), 10, 3, 2.0, None, own)
    for prefer in ([None, None, None], [[], [], []]):
        got = impl.sample_job(impl.Rng(12), 10, 3, 2.0, None, own, prefer=prefer)
        assert [a.tolist() for a in got] == [a.tolist() for a in want]


def test_the_random_probe_of_a_preferring_task_is_uniform_over_the_other_workers():
    """The probe that is not on the preferred worker is uniform over the 29 others."""
    rng = sparrow_core.Rng(107)
    counts = Counter()
    for _ in range(6000):
        workers, _ = sparrow_core.sample_job(rng, 30, 1, 2.0, prefer=[[0]])
        assert workers[0] == 0
        counts[int(workers[1])] += 1
    assert 0 not in counts
    assert stats.chisquare([counts[w] for w in range(1, 30)]).pvalue > 0.001


@st.composite
def preferring_jobs(draw):
    """A job as jobs() draws it, per-task preferences (list form) that may reach outside its
    allowed workers, and per-task sampling or not."""
    n, job, own, tasks, d = draw(jobs())
    worker_lists = st.lists(st.integers(0, n - 1), unique=True, min_size=1, max_size=6)
    prefer = draw(st.lists(st.one_of(st.none(), worker_lists), min_size=len(own), max_size=len(own)))
    return n, job, own, tasks, d, prefer, draw(st.booleans())


@settings(max_examples=300, deadline=None)  # a property, not a timing: a loaded machine must not fail it
@given(seed=st.integers(0, 2**64 - 1), job=preferring_jobs())
def test_sample_job_with_preferences_matches_reference(seed, job):
    """With preferences and per-task sampling, the same draws as the reference (all paths), or the
    same infeasible task; the generators end in the same state; the flat form draws what the list
    form draws."""
    n, candidates, own, tasks, d, prefer, per_task = job
    ours, ref = sparrow_core.Rng(seed), reference.Rng(seed)
    kw = {"tasks": tasks, "prefer": prefer, "per_task": per_task}
    try:
        want = reference.sample_job(ref, n, len(own), d, candidates, own, **kw)
    except reference.InfeasibleTaskError as exc:
        with pytest.raises(sparrow_core.InfeasibleTaskError) as caught:
            sparrow_core.sample_job(ours, n, len(own), d, candidates, own, **kw)
        assert caught.value.task == exc.task
        return
    got = sparrow_core.sample_job(ours, n, len(own), d, candidates, own, **kw)
    assert [a.tolist() for a in got] == [a.tolist() for a in want]
    assert ours.next_u64() == ref.next_u64()
    flat = np.array([w for p in prefer if p for w in p], dtype=np.int64)
    offsets = np.cumsum([0] + [len(p) if p else 0 for p in prefer], dtype=np.int64)
    again = sparrow_core.sample_job(
        sparrow_core.Rng(seed), n, len(own), d, candidates, own, None, tasks, flat, offsets, per_task
    )
    assert [a.tolist() for a in again] == [a.tolist() for a in want]


def test_preferences_with_large_worker_ids_use_the_hash_sets():
    """Above 2**28 workers (hash sets for the preferred workers too), the reference agrees."""
    n = 2**40
    job = [7, 2**39, 5, 2**40 - 1, 12, 99]
    own = [[2**39, 3, 5], None, None]
    prefer = [[5, 2**39 + 1], [2**40 - 1], None]
    got = sparrow_core.sample_job(sparrow_core.Rng(4), n, 3, 2.0, job, own, prefer=prefer)
    want = reference.sample_job(reference.Rng(4), n, 3, 2.0, job, own, prefer=prefer)
    assert [a.tolist() for a in got] == [a.tolist() for a in want]


# ---- per-task sampling ----


def test_per_task_sampling_draws_what_sample_per_task_draws(impl):
    """No constraint: ceil(d) probes of its own per task, made for it, the draws of sample_per_task."""
    for d in (1.0, 2.0, 2.5):
        want = impl.sample_per_task(impl.Rng(6), 50, 7, math.ceil(d)).ravel().tolist()
        workers, made_for = impl.sample_job(impl.Rng(6), 50, 7, d, per_task=True)
        assert workers.tolist() == want
        assert made_for.tolist() == [t for t in range(7) for _ in range(math.ceil(d))]


def test_per_task_sampling_stays_in_the_job_constraint_and_keeps_constrained_and_preferring_tasks(impl):
    """A job constraint, a constrained task and a preferring one: each task's two probes are its own,
    all inside the job's candidates, the constrained task's on its candidates, none made for -1."""
    job = list(range(10, 30))
    for seed in range(30):
        workers, made_for = impl.sample_job(
            impl.Rng(seed),
            40,
            4,
            2.0,
            job,
            [None, [11, 12], None, None],
            prefer=[None, None, [20], None],
            per_task=True,
        )
        by_task = probes_by_task(workers, made_for)
        assert sorted(by_task) == [0, 1, 2, 3] and all(len(set(p)) == 2 for p in by_task.values())
        assert set(workers.tolist()) <= set(job) and sorted(by_task[1]) == [11, 12] and by_task[2][0] == 20


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"prefer": [None, [3, 3]]}, "task 1: prefer: worker id 3 appears twice"),
        ({"prefer": [[12], None]}, r"task 0: prefer: worker id 12 is out of range \[0, 10\)"),
        ({"prefer": [None]}, r"prefer must have one entry per task \(2\)"),
        ({"prefer": [1, 2], "prefer_offsets": [0, 2]}, r"prefer_offsets must have n_tasks \+ 1 = 3 entries"),
        ({"prefer": [1, 2], "prefer_offsets": [0, 1, 1]}, r"end at len\(prefer\) \(2\)"),
        ({"prefer_offsets": [0, 0, 0]}, "prefer_offsets needs prefer"),
        ({"prefer": [[1, 1], None], "task_candidates": [[1, 2], None]}, "task 0: prefer: worker id 1 appears twice"),
    ],
)
def test_bad_preferences_name_what_is_wrong_and_draw_nothing(kwargs, message):
    """Each broken contract about `prefer` is a ValueError naming it (or the task), before any draw."""
    rng = sparrow_core.Rng(9)
    with pytest.raises(ValueError, match=message):
        sparrow_core.sample_job(rng, 10, 2, 2.0, **kwargs)
    assert rng.next_u64() == sparrow_core.Rng(9).next_u64()
