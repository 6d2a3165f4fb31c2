"""`TickBatch`: what is added in one pass of the trio loop, handed over once, right after (the outcomes
of one receive are handled in one pass, so what they cause is one batch: dask.py's outcomes)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

logger = logging.getLogger(__name__)


class TickBatch:
    """Collects items added in the trio thread and calls `flush(items)` once, after the current pass of
    the trio loop: the outcomes of one receive are handled in one pass, so what they make ready is one
    batch. A flush that raises is logged, never lost silently, and stops nothing else."""

    def __init__(self, flush: Callable[[list], None]) -> None:
        self._flush = flush
        self._items: list = []

    def add(self, item: object) -> None:
        if not self._items:
            trio.lowlevel.current_trio_token().run_sync_soon(self._run)
        self._items.append(item)

    def _run(self) -> None:
        items, self._items = self._items, []
        try:
            self._flush(items)
        except Exception:  # a bug: the trio loop of the client must go on
            logger.exception("handling %d items in one batch failed", len(items))
