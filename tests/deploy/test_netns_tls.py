"""docs/deploy.md's multi-host TLS setup, run as written on network namespaces (docs/netns_tls_check.sh:
two schedulers and two node monitors on four "hosts", with the docs' host names): the commands of the
docs work, and a stranger's attempts fail with one line each. Needs root and iproute2 (as CI runs)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "netns_tls_check.sh"


def _namespaces_work() -> bool:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    # a name of this process's own: every pytest-xdist worker collects this module at once, and with one shared
    # name the second worker's add failed ("File exists"), so the test was skipped when that worker drew it
    name = f"sparrow-probe-{os.getpid()}"
    probe = subprocess.run(["ip", "netns", "add", name], capture_output=True)
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _namespaces_work(), reason="needs root and network namespaces (ip netns)")
def test_deploy_md_runs_as_written_on_network_namespaces_and_strangers_get_one_line_each():
    """Section 1's certificates, section 2's sparrow.toml, section 3's ExecStart lines and section 4's
    commands (extracted from deploy.md) give a cluster whose 100 tasks succeed from both schedulers,
    whose node monitor metrics the monitor certificate reads over HTTPS by host name; bob cannot submit
    as alice, a client certificate cannot serve as a node monitor, another CA's client and a plaintext
    client are refused, each in one line; nothing is left behind."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("SPARROW_SCHEDULER", None)
    done = subprocess.run(["sh", str(SCRIPT)], capture_output=True, text=True, timeout=600, env=env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    expected = [
        "sparrow certs issue sched-2 --role scheduler --host sched-2.example --certs-dir cluster-ca",  # extracted
        "at sched-1.example:7077: 2 node monitors",
        "at sched-2.example:7077: 2 node monitors",
        "100 tasks, 100 succeeded, 0 failed",
        "SparrowExecutor map: [1, 2, 3]",
        "this client is authenticated as user 'bob': it may not submit a job as 'alice'",
        "alice.pem is a client certificate: a node-monitor needs one issued with --role node-monitor",
        "TLS: the server's certificate is not signed by this cluster's CA",
        "closed the connection before sending its Challenge (a TLS service? connect with its CA, certificate and key)",
    ]
    for line in expected:
        assert line in out, (line, out[-4000:])
    assert out.count("sparrow node-monitor: listening on") == 2  # both registered with both schedulers
    # the ops$ line: worker-1's HTTPS metrics (its slots: this machine's CPU count), curl checking the host name
    assert re.search(r"^sparrow_node_slots \d+\.0$", out, re.MULTILINE), out[-4000:]
    leftovers = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "sparrow-" not in leftovers
    assert not Path("/etc/netns/sparrow-sched-1").exists()
