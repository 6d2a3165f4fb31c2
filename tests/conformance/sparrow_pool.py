"""The executor CPython's concurrent.futures tests make here: SparrowExecutor on the cluster whose
scheduler addresses SCHEDULERS_ENV names (the secret from SPARROW_SECRET, as every client reads it),
built as the standard executors are, also in the tests' own child processes."""

from __future__ import annotations

import os
from typing import Any

from sparrow_runtime import SparrowExecutor

SCHEDULERS_ENV = "SPARROW_CONFORMANCE_SCHEDULERS"  # comma-separated scheduler addresses


class SparrowPoolExecutor(SparrowExecutor):
    """SparrowExecutor(max_workers, mp_context): the cluster's slots and processes decide both, so
    they are accepted and not used."""

    def __init__(self, max_workers: int | None = None, mp_context: Any = None) -> None:
        super().__init__(os.environ[SCHEDULERS_ENV].split(","))
