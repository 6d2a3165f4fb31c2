"""What a host offers besides its slots, when its node monitor is not told (`--resources`): its CPUs and
memory, and its GPUs where the host shows them.

- CPUs: the CPUs this process may run on (`os.sched_getaffinity`, else `os.cpu_count`);
- memory: the physical memory (`SC_PHYS_PAGES` x `SC_PAGE_SIZE`);
- GPUs: the devices `CUDA_VISIBLE_DEVICES` lists, else the entries of `/proc/driver/nvidia/gpus`, else
  the lines of `nvidia-smi -L` if that command is present, else none.

A node monitor told its resources uses them as given; its GPU ids are then the detected ones if there
are as many, else 0 .. n-1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from ..wire.resources import CPUS, GPU, MEMORY, MILLI

NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")
NVIDIA_SMI_TIMEOUT = 5.0  # seconds `nvidia-smi -L` may take


def detect_gpus(environ: Mapping[str, str] | None = None, proc: Path = NVIDIA_GPUS) -> list[str]:
    """The GPU device ids this host shows (see the module docstring), in order; [] for none."""
    environ = os.environ if environ is None else environ
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [part.strip() for part in visible.split(",") if part.strip()]
        return [] if ids[:1] == ["-1"] else ids  # -1 hides every device
    if proc.is_dir():
        return [str(i) for i in range(sum(1 for _ in proc.iterdir()))]
    smi = shutil.which("nvidia-smi")
    if smi is not None:
        try:
            listed = subprocess.run(
                [smi, "-L"], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return []
        lines = [line for line in listed.stdout.splitlines() if line.startswith("GPU ")]
        return [str(i) for i in range(len(lines))]
    return []


def detect_capacity(gpus: list[str]) -> dict[str, int]:
    """This host's CPUs, memory and the `gpus` (detect_gpus), in units (wire/resources.py)."""
    cpus = len(allowed_cpus()) or os.cpu_count() or 1
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        memory = 0
    capacity = {CPUS: cpus * MILLI, MEMORY: max(memory, 0), GPU: len(gpus)}
    return {name: units for name, units in capacity.items() if units}


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on (the ones a task may be pinned to); [] where the host does not say."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def host_capacity(declared: Mapping[str, int] | None) -> tuple[dict[str, int], list[str]]:
    """(capacity, GPU ids) of this node monitor: `declared` ({name: units}) if given, else detected."""
    found = detect_gpus()
    capacity = detect_capacity(found) if declared is None else dict(declared)
    count = capacity.get(GPU, 0)
    return capacity, found if len(found) == count else [str(i) for i in range(count)]
