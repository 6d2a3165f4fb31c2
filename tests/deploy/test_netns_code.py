"""Code shipped with the job across hosts: a scheduler, two node monitors and a client on four network namespaces
joined by a bridge (as tests/deploy/test_netns_tls.py's hosts), the client's package written to a tmpfs mounted
in a mount namespace of the client's own, so no node monitor can see the file. The package runs on both node
monitors (one of them fetches the archive from the other, over TCP), and after a file changes the next job
runs the new code on both. Needs root, iproute2 and unshare."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_netns_tls import _namespaces_work

SPARROW = [sys.executable, "-m", "sparrow_runtime.cli.main"]
SUBNET = "10.78.0"
HOSTS = ("sched", "w1", "w2", "client")  # 10.78.0.1 to .4

CLIENT = """\
import json, os, sys, time
from sparrow_runtime import SparrowExecutor

here = os.getcwd()
def write(version):
    os.makedirs("netlib", exist_ok=True)
    with open("netlib/__init__.py", "w") as f:
        f.write(LIB.replace("VERSION_", str(version)))

write(1)
sys.path.insert(0, here)
import netlib

with SparrowExecutor([SCHEDULER], secret_file=SECRET, py_modules=[netlib]) as ex:
    ex.client.code.recheck = 0.0
    for version in (1, 2):
        if version == 2:
            write(2)
        print(json.dumps(list(ex.map(netlib.where, [here] * 8, chunksize=8))), flush=True)
"""

LIB = """\
import os, socket, time

def where(client_dir):
    time.sleep(0.3)
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.connect(("SUBNET.1", 9))
    return VERSION_, probe.getsockname()[0], os.path.exists(os.path.join(client_dir, "netlib")), __file__
"""


def _ns(name: str) -> str:
    return f"sparrow-code-{os.getpid()}-{name}"


def _run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True)


@pytest.fixture
def hosts():
    """The namespaces, each with its address on one bridge, and a list for the services started in them; removed
    after the test, with every process in them."""
    started: list[subprocess.Popen] = []
    lan = _ns("lan")
    _run("ip", "netns", "add", lan)
    made = [lan]
    try:
        _run("ip", "netns", "exec", lan, "ip", "link", "add", "br0", "type", "bridge")
        _run("ip", "netns", "exec", lan, "ip", "link", "set", "br0", "up")
        for i, host in enumerate(HOSTS, start=1):
            ns = _ns(host)
            _run("ip", "netns", "add", ns)
            made.append(ns)
            inner, outer = f"vc{i}", f"pc{i}"
            _run("ip", "link", "add", inner, "netns", ns, "type", "veth", "peer", "name", outer, "netns", lan)
            _run("ip", "netns", "exec", lan, "ip", "link", "set", outer, "master", "br0", "up")
            _run("ip", "netns", "exec", ns, "ip", "addr", "add", f"{SUBNET}.{i}/24", "dev", inner)
            _run("ip", "netns", "exec", ns, "ip", "link", "set", inner, "up")
            _run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        yield started
    finally:
        for ns in made:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        for proc in started:
            proc.kill()
            proc.wait(timeout=10)
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _service(started: list, host: str, args: list[str], log: Path) -> None:
    with open(log, "w") as out:
        command = ["ip", "netns", "exec", _ns(host), *SPARROW, *args]
        started.append(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT))


def _wait_for(log: Path, text: str, count: int = 1, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count(text) >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not in {log}: {log.read_text() if log.exists() else '(none)'}")


@pytest.mark.slow
@pytest.mark.skipif(not _namespaces_work(), reason="needs root and network namespaces (ip netns)")
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux) for the client's own mounts")
def test_a_package_only_on_the_clients_host_runs_on_two_node_monitors_and_a_change_reaches_both(hosts, tmp_path):
    """8 tasks of 0.3 s on two 1-slot node monitors: both run version 1 of a package they cannot see on disk
    (imported from their code cache), then both run version 2 once its file changed."""
    secret = tmp_path / "secret"
    secret.write_text("a cluster secret for the code test\n")
    secret.chmod(0o600)
    env_secret = ["--insecure", "--secret-file", str(secret)]
    scheduler = f"{SUBNET}.1:7077"
    _service(hosts, "sched", ["scheduler", "--listen", scheduler, *env_secret], tmp_path / "sched.log")
    _wait_for(tmp_path / "sched.log", "listening on")
    for i, host in ((2, "w1"), (3, "w2")):
        args = ["node-monitor", "--scheduler", scheduler, "--listen", f"{SUBNET}.{i}:0", "--slots", "1", "--id", host]
        _service(hosts, host, [*args, *env_secret], tmp_path / f"{host}.log")
    for host in ("w1", "w2"):
        _wait_for(tmp_path / f"{host}.log", "listening on")

    client_dir = tmp_path / "client-only"  # a tmpfs in the client's mount namespace: empty for everyone else
    client_dir.mkdir()
    script = tmp_path / "client.py"
    lib = LIB.replace("SUBNET", SUBNET)
    source = CLIENT.replace("LIB", repr(lib)).replace("SCHEDULER", repr(scheduler)).replace("SECRET", repr(str(secret)))
    script.write_text(source)
    shell = f"mount -t tmpfs tmpfs {client_dir} && cd {client_dir} && exec {sys.executable} {script}"
    done = subprocess.run(
        ["ip", "netns", "exec", _ns("client"), "unshare", "--mount", "--propagation", "private", "sh", "-c", shell],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-4000:] + "".join(
        (tmp_path / f"{h}.log").read_text()[-2000:] for h in ("sched", "w1", "w2")
    )
    first, second = (json.loads(line) for line in done.stdout.splitlines() if line.startswith("["))
    for version, results in ((1, first), (2, second)):
        assert {r[0] for r in results} == {version}
        assert {r[1] for r in results} == {f"{SUBNET}.2", f"{SUBNET}.3"}  # both node monitors ran it
        assert not any(r[2] for r in results)  # neither could see the client's file
        assert all("sparrow-code-" in r[3] and "/py/netlib/__init__.py" in r[3] for r in results)
    assert not list(client_dir.iterdir())  # the tmpfs was the client's alone
