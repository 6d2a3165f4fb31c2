"""LocalCluster's keyword arguments for the benchmarks, for any build: its config objects where the build has
them (NodeMonitorConfig, SchedulerConfig), else the keywords of older builds (asv and benchtools.ab run this
suite against other commits)."""

from __future__ import annotations

import importlib


def pipelining(depth: int | None) -> dict:
    """The node monitors' settings for pipelining `depth` deep: None the build's default (steady, 16 deep),
    0 off (plain late binding), N > 0 pipelined N deep (in the default mode)."""
    if depth is None:
        return {}
    return {"pipeline": "off"} if depth == 0 else {"pipeline_depth": int(depth)}


def cluster_options(executor: str, pipeline_depth: int | None = None, bind_idle: bool | None = None) -> dict:
    """LocalCluster's keyword arguments for node monitors of `executor` ("process" or "thread") pipelining
    `pipeline_depth` deep (`pipelining`) and schedulers binding tasks to idle node monitors or not (None: the
    build's default): its config objects where the build has them (NodeMonitorConfig, SchedulerConfig), else
    the keywords of older builds."""
    runtime = importlib.import_module("sparrow_runtime")
    node = {"executor": executor, **pipelining(pipeline_depth)}
    options = {"node_monitor": runtime.NodeMonitorConfig(**node)} if hasattr(runtime, "NodeMonitorConfig") else node
    if bind_idle is not None:
        config = getattr(runtime, "SchedulerConfig", None)
        options.update({"bind_idle": bind_idle} if config is None else {"scheduler": config(bind_idle=bind_idle)})
    return options
