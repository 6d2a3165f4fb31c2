"""The late-binding task table (csrc/sparrow/task_table.h): the original implementation's
get_task / cancellation properties on the binding and the reference, constrained tasks first,
soft tasks (preferred workers) where they prefer but never held there, and the binding against
the reference model on random operation sequences."""

import functools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparrow_core

from . import reference


def ask_all(table, job_id, workers):
    """get_task for each worker in order."""
    return [table.get_task(job_id, w) for w in workers]


# ---- scripted scenarios, on the binding and the reference model ----


@pytest.mark.parametrize("seed", range(5))
def test_first_m_requests_get_distinct_tasks_then_none(impl, seed):
    """The first m get_task answers are m distinct tasks covering the job, later ones None;
    all_launched turns true exactly at the m-th."""
    m = 5
    workers = impl.sample_batch(impl.Rng(seed), 100, m, 2.0).tolist()
    table = impl.TaskTable()
    table.add_job(1, m)
    table.reserve(1, workers)
    random.Random(seed).shuffle(workers)
    answers = []
    for w in workers:
        assert table.all_launched(1) == (len(answers) >= m)
        answers.append(table.get_task(1, w))
    assert sorted(answers[:m]) == list(range(m)) and answers[m:] == [None] * m
    assert table.all_launched(1) and table.n_launched(1) == m


@pytest.mark.parametrize("seed", range(5))
def test_workers_to_cancel_are_the_probed_workers_that_did_not_ask(impl, seed):
    """Once all tasks are launched, workers_to_cancel is exactly the probed workers that
    have not asked yet; asking again gives nothing, and they then get no task."""
    workers = impl.sample_batch(impl.Rng(seed), 50, 4, 2.0).tolist()
    table = impl.TaskTable()
    table.add_job(7, 4)
    table.reserve(7, workers)
    assert table.workers_to_cancel(7).tolist() == []  # not all launched yet: nothing to cancel
    asked = workers[:4]
    assert sorted(ask_all(table, 7, asked)) == [0, 1, 2, 3]
    cancel = table.workers_to_cancel(7)
    assert cancel.dtype == np.int64 and cancel.tolist() == sorted(set(workers) - set(asked))
    assert table.workers_to_cancel(7).tolist() == [] and table.outstanding(7) == 0
    assert ask_all(table, 7, workers[4:]) == [None] * 4


def test_repeated_reservations_on_a_worker_are_each_consumed(impl):
    """14 tasks, d = 2, 6 workers: 28 reservations; a worker holding several asks several
    times; the workers to cancel are those still holding one when the job is done."""
    workers = impl.sample_batch(impl.Rng(3), 6, 14, 2.0).tolist()
    table = impl.TaskTable()
    table.add_job(1, 14)
    table.reserve(1, workers)
    answers = ask_all(table, 1, [0, 1, 2, 3, 4, 5] * 2 + [0, 1])
    assert sorted(answers) == list(range(14))
    assert table.outstanding(1) == 14
    assert table.workers_to_cancel(1).tolist() == [0, 1, 2, 3, 4, 5]


def test_counts_survive_a_growing_map_and_a_reused_record(impl):
    """A second reserve that outgrows the job's map keeps every count (workers_to_cancel lists
    exactly the workers still holding one); the next job reuses the record and sees none of them."""
    table = impl.TaskTable()
    table.add_job(1, 3)
    table.reserve(1, [0, 1, 2])
    table.reserve(1, [*range(2, 40), 1])  # worker 1 and 2 now hold two
    assert table.get_task(1, 1) == 0 and table.get_task(1, 5) == 1 and table.get_task(1, 2) == 2
    assert sorted(table.workers_to_cancel(1).tolist()) == [w for w in range(40) if w != 5]
    table.remove_job(1)
    table.add_job(3, 1)
    table.reserve(3, list(range(10)))
    table.remove_job(3)  # its record goes back to the pool with ten reservations outstanding
    table.add_job(2, 2)
    table.reserve(2, [7, 50])
    assert table.get_task(2, 3) is None and table.get_task(2, 0) is None and table.outstanding(2) == 2
    assert table.get_task(2, 50) == 0 and table.get_task(2, 7) == 1 and table.workers_to_cancel(2).tolist() == []


BIG = 2**32 - 1  # the first worker id beyond the kernel's compact per-job map (8-byte slots): it moves to wide ones


@pytest.mark.parametrize("tagged", [False, True])
def test_counts_survive_a_worker_id_beyond_32_bits(impl, tagged):
    """Workers 2**32 - 1 and 2**40 in a job's second reserve (with task tags or without) move its counts to the
    kernel's wide map: every count is kept, a worker that differs from a small one only above bit 31 holds
    nothing of it, and the record's next job starts compact again."""
    table = impl.TaskTable()
    table.add_job(1, 4)
    table.reserve(1, [1, 2, 3])
    table.reserve(1, [BIG, 2, 2**40], [-1, -1, -1] if tagged else None)
    assert table.get_task(1, 2**32 + 1) is None  # worker 1's id plus 2**32: no reservation there
    assert table.get_task(1, BIG) == 0 and table.get_task(1, 2) == 1 and table.get_task(1, 2**40) == 2
    assert table.get_task(1, 2**40) is None and table.outstanding(1) == 3
    assert table.get_task(1, 3) == 3
    assert sorted(table.workers_to_cancel(1).tolist()) == [1, 2]
    table.remove_job(1)
    table.add_job(2, 1)
    table.reserve(2, [5, 2**40 + 5])
    assert table.drop_worker(2, 2**40 + 5) == 1 and table.get_task(2, 5) == 0


def test_unprobed_worker_gets_nothing_and_consumes_nothing(impl):
    """A worker holding no reservation of the job gets None, a normal race, not an error."""
    table = impl.TaskTable()
    table.add_job(1, 2)
    table.reserve(1, [3, 4])
    assert table.get_task(1, 9) is None and table.outstanding(1) == 2 and table.n_launched(1) == 0


def test_one_task_with_preferred_workers(impl):
    """One task with 3 preferred workers, d = 2: 2 reservations, both preferred; the first
    to ask runs the task, the second gets nothing."""
    table = impl.TaskTable()
    workers, tasks = impl.sample_constrained(impl.Rng(1), 10, [[2, 5, 7]], 2.0)
    table.add_job(1, 1, [[2, 5, 7]])
    table.reserve(1, workers, tasks)
    assert set(workers.tolist()) <= {2, 5, 7} and len(workers) == 2
    assert ask_all(table, 1, workers.tolist()) == [0, None]


@pytest.mark.parametrize("seed", range(20))
def test_overlapping_windows_never_hand_out_a_task_twice(impl, seed):
    """Three tasks preferring workers i..i+2 of 5, d = 2: 6 reservations, all preferred;
    replaying every reservation in any order never hands out a task twice, and each task
    runs on one of its preferred workers."""
    windows = [[i, i + 1, i + 2] for i in range(3)]
    workers, tasks = impl.sample_constrained(impl.Rng(seed), 5, windows, 2.0)
    table = impl.TaskTable()
    table.add_job(1, 3, windows)
    table.reserve(1, workers, tasks)
    order = workers.tolist()
    random.Random(seed).shuffle(order)
    launched = [(w, t) for w in order if (t := table.get_task(1, w)) is not None]
    assert len({t for _, t in launched}) == len(launched)
    assert all(w in windows[t] for w, t in launched)
    assert table.outstanding(1) == 0
    assert sorted(set(range(3)) - {t for _, t in launched}) == table.unlaunched(1).tolist()


@pytest.mark.parametrize("seed", range(20))
def test_mixed_job_serves_constrained_tasks_first(impl, seed):
    """3 constrained tasks + 1 unconstrained, d = 2: 8 reservations, at most 2 off the
    preferred workers; replayed in any order, each task runs at most once and a constrained
    task only on one of its candidates."""
    candidates = [[0, 1, 2], [1, 2, 3], [2, 3, 4], None]
    workers, tasks = impl.sample_constrained(impl.Rng(seed), 12, candidates, 2.0)
    assert len(workers) == 8 and sum(w > 4 for w in workers.tolist()) <= 2
    table = impl.TaskTable()
    table.add_job(1, 4, candidates)
    table.reserve(1, workers, tasks)
    order = workers.tolist()
    random.Random(seed).shuffle(order)
    launched = [(w, t) for w in order if (t := table.get_task(1, w)) is not None]
    assert len({t for _, t in launched}) == len(launched)
    assert all(t == 3 or w in candidates[t] for w, t in launched)


def test_constrained_task_preferred_at_a_worker(impl):
    """At a worker, a constrained task it is a candidate for goes before the unconstrained
    ones, and a task a reservation was made for goes before other candidates."""
    table = impl.TaskTable()
    table.add_job(1, 3, [None, [4, 6], [4]])
    table.reserve(1, [4, 4, 6], [-1, 2, -1])
    assert table.get_task(1, 4) == 2  # the task its (second) reservation was made for
    assert table.get_task(1, 4) == 1  # then a constrained task listing worker 4
    assert table.get_task(1, 6) == 0  # then the unconstrained task
    assert table.all_launched(1)


def test_tasks_at_a_worker_go_in_index_order_whatever_the_reservation_order(impl):
    """Among several tasks a worker's reservations were made for, the lowest index goes
    first: decisions depend on the reservations, not on the order they were recorded in."""
    for order in ([3, 1, 2], [1, 2, 3], [2, 3, 1]):
        table = impl.TaskTable()
        table.add_job(1, 4, [None, [4], [4], [4]])
        table.reserve(1, [4, 4, 4], order)
        assert ask_all(table, 1, [4, 4, 4, 4]) == [1, 2, 3, None]


def test_drop_worker_forgets_its_reservations(impl):
    """drop_worker removes the worker's outstanding reservations and says how many."""
    table = impl.TaskTable()
    table.add_job(1, 2)
    table.reserve(1, [1, 2, 2, 3])
    assert table.drop_worker(1, 2) == 2 and table.drop_worker(1, 2) == 0
    assert table.outstanding(1) == 2 and table.get_task(1, 2) is None
    assert sorted(ask_all(table, 1, [1, 3])) == [0, 1]


def test_reprobing_after_all_reservations_are_gone(impl):
    """outstanding == 0 with unlaunched tasks: new reservations finish the job."""
    table = impl.TaskTable()
    table.add_job(1, 3)
    table.reserve(1, [1, 2, 3])
    assert table.get_task(1, 1) == 0
    table.drop_worker(1, 2)
    table.drop_worker(1, 3)
    assert table.outstanding(1) == 0 and table.unlaunched(1).tolist() == [1, 2]
    table.reserve(1, [8, 9])
    assert ask_all(table, 1, [9, 8]) == [1, 2] and table.all_launched(1)


def test_job_bookkeeping(impl):
    """n_tasks, n_launched, outstanding, membership, len and remove_job."""
    table = impl.TaskTable()
    table.add_job(1, 2)
    table.add_job(2, 0)
    table.reserve(2, [5])
    assert table.all_launched(2) and table.workers_to_cancel(2).tolist() == [5]
    assert 1 in table and 2 in table and 3 not in table and "1" not in table and len(table) == 2
    table.reserve(1, [1, 2, 3])
    table.get_task(1, 2)
    assert (table.n_tasks(1), table.n_launched(1), table.outstanding(1)) == (2, 1, 2)
    table.remove_job(1)
    assert 1 not in table and len(table) == 1


def test_soft_task_runs_where_it_is_asked_for_first_preferred_or_not(impl):
    """Two tasks preferring worker 0, each probed there and at another worker: with worker 0 busy,
    the others run both (a busy preferred worker holds nothing up); the probes stay at 0."""
    table = impl.TaskTable()
    table.add_job(1, 2, preferred=[[0], [0]])
    table.reserve(1, [0, 3, 0, 5], [0, 0, 1, 1])
    assert ask_all(table, 1, [5, 3]) == [1, 0] and table.all_launched(1)
    assert table.workers_to_cancel(1).tolist() == [0]


def test_preferred_worker_asking_first_gets_the_task_that_prefers_it(impl):
    """Worker 2 holds task 0's escape probe and task 2's preferred one: it runs task 2 (the one
    preferring it), though task 0 is lower; task 0 still runs at the worker it prefers."""
    table = impl.TaskTable()
    table.add_job(1, 3, preferred=[[1], [4], [2]])
    table.reserve(1, [1, 2, 4, 0, 2, 3], [0, 0, 1, 1, 2, 2])
    assert ask_all(table, 1, [2, 1, 4]) == [2, 0, 1]


def test_a_worker_preferred_by_a_task_it_holds_no_probe_for_runs_it_before_its_own_escape_probe(impl):
    """Rule 2 before rule 3: worker 3 holds task 0's escape probe but task 1 prefers it: task 1."""
    table = impl.TaskTable()
    table.add_job(1, 2, preferred=[[0], [3]])
    table.reserve(1, [0, 3, 5, 6], [0, 0, 1, 1])
    assert ask_all(table, 1, [3, 6, 0]) == [1, 0, None]


def test_spare_unconstrained_probes_run_soft_tasks_once_unconstrained_ones_are_gone(impl):
    """A job of one unconstrained and one soft task: a probe made for any task runs the
    unconstrained task first, then the soft one, wherever it is."""
    table = impl.TaskTable()
    table.add_job(1, 2, preferred=[None, [9]])
    table.reserve(1, [9, 2, 3], [1, -1, -1])
    assert ask_all(table, 1, [2, 3, 9]) == [0, 1, None]


def test_a_task_with_candidates_stays_constrained_whatever_it_prefers(impl):
    """Candidates and preferred workers for one task: the candidates govern (no probe elsewhere)."""
    table = impl.TaskTable()
    table.add_job(1, 1, [[2, 3]], preferred=[[2, 7]])
    with pytest.raises(ValueError, match="not a candidate of task 0"):
        table.reserve(1, [7], [0])


def test_bad_preferred_workers_are_refused(impl):
    """A negative preferred worker or one listed twice: ValueError naming `preferred`."""
    for preferred in ([[-1]], [[2, 2]]):
        with pytest.raises(ValueError, match="preferred: task 0"):
            impl.TaskTable().add_job(1, 1, preferred=preferred)


def test_per_task_sampling_binds_each_task_to_its_own_probes(impl):
    """per_task: each task runs only where a reservation was made for it; a worker whose task ran
    from another probe gets another task only if it holds that task's probe, else nothing."""
    table = impl.TaskTable()
    table.add_job(1, 3, per_task=True)
    table.reserve(1, [0, 1, 1, 2, 3, 4], [0, 0, 1, 1, 2, 2])
    assert ask_all(table, 1, [1, 1, 0, 2, 4]) == [0, 1, None, None, 2] and table.all_launched(1)
    assert table.workers_to_cancel(1).tolist() == [3]


def test_per_task_sampling_leaves_constrained_and_preferring_tasks_as_they_are(impl):
    """per_task with a constrained task (its probes only at its candidates) and a preferring one
    (any spare reservation may run it): worker 5's spare probes run the preferring task, never the
    bound one, which runs at its own probe."""
    table = impl.TaskTable()
    table.add_job(1, 3, [[5], None, None], [None, [6], None], per_task=True)
    with pytest.raises(ValueError, match="not a candidate of task 0"):
        table.reserve(1, [7], [0])
    table.reserve(1, [5, 5, 5, 6, 8, 9], [0, 0, 0, 1, 2, 2])
    assert ask_all(table, 1, [5, 5, 5]) == [0, 1, None]
    assert ask_all(table, 1, [6, 9]) == [None, 2]


def test_get_task_many_agrees_with_get_task():
    """The batch call answers in order exactly as single calls do (-1 for none)."""
    single, batch = sparrow_core.TaskTable(), sparrow_core.TaskTable()
    rng = sparrow_core.Rng(2)
    requests = []
    for job in range(50):
        workers = sparrow_core.sample_batch(rng, 40, 6, 2.0)
        for table in (single, batch):
            table.add_job(job, 6)
            table.reserve(job, workers)
        requests += [(job, w) for w in workers.tolist()]
    random.Random(0).shuffle(requests)
    jobs, workers = np.array(requests).T
    expected = [single.get_task(j, w) for j, w in requests]
    assert batch.get_task_many(jobs, workers).tolist() == [-1 if t is None else t for t in expected]


def test_an_unlaunched_task_is_bound_again_by_the_next_request(impl):
    """unlaunch (give-back) makes a launched task the next one handed out, constrained or not; a task that is
    not launched, or out of range, is refused."""
    table = impl.TaskTable()
    table.add_job(1, 3, [None, [4], None])
    table.reserve(1, [2, 2, 4, 2, 4], [-1, -1, 1, -1, 1])
    assert ask_all(table, 1, [2, 2, 4]) == [0, 2, 1] and table.all_launched(1)
    table.unlaunch(1, 0)
    table.unlaunch(1, 1)
    assert not table.all_launched(1) and table.unlaunched(1).tolist() == [0, 1]
    for bad in (1, 3, -1):  # not launched now, out of range
        with pytest.raises(ValueError):
            table.unlaunch(1, bad)
    assert table.get_task(1, 2) == 0 and table.get_task(1, 4) == 1 and table.all_launched(1)


def test_a_job_added_back_with_launch_all_offers_only_its_unlaunched_task(impl):
    """launch_all then unlaunch: a job added back to the table for one given-back task hands out that task
    alone."""
    table = impl.TaskTable()
    table.add_job(5, 4)
    table.launch_all(5)
    assert table.all_launched(5) and table.n_launched(5) == 4
    table.unlaunch(5, 2)
    table.reserve(5, [7, 7])
    assert ask_all(table, 5, [7, 7]) == [2, None]


# ---- the binding against the reference model ----


# Built once per size and reused by every example: hypothesis spends most of a fresh strategy's cost
# checking it, which made building them inside each draw the bulk of the property's time.
@functools.cache
def worker_lists(n_workers, m):
    """None, or m entries each None or 1-3 distinct workers of n_workers."""
    entry = st.one_of(st.none(), st.lists(st.integers(0, n_workers - 1), unique=True, min_size=1, max_size=3))
    return st.one_of(st.none(), st.lists(entry, min_size=m, max_size=m))


@functools.cache
def operations(n_jobs, n_workers):
    """Up to 40 operations on job ids 0..n_jobs (one unknown) and workers 0..n_workers."""
    job_ids = st.integers(0, n_jobs)  # includes one unknown job id
    worker = st.integers(0, n_workers)
    return st.lists(
        st.one_of(
            st.tuples(st.just("get_task"), job_ids, worker),
            st.tuples(st.just("workers_to_cancel"), job_ids),
            st.tuples(st.just("all_launched"), job_ids),
            st.tuples(st.just("drop_worker"), job_ids, worker),
            st.tuples(st.just("outstanding"), job_ids),
            st.tuples(st.just("unlaunched"), job_ids),
            st.tuples(st.just("remove_job"), job_ids),
            st.tuples(st.just("unlaunch"), job_ids, st.integers(-1, 5)),
            st.tuples(st.just("launch_all"), job_ids),
            st.tuples(st.just("reserve"), job_ids, st.lists(worker, max_size=3)),
        ),
        max_size=40,
    )


@st.composite
def jobs_and_requests(draw):
    """A few jobs (some with per-task candidates, some with preferred workers) with valid
    reservations, then operations."""
    n_workers = draw(st.integers(1, 8))
    jobs = []
    for job_id in range(draw(st.integers(1, 3))):
        m = draw(st.integers(0, 5))
        candidates = draw(worker_lists(n_workers, m))
        preferred = draw(worker_lists(n_workers, m))
        options = [(w, -1) for w in range(n_workers)]
        options += [(w, t) for t, c in enumerate(candidates or []) if c for w in c]
        soft = [t for t, p in enumerate(preferred or []) if p and not (candidates and candidates[t])]
        options += [(w, t) for t in soft for w in range(n_workers)]  # a soft task's probe may be anywhere
        per_task = draw(st.booleans())
        if per_task:  # the tasks with neither are bound to their probes, which may be anywhere
            bound = [t for t in range(m) if not (candidates and candidates[t]) and not (preferred and preferred[t])]
            options += [(w, t) for t in bound for w in range(n_workers)]
        probes = draw(st.lists(st.sampled_from(options), max_size=12))
        jobs.append((job_id, m, candidates, preferred, per_task, probes))
    return jobs, draw(operations(len(jobs), n_workers))


def outcome(table, op):
    try:
        result = getattr(table, op[0])(*op[1:])
    except ValueError:
        return "ValueError"
    return result.tolist() if isinstance(result, np.ndarray) else result


@settings(max_examples=300, deadline=None)  # a property, not a timing: a loaded machine must not fail it
@given(case=jobs_and_requests())
def test_random_operations_match_reference(case):
    """Same jobs, reservations and requests: the same tasks, cancellations and errors."""
    jobs, ops = case
    ours, ref = sparrow_core.TaskTable(), reference.TaskTable()
    for table in (ours, ref):
        for job_id, m, candidates, preferred, per_task, probes in jobs:
            table.add_job(job_id, m, candidates, preferred, per_task)
            if probes:
                table.reserve(job_id, [w for w, _ in probes], [t for _, t in probes])
    for op in ops:
        assert outcome(ours, op) == outcome(ref, op), op
    assert len(ours) == len(ref)


@pytest.mark.parametrize("seed", range(3))
def test_sampled_constrained_jobs_replay_like_the_reference(seed):
    """Sampling, reserving and replaying many mixed jobs gives the reference's answers."""
    rng = np.random.default_rng(seed)
    ours, ref = sparrow_core.TaskTable(), reference.TaskTable()
    ours_rng, ref_rng = sparrow_core.Rng(seed), reference.Rng(seed)
    for job in range(40):
        candidates = [None if rng.random() < 0.5 else rng.choice(30, 4, replace=False).tolist() for _ in range(6)]
        w1, t1 = sparrow_core.sample_constrained(ours_rng, 30, candidates, 2.0)
        w2, t2 = reference.sample_constrained(ref_rng, 30, candidates, 2.0)
        assert w1.tolist() == w2.tolist() and t1.tolist() == t2.tolist()
        for table, (w, t) in ((ours, (w1, t1)), (ref, (w2, t2))):
            table.add_job(job, 6, candidates)
            table.reserve(job, w, t)
        order = rng.permutation(w1).tolist()
        assert ask_all(ours, job, order) == ask_all(ref, job, order)
        assert ours.unlaunched(job).tolist() == ref.unlaunched(job).tolist()
