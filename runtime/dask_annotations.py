"""Dask annotations (`with dask.annotate(retries=2, priority=5, workers=["nm0"]): ...`) as Sparrow job options.

A graph's annotations come per key (`__dask_annotations__()` of the collection Dask hands its scheduler):

- `retries=n`: a failed task runs again up to n times, its own exception included (Dask retries erred tasks);
- `priority=p`: Dask runs higher priorities first, Sparrow lower first: the job's priority is the
  executor's minus p (it orders tasks at node monitors whose policy is `priority`);
- `workers=[ids]`: the node monitors the task may run on (a constraint), or, with
  `allow_other_workers=True`, where it is probed at first (a preference);
- `resources={"GPU": 1, "memory": "4GiB"}`: what the task takes besides its slot (docs/resources.md); names
  are lower-cased (Dask's "GPU" is Sparrow's "gpu"), so it runs only on a node monitor that holds it;
- any other annotation is ignored, with one debug line per graph naming them (as Dask's schedulers do).

A bad value (a retries that is not an int >= 0, a priority that is not an int, workers that are not ids, a
bad amount of a resource) raises ValueError naming the annotation and the key.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping
from typing import Any

from .client.job import JobOptions
from .wire.limits import PRIORITY_MAX, PRIORITY_MIN

logger = logging.getLogger(__name__)

HONOURED = frozenset(("retries", "priority", "workers", "allow_other_workers", "resources"))
REFUSED: dict[str, str] = {}  # annotations refused with NotImplementedError: name -> why


def graph_annotations(dsk: Any) -> Mapping[str, Mapping[Hashable, object]]:
    """The annotations of the graph or expression `dsk`, by name then key ({} when it has none)."""
    annotations = getattr(dsk, "__dask_annotations__", None)
    return annotations() if callable(annotations) else {}


def task_options(annotations: Mapping[str, Mapping[Hashable, object]], priority: int) -> dict[Hashable, JobOptions]:
    """Each annotated key's job options, for an executor whose jobs have `priority`. Raises as the module says."""
    for name, reason in REFUSED.items():
        if annotations.get(name):
            raise NotImplementedError(f"the Dask annotation {name!r} is not supported: {reason}")
    unknown = sorted(set(annotations) - HONOURED - set(REFUSED))
    if unknown:
        logger.debug("Dask annotations ignored (not for Sparrow): %s", ", ".join(unknown))
    by_key: dict[Hashable, dict[str, Any]] = {}
    for name in HONOURED:
        for key, value in annotations.get(name, {}).items():
            by_key.setdefault(key, {})[name] = value
    return {key: _options(key, values, priority) for key, values in by_key.items()}


def _options(key: Hashable, values: dict[str, Any], priority: int) -> JobOptions:
    retries = values.get("retries")
    if retries is not None and (isinstance(retries, bool) or not isinstance(retries, int) or retries < 0):
        raise ValueError(f"Dask annotation retries={retries!r} of {key!r}: must be an int >= 0")
    level = values.get("priority")
    if level is not None:
        if isinstance(level, bool) or not isinstance(level, int):
            raise ValueError(f"Dask annotation priority={level!r} of {key!r}: must be an int")
        level = priority - level  # Dask: higher first; Sparrow: lower first
        if not PRIORITY_MIN <= level <= PRIORITY_MAX:
            raise ValueError(f"Dask annotation priority of {key!r}: out of range for Sparrow's priorities")
    workers = values.get("workers")
    ids: tuple[str, ...] = ()
    if workers is not None:
        ids = (workers,) if isinstance(workers, str) else tuple(workers)
        if not ids or not all(isinstance(w, str) for w in ids):
            raise ValueError(f"Dask annotation workers={workers!r} of {key!r}: must be node monitor ids")
    soft = bool(values.get("allow_other_workers", False))
    asked = values.get("resources")
    if asked is not None and not isinstance(asked, Mapping):
        raise ValueError(f"Dask annotation resources={asked!r} of {key!r}: must be a mapping of names to amounts")
    try:
        return JobOptions(
            priority=level,
            node_monitors=() if soft else ids,
            prefer=ids if soft else (),
            retries=retries,
            retry_exceptions=True if retries is not None else None,
            resources=None if asked is None else {str(name).lower(): amount for name, amount in asked.items()},
        )
    except ValueError as exc:
        raise ValueError(f"Dask annotation resources={asked!r} of {key!r}: {exc}") from None
