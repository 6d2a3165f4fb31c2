"""Where a command writes its files (`sparrow simulate --paper`, `sparrow experiment cluster`)."""

from __future__ import annotations

import time
from pathlib import Path


def output_folder(out: Path | None, stem: str) -> tuple[Path, bool]:
    """Where a command writes its files, and whether the folder was made now: `out` (created with its
    parents if missing; an existing folder is reused), else a new folder of the current directory,
    STEM-DATE-TIME[-N] (so a run never writes over files, tracked ones included, unless told to).

    Error handling: ValueError if `out` is a file."""
    if out is not None:
        if out.exists():
            if not out.is_dir():
                raise ValueError(f"--out {out} is a file, not a folder")
            return out, False
        out.mkdir(parents=True)
        return out, True
    base = Path.cwd() / time.strftime(f"{stem}-%Y%m%d-%H%M%S")
    for n in range(1, 1000):
        candidate = base if n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            candidate.mkdir()
            return candidate, True
        except FileExistsError:
            continue
    raise OSError(f"no free folder name like {base}")
