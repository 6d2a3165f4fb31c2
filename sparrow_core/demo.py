"""A short tour of the kernels: what they decide for a few jobs, and how fast (python -m sparrow_core.demo)."""

from __future__ import annotations

import time

import numpy as np

from sparrow_core import ReservationQueue, Rng, TaskTable, sample_batch, sample_batch_many, sample_constrained


def _rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}/s"


def main() -> None:
    rng = Rng(2013)
    print("Batch sampling: a job of 4 tasks at probe ratio 2 among 10,000 workers probes")
    print("   ", sample_batch(rng, 10_000, 4, 2.0).tolist())
    workers, tasks = sample_constrained(rng, 10, [[0, 1, 2], [2, 3, 4], None], 2.0)
    print("Per-task constraints (task 0 on 0-2, task 1 on 2-4, task 2 anywhere): probes -> tasks")
    print("   ", list(zip(workers.tolist(), tasks.tolist())))

    table = TaskTable()
    table.add_job(1, n_tasks=3)
    probed = sample_batch(rng, 10, 3, 2.0)
    table.reserve(1, probed)
    answers = [(int(w), table.get_task(1, w)) for w in probed[:4]]
    print("Late binding: workers ask in turn, (worker, task handed out):", answers)
    print("    all launched:", table.all_launched(1), " cancel at:", table.workers_to_cancel(1).tolist())

    queue = ReservationQueue("fair", weights={"alice": 3, "bob": 1})
    for job in range(40):
        queue.push(job, "alice" if job % 2 else "bob")
    served = [r.user for r in (queue.pop() for _ in range(20)) if r is not None]  # 40 queued: 20 pops, 20 users
    print("Fair sharing at weights 3:1, 20 pops:", {u: served.count(u) for u in ("alice", "bob")})

    n_jobs = 200_000
    sizes = np.full(n_jobs, 100, dtype=np.int64)
    start = time.perf_counter()
    sample_batch_many(rng, 10_000, sizes, 2.0)
    elapsed = time.perf_counter() - start
    print(f"Speed: batch sampling of 200 probes among 10,000 workers, {_rate(n_jobs, elapsed)} jobs")
    n_ops = 1_000_000
    fair = ReservationQueue("fair")
    jobs = np.arange(n_ops, dtype=np.int64)
    users = jobs % 100
    start = time.perf_counter()
    fair.push_many(jobs, users)
    fair.pop_many(n_ops)
    elapsed = time.perf_counter() - start
    print(f"Speed: fair reservation queue, 100 users, {_rate(n_ops, elapsed)} push+pop pairs")


if __name__ == "__main__":
    main()
