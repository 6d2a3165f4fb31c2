"""The scheduler's and node monitors' logic with work stealing, wired by an in-memory network that delivers
messages in a random order (FIFO per link, as TCP), with node monitors killed at random moments: whatever
the interleaving, every task of every job ends with exactly one outcome and every job ends (no hang). With
resources (node monitors of different capacities, jobs asking for GPUs and CPUs), also: a task runs only where
its request fits, holding its own request there (stolen or not), a host's running tasks never hold more than
its capacity, and no two of them share a GPU id."""

import random
from collections import Counter, deque

import pytest

from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.fit import HostResources
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic, Stop
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import (
    JobAccepted,
    Outcome,
    OutcomeToClient,
    Registered,
    StealRelease,
    SubmitJob,
    TaskToNode,
)

from ..manual_clock import ManualClock

# resources: node monitor i offers CAPACITIES[i % 3] (None: nothing), with 2 slots; a job asks for one of REQUESTS
CAPACITIES = [None, {"gpu": 1, "cpus": 2000}, {"gpu": 2, "cpus": 4000}]
REQUESTS = [None, {"gpu": 1}, {"gpu": 2}, {"cpus": 2000}, {"gpu": 1, "cpus": 1000}]


class World:
    """One scheduler "s", node monitors "nm0".. (one slot each, stealing; with `resources`, two slots and the
    capacities of CAPACITIES), one client "c"; `links` holds the messages in flight per (sender, receiver)."""

    def __init__(self, seed: int, n_nodes: int, resources: bool = False) -> None:
        self.rng = random.Random(seed)
        self.clock = ManualClock()
        self.scheduler = SchedulerLogic(seed=seed, clock=self.clock)
        self.nodes: dict[str, NodeMonitorLogic] = {}
        self.links: dict[tuple, deque] = {}
        self.running: list[tuple[str, int, int]] = []  # (node, job, task) on an executor
        self.outcomes: Counter = Counter()  # (ref, task) -> outcomes the client got
        self.dead: set[str] = set()
        self.requests: dict[int, dict | None] = {}  # ref -> what its tasks ask for
        self.jobs: dict[int, int] = {}  # job id -> ref
        self.moved_with_requests = 0  # reservations lent with a request (Stolen)
        for i in range(n_nodes):
            name = f"nm{i}"
            capacity = CAPACITIES[i % 3] if resources else None
            slots = 2 if resources else 1
            node = NodeMonitorLogic(
                NodeMonitorConfig(slots=slots, steal=True),
                host=None if capacity is None else HostResources(capacity),
                seed=seed * 100 + i,
            )
            node.stealing.node_id = name
            self.nodes[name] = node
            self.send(name, "s", node.registration(name, (), name, False, name))

    def send(self, sender, receiver, msg) -> None:
        if sender in self.dead or receiver in self.dead:
            return
        self.links.setdefault((sender, receiver), deque()).append(msg)

    def from_scheduler(self, out) -> None:
        for peer, msg in out:
            if peer == "c":
                if type(msg) is OutcomeToClient:
                    self.outcomes[(msg.ref, msg.task)] += 1
                elif type(msg) is JobAccepted:
                    self.jobs[msg.job_id] = msg.ref
            else:
                self.send("s", peer, msg)

    def from_node(self, name: str, out) -> None:
        for peer, msg in out:
            if type(msg) is TaskToNode:
                self.running.append((name, msg.job_id, msg.task))
                self.check_launch(name, msg)
            elif type(msg) is Stop:
                continue
            elif type(msg) is StealRelease:  # peer: the steal link (thief, victim)
                self.send(name, peer[1], ("release", peer, msg))
            else:
                self.send(name, "s", msg)

    def deliver(self, sender, receiver, msg) -> None:
        if receiver == "s":
            self.from_scheduler(self.scheduler.on_node_messages(sender, [msg]))
            return
        node = self.nodes[receiver]
        if sender == "s":
            if type(msg) is Registered:
                self.from_node(receiver, node.on_registration_reply("s", msg))
            else:
                self.from_node(receiver, node.on_scheduler_messages("s", [msg]))
        elif msg[0] == "release":
            self.from_node(receiver, node.on_release(msg[1], msg[2]))
        elif msg[0] == "take":  # the victim's side of StealTake: it lends, the answer travels back
            _, link, take = msg
            out: list = []
            self.send(receiver, sender, ("stolen", link, node.give(link, take, out), take.count))
            self.from_node(receiver, out)
        elif msg[0] == "stolen":
            _, link, stolen, asked = msg
            self.moved_with_requests += sum(r.count for r in stolen.reservations if r.resources)
            self.from_node(receiver, node.on_stolen(link, stolen, asked))

    def attempt(self, name: str) -> None:
        """A steal attempt of `name`: the kernel's victims and choice over their current answers (the probe
        round trip is taken as instant), then StealTake in flight."""
        node = self.nodes[name]
        node.stealing.steal_due = False
        if not node.stealing.steal_wanted():
            return
        peers = [p for p in node.stealing.peers() if p not in self.dead]
        if not peers:
            return
        victims = [peers[i] for i in node.stealing.choose_victims(len(peers))]
        choice = node.stealing.choose([self.nodes[v].stealing.steal_state() for v in victims])
        if choice is not None:
            victim = victims[choice[0]]
            self.send(name, victim, ("take", (name, victim), node.stealing.steal_take(choice[1])))

    def kill(self, name: str) -> None:
        """SIGKILL: its links, queued messages and running tasks go; the scheduler and its peers see the loss."""
        self.dead.add(name)
        for key in [k for k in self.links if name in k]:
            del self.links[key]
        self.running = [r for r in self.running if r[0] != name]
        self.from_scheduler(self.scheduler.on_node_lost(name))
        for other, node in self.nodes.items():
            if other not in self.dead:
                self.from_node(other, node.on_thief_lost((name, other)))

    def check_launch(self, name: str, msg: TaskToNode) -> None:
        """A task launched at `name`: with a request, it holds that request there and GPU ids of its own, and the
        host's running tasks hold no more than its capacity."""
        node = self.nodes[name]
        request = self.requests.get(self.jobs.get(msg.job_id, -1))
        if node.fit is None:
            assert not request, f"job {msg.job_id} asking for {request} ran at {name}, which offers nothing"
            return
        key = ("s", msg.job_id, msg.task)
        if request:
            assert node.fit.units(node.fit.held[key]) == request  # its own request, stolen or not
            assert len(node.fit.devices.get(key, ())) == request.get("gpu", 0)
        else:
            assert key not in node.fit.held
        for kind, capacity in node.fit.capacity.items():
            held = sum(node.fit.units(r).get(kind, 0) for r in node.fit.held.values())
            assert held <= capacity, f"{name} holds {kind}={held} over its {capacity}"
        ids = [gpu for gpus in node.fit.devices.values() for gpu in gpus]
        assert len(ids) == len(set(ids)), f"{name} gave a GPU id to two running tasks: {ids}"

    def step(self, kill_chance: float) -> bool:
        """One random event; False once nothing is left to happen."""
        live = [n for n in self.nodes if n not in self.dead]
        due = [n for n in live if self.nodes[n].stealing.steal_due]
        busy = [k for k, q in self.links.items() if q]
        choices = [("link", k) for k in busy] + [("run", r) for r in self.running] + [("steal", n) for n in due]
        if not choices:
            return False
        # a thief that holds lent reservations is killed far more often than another: the kill mid-steal
        holding = sorted(
            {t for n in live for (t, _), lent in self.nodes[n].stealing._lent.items() if lent and t in live}
        )
        if len(live) > 2 and self.rng.random() < (100 * kill_chance if holding else kill_chance):
            self.kill(self.rng.choice(holding or live))
            return True
        kind, what = self.rng.choice(choices)
        if kind == "link":
            self.deliver(what[0], what[1], self.links[what].popleft())
        elif kind == "run":
            self.running.remove(what)
            name, job, task = what
            self.from_node(name, self.nodes[name].on_task_done("s", job, task, Outcome(True)))
        else:
            self.attempt(what)
        return True


def run_world(
    seed: int, n_jobs: int = 12, kill_chance: float = 0.002, resources: bool = False
) -> tuple[World, list[int]]:
    """The registered world of `seed` given n_jobs jobs of 1-8 tasks (half with one probe per task, half with
    d = 2; with `resources`, each asking for one of REQUESTS) at random moments, and up to 2 node monitors killed
    at random moments, run until nothing is left to happen (a job whose request no live node monitor holds any
    more then waits out the placement timeout); returns it and the jobs' sizes."""
    world = World(seed, 6, resources)
    while world.step(0.0):  # the node monitors register and learn their peers
        pass
    sizes = [world.rng.randint(1, 8) for _ in range(n_jobs)]
    submitted = kills = 0
    for _ in range(100_000):
        if submitted < n_jobs and world.rng.random() < 0.9:
            request = world.rng.choice(REQUESTS) if resources else None
            world.requests[submitted] = request
            job = SubmitJob(submitted, [b"t"] * sizes[submitted], probe_ratio=1.0 + submitted % 2, resources=request)
            world.from_scheduler(world.scheduler.on_client_messages("c", [job]))
            submitted += 1
            continue
        dead = len(world.dead)
        if not world.step(kill_chance if kills < 2 else 0.0) and submitted == n_jobs:
            if world.scheduler.waiting:  # none left that can hold them: they fail once the wait is over
                world.clock.now += 3600
                world.from_scheduler(world.scheduler.on_timer())
                continue
            return world, sizes
        kills += len(world.dead) - dead
    raise AssertionError("the world did not settle in 100,000 events")


@pytest.mark.parametrize("seed", range(60))
def test_any_interleaving_of_steals_and_kills_ends_every_task_exactly_once(seed):
    """6 node monitors, 12 jobs, messages delivered in a random order, steals attempted whenever a node
    monitor may be idle, up to 2 node monitors killed at random moments (run_world): every task gets exactly
    one outcome and the scheduler holds no job at the end."""
    world, sizes = run_world(seed)
    assert world.outcomes == Counter({(ref, t): 1 for ref, n in enumerate(sizes) for t in range(n)})
    assert world.scheduler.jobs == {}


def test_the_model_steals_and_kills_while_reservations_are_lent():
    """Over the seeds of the test above, reservations move, and some are taken back after a kill: else it
    would show nothing about stealing."""
    stats = Counter()
    for seed in range(60):
        world, _ = run_world(seed)
        for node in world.nodes.values():
            stats.update(node.stats)
        stats["kills"] += len(world.dead)
    assert stats["lent"] > 50 and stats["steal_taken_back"] > 10 and stats["kills"] > 30


@pytest.mark.parametrize("seed", range(60))
def test_stealing_tasks_with_resources_keeps_each_request_and_every_capacity(seed):
    """As above with resources (run_world(resources=True)): every task gets exactly one outcome, no job is left,
    and at each launch (World.check_launch) the task holds its own request where it runs, stolen or not, within
    that host's capacity and with GPU ids no other running task there holds."""
    world, sizes = run_world(seed, resources=True)
    assert world.outcomes == Counter({(ref, t): 1 for ref, n in enumerate(sizes) for t in range(n)})
    assert world.scheduler.jobs == {}


def test_the_resource_model_steals_tasks_that_ask_for_resources():
    """Over the seeds of the test above, reservations of jobs asking for resources move to thieves and run
    there, and some are taken back after a kill: else it would show nothing about stealing them."""
    stats = Counter()
    for seed in range(60):
        world, _ = run_world(seed, resources=True)
        for node in world.nodes.values():
            stats.update(node.stats)
        stats["moved_with_requests"] += world.moved_with_requests
        stats["stolen_launches"] += world.scheduler.stats["get_task_stolen"]
    assert stats["moved_with_requests"] > 30 and stats["steal_taken_back"] > 5 and stats["stolen_launches"] > 40
