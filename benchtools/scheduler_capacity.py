"""What one scheduler sustains: `python -m benchtools.scheduler_capacity` runs a real scheduler
process (`sparrow scheduler`) and drives it with many light node monitors and a client from this
process, then reports the scheduler's CPU time per task and so its task decisions per second per
scheduler core, and projects 10 and 100 schedulers with the simulator.

The node monitors speak the protocol with the node monitor's own logic (NodeMonitorLogic: the
reservation queue, GetTask, slot accounting) over real connections, but answer at once: a launched
task is finished in the same pass (no executor), so the scheduler is the only service doing work per
task besides this load generator. The client (the async Client) keeps `--in-flight` jobs of
`--job-size` no-op tasks submitted. The scheduler's CPU time (every thread, from /proc schedstat) is
read before and after the measured window; decisions/s per core = tasks finished / scheduler CPU
seconds: what it would sustain with a core of its own, however busy the machine (this process
shares the cores with it). On a 2-core machine the load generator is the bottleneck of the wall
rate, not of the per-task CPU figure; on a many-core machine run it with more `--node-monitors`.

Projection: the simulator (sparrow_core.sim) with `n_schedulers` 1, 10 and 100 and the measured
per-task scheduler cost as its service time shows whether jobs spread over schedulers lose anything
to batch sampling; throughput scales with the schedulers as long as the workers keep up, so N
schedulers sustain about N x the per-core rate (the paper's schedulers share no state).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.wire.link_config import LinkConfig

NODE_MONITORS = 8
SLOTS = 16  # per node monitor: the paper's hosts had 16 cores
JOB_SIZE = 100
IN_FLIGHT = 20
SECONDS = 10.0
WARMUP_SECONDS = 2.0
HEARTBEAT = 0.5
TARGET = 20_000  # task decisions/s per scheduler core


def start_scheduler(secret_file: str) -> tuple[subprocess.Popen, str]:
    """A `sparrow scheduler` process on loopback; its address from its ready line."""
    from sparrow_runtime.services.ready_line import parse_ready_line

    command = [
        sys.executable,
        "-m",
        "sparrow_runtime.cli.main",
        "scheduler",
        "--insecure",  # one trusted host: the load generator speaks the shared-secret handshake
        "--listen",
        "127.0.0.1:0",
        "--secret-file",
        secret_file,
        "--log-level",
        "warning",
        "--exit-with-parent",
        "--max-client-tasks",
        "10000000",
    ]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    parsed = parse_ready_line(line)
    if parsed is None:
        process.kill()
        process.wait()
        process.stdin.close()
        process.stdout.close()
        raise SystemExit(f"the scheduler did not start: {line!r}")
    return process, parsed[0]


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds of every thread of `pid` (schedstat, ns)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total / 1e9


async def fake_node_monitor(address, secret: bytes, node_id: str, slots: int, done: list[int]) -> None:
    """Register with the scheduler at `address` as a node monitor of `slots` slots and serve it: every
    launched task finishes at once (counted in done[0])."""
    import trio

    from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
    from sparrow_runtime.wire.address import parse_address
    from sparrow_runtime.wire.connection import send_grouped
    from sparrow_runtime.wire.handshake import connect
    from sparrow_runtime.wire.messages import Outcome, Registered, RegisterNodeMonitor, TaskToNode

    logic = NodeMonitorLogic(
        NodeMonitorConfig(slots=slots, pipeline="off")
    )  # one GetTask per task: the scheduler's load as measured
    none = Outcome(True, b"\x80\x05N.")  # pickle.dumps(None, 5): what a no-op task returns
    conn = await connect(parse_address(address), link=LinkConfig(secret=secret), role="node-monitor", peer_id=node_id)
    await conn.send_now([RegisterNodeMonitor(node_id, slots)])
    reply = await conn.receive_one()
    if not isinstance(reply, Registered):
        raise SystemExit(f"{node_id} was not registered: {reply!r}")
    logic.on_scheduler_registered(conn)

    def on_messages(msgs: list) -> None:
        out = logic.on_scheduler_messages(conn, msgs)
        sends = []
        while out:
            more = []
            for peer, msg in out:
                if type(msg) is TaskToNode:
                    done[0] += 1
                    more += logic.on_task_done(peer, msg.job_id, msg.task, none)
                else:
                    sends.append((peer, msg))
            out = more
        send_grouped(sends)

    async def heartbeat() -> None:
        while True:
            await trio.sleep(HEARTBEAT)
            conn.send(logic.heartbeat())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(heartbeat)
        await conn.serve(on_messages)
        nursery.cancel_scope.cancel()


async def drive(address: str, secret: bytes, args: argparse.Namespace, pid: int) -> dict[str, float]:
    import trio

    from sparrow_runtime import Client

    done = [0]
    async with trio.open_nursery() as nursery:
        for i in range(args.node_monitors):
            nursery.start_soon(fake_node_monitor, address, secret, f"fake-{i}", args.slots, done)
        async with Client([address], secret=secret) as client:
            while len((await client.status()).nodes) < args.node_monitors:  # a job then spreads over all
                await trio.sleep(0.05)
            window: dict[str, float] = {}

            async def measure() -> None:
                await trio.sleep(args.warmup)
                window.update(tasks=done[0], cpu=process_cpu_seconds(pid), wall=time.perf_counter())
                await trio.sleep(args.seconds)
                window.update(
                    tasks=done[0] - window["tasks"],
                    cpu=process_cpu_seconds(pid) - window["cpu"],
                    wall=time.perf_counter() - window["wall"],
                )

            async with trio.open_nursery() as inner:
                inner.start_soon(measure)
                pending = []
                deadline = trio.current_time() + args.warmup + args.seconds
                while trio.current_time() < deadline:
                    pending.append(await client.submit_job([int] * args.job_size))
                    if len(pending) >= args.in_flight:
                        await pending.pop(0).wait()
                for job in pending:
                    await job.wait()
        nursery.cancel_scope.cancel()
    return window


MEAN_TASK_S = 0.1  # the projection's task: 100 ms (the paper's sub-second tasks)


def project(per_core: float) -> list[tuple[int, float, int, float]]:
    """Per 1, 10 and 100 schedulers: (schedulers, their capacity N x `per_core` tasks/s, the slots of a
    cluster they keep at 80% load with 100 ms tasks, the simulated mean response over the ideal). The
    simulator spreads jobs round-robin over `n_schedulers` that share no state (sparrow policy: batch
    sampling + late binding); its schedulers are infinitely fast, so the figure says what spreading
    the jobs over N independent schedulers costs in placement, not their speed."""
    try:
        from sparrow_core.sim import SimConfig, simulate
    except ImportError:
        return []
    out = []
    for n in (1, 10, 100):
        capacity = n * per_core
        slots = int(capacity * MEAN_TASK_S / 0.8)  # busy at 80% when the schedulers run flat out
        workers = max(1, slots // 16)  # hosts of 16 slots, as the paper's
        config = SimConfig(
            n_workers=workers,
            slots=16,
            n_schedulers=n,
            load=0.8,
            tasks_per_job=100,
            n_jobs=max(500, 20 * n),
            mean_duration=MEAN_TASK_S,
            seed=1,
            keep_task_waits=False,
        )
        out.append((n, capacity, workers * 16, simulate(config).summary()["response_over_ideal"]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--node-monitors", type=int, default=NODE_MONITORS, help="light node monitors")
    parser.add_argument("--slots", type=int, default=SLOTS, help="slots per node monitor")
    parser.add_argument("--job-size", type=int, default=JOB_SIZE)
    parser.add_argument("--in-flight", type=int, default=IN_FLIGHT, help="jobs kept submitted")
    parser.add_argument("--seconds", type=float, default=SECONDS, help="the measured window")
    parser.add_argument("--warmup", type=float, default=WARMUP_SECONDS)
    args = parser.parse_args(argv)
    if min(args.node_monitors, args.slots, args.job_size, args.in_flight) < 1 or args.seconds <= 0:
        parser.error("--node-monitors, --slots, --job-size, --in-flight must be >= 1 and --seconds > 0")
    import trio

    secret = os.urandom(32).hex()
    with tempfile.TemporaryDirectory(prefix="sparrow-capacity-") as folder:
        secret_file = os.path.join(folder, "secret")
        with open(os.open(secret_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(secret)
        process, address = start_scheduler(secret_file)
        try:
            window = trio.run(drive, address, secret.encode(), args, process.pid)
        finally:
            process.stdin.close()
            process.terminate()
            process.wait(10)
            process.stdout.close()
    per_core = window["tasks"] / window["cpu"]
    print(
        f"one scheduler, {args.node_monitors} light node monitors x {args.slots} slots, jobs of {args.job_size}, "
        f"{args.in_flight} in flight, {args.seconds:g} s measured ({os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f}):"
    )
    print(
        f"  {window['tasks']:,} tasks in {window['wall']:.2f} s: {window['tasks'] / window['wall']:,.0f} tasks/s "
        f"(wall, load generator and scheduler sharing the machine)"
    )
    print(
        f"  scheduler CPU {1e6 * window['cpu'] / window['tasks']:.1f} us per task: "
        f"{per_core:,.0f} task decisions/s per scheduler core (target {TARGET:,}: "
        f"{'met' if per_core >= TARGET else 'not met'})"
    )
    for n, capacity, slots, over_ideal in project(per_core):
        print(
            f"  {n:>3} schedulers: {capacity:,.0f} tasks/s, enough for {slots:,} slots of 100 ms tasks at 80% "
            f"load; simulated there (n_schedulers={n}, jobs of 100): mean response "
            f"{over_ideal:.2f}x the ideal"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
