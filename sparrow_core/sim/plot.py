"""Paper-style figures of a sweep (needs matplotlib, the optional extra `plot`): mean
response time against load per policy, normalised to omniscient; and response-time CDFs."""

from __future__ import annotations

import importlib.util
from os import PathLike

import numpy as np

from .sweep import Sweep


def require_matplotlib() -> None:
    """Raises ImportError with the install command when matplotlib is missing."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ImportError("plotting needs matplotlib: pip install 'sparrow-core[plot]'")


def plot_sweep(sweep: Sweep, path: str | PathLike[str], *, title: str = "", cdf_load: float | None = None) -> None:
    """Writes a two-panel figure to `path` (format from the suffix, e.g. .png, .svg).

    Left: mean response / omniscient's (or the mean response itself when omniscient was
    not simulated) against load. Right: CDF of job response times at `cdf_load` (default:
    the highest load of the sweep).
    """
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    policies = list(dict.fromkeys(str(row["policy"]) for row in sweep.rows))
    loads = sorted({float(row["load"]) for row in sweep.rows})
    normalised = "omniscient" in policies
    cdf_at = max(loads) if cdf_load is None else cdf_load
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for policy in policies:
        rows = sorted((r for r in sweep.rows if r["policy"] == policy), key=lambda r: float(r["load"]))
        y = [float(r["vs_omniscient"] if normalised else r["mean"]) for r in rows]
        left.plot([float(r["load"]) for r in rows], y, marker="o", label=policy)
        if (policy, cdf_at) in sweep.responses:
            data = np.sort(sweep.responses[(policy, cdf_at)])
            right.plot(data, np.arange(1, data.size + 1) / data.size, label=policy)
    left.set_xlabel("load")
    left.set_ylabel("mean response time / omniscient" if normalised else "mean response time (s)")
    left.set_yscale("log")
    left.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    left.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    left.grid(True, which="both", alpha=0.3)
    left.legend()
    right.set_xlabel("job response time (s)")
    right.set_ylabel("CDF")
    right.set_xscale("log")
    right.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    right.xaxis.set_minor_formatter(NullFormatter())
    right.set_title(f"load {cdf_at:g}")
    right.grid(True, which="both", alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
