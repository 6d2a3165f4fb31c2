"""What a task with resources is told of its place, and the CPUs it is pinned to (docs/resources.md).

A node monitor runs such a task through `run_placed`: for the task's duration the worker's environment
names its node monitor (`SPARROW_NODE`) and its GPUs (`CUDA_VISIBLE_DEVICES` and `SPARROW_GPUS`: the
device ids it holds alone), and the worker runs on the CPUs it was given (`os.sched_setaffinity`, where
the host allows it); all of it is put back as it was when the task ends. The environment is the
process's, so this is exact in process executors (a worker runs one task at a time) and shared between
the tasks of a thread executor.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import cloudpickle

from ..wire.task_codec import pack_task

PLACE_VARIABLES = ("SPARROW_NODE", "SPARROW_GPUS", "CUDA_VISIBLE_DEVICES")


def placed_payload(payload: bytes, node_id: str, gpus: Sequence[str], cpus: Sequence[int]) -> bytes:
    """The packed task `payload` run through run_placed with its place."""
    return pack_task(run_placed, (node_id, tuple(gpus), tuple(cpus), payload))


def run_placed(node_id: str, gpus: tuple[str, ...], cpus: tuple[int, ...], payload: bytes, *inputs: object) -> object:
    """Run the packed task `payload` (with a dependent task's `inputs` last) in its place."""
    fn, args, kwargs = cloudpickle.loads(payload)
    with _place(node_id, gpus, cpus):
        return fn(*args, *inputs, **kwargs)


@contextmanager
def _place(node_id: str, gpus: tuple[str, ...], cpus: tuple[int, ...]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in PLACE_VARIABLES}
    os.environ["SPARROW_NODE"] = node_id
    if gpus:
        os.environ["SPARROW_GPUS"] = os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
    affinity = None
    if cpus and hasattr(os, "sched_setaffinity"):
        affinity = os.sched_getaffinity(0)
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:  # a CPU this worker may not use: it runs where it may
            affinity = None
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if affinity is not None:
            os.sched_setaffinity(0, affinity)
