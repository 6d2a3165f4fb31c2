"""sparrow_experiments: the research on top of the runtime, apart from what a cluster runs.

- The paper's cluster experiment (`sparrow experiment cluster`): TPC-H-like queries (queries.py) run on a
  local cluster by several clients through several schedulers (run.py), reported against the ideal
  scheduler and the simulator's prediction (report.py, document.py, machine.py).
- The work-stealing experiment (`sparrow experiment steal`, steal.py) and its design study in the simulator
  alone (`sparrow experiment steal-study`, steal_design.py), with the replays of a run's own probe placement
  (placement.py), steal victims (steal_replay.py), steal timing (steal_timing.py) and submission delays
  (submissions.py).
- The simulator's replay of a run (replay.py) and the demo's report against it (demo_report.py,
  `sparrow local --demo`).

Only the `sparrow` command's experiment and demo entry points import this package (tests/test_import_graph.py
holds it so). It uses sparrow_core's simulator and, of sparrow_runtime, the public Client and JobHandle and
these pieces that are not exported (each is named here so that a change to one is a change to this package):
`client.core.build_submit` (a job's SubmitJob), `demo.workload` and `demo.task` (the demo's job records and
task), `wire.messages.Outcome` and `wire.task_codec.pack_task` (a task's wire form), `services.cpus`,
`services.placement_log` and `services.steal_log` (the logs the experiments' services write), and
`services.steal_logic.STEAL_VICTIMS` (the peers a runtime thief asks, which the model's thieves ask too).
"""
