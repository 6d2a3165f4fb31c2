"""Mistakes a user makes get one line on stderr naming the problem, and a non-zero exit status."""

from __future__ import annotations

import pytest

from sparrow_runtime.services.cpus import available_cpus, format_cpu_list

from .conftest import clean_env, run_sparrow


def one_line_error(done, status: int) -> str:
    assert done.returncode == status, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["local", "--nodes", "3"], "sparrow: error: unrecognized arguments: --nodes 3"),
        (["submit", "--task", "3", "math:factorial"], "sparrow: error: unrecognized arguments: --task"),
        (["node-monitor", "--slot", "2"], "sparrow: error: unrecognized arguments: --slot 2"),
        (["local", "--slots", "many"], "sparrow local: error: --slots: expected an integer >= 1, got 'many'"),
        (["node-monitor", "--policy", "lifo"], "--policy: expected one of fifo, priority, fair, got 'lifo'"),
        (["local", "--pipeline-depth", "65"], "--pipeline-depth: expected an integer from 1 to 64, got '65'"),
        (["local", "--demo", "--load", "1.5"], "--load: expected a number > 0 and < 1, got '1.5'"),
        (["node-monitor", "--scheduler", "nohost"], "--scheduler: expected an address host:port, got 'nohost'"),
        (["submit"], "sparrow submit: error: the following arguments are required: TARGET"),
        (["node-monitor", "--cpus", "0-x"], "--cpus: CPU list '0-x': '0-x' is not a CPU number or a range like 0-3"),
    ],
)
def test_bad_flag_is_one_line_naming_it(tmp_path, args, message):
    assert message in one_line_error(run_sparrow(*args, env=clean_env(tmp_path)), 2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("slots = 4\n[node-monitor]\nslotz = 2\n", "unknown setting 'slotz' in [node-monitor]"),
        ("[node-monitor]\nslots = 'four'\n", "[node-monitor] slots: expected an integer >= 1, got 'four'"),
        ("colour = 'blue'\n", "unknown setting 'colour'"),
        ("slots = [\n", "is not valid TOML"),
    ],
)
def test_bad_config_file_is_one_line_naming_the_setting(tmp_path, text, message):
    config = tmp_path / "sparrow.toml"
    config.write_text(text)
    done = run_sparrow(
        "node-monitor", "--config", str(config), "--scheduler", "127.0.0.1:7077", env=clean_env(tmp_path)
    )
    line = one_line_error(done, 2)
    assert line.startswith("sparrow node-monitor: error: ") and message in line and str(config) in line


def test_bad_environment_variable_is_one_line_naming_it(tmp_path):
    done = run_sparrow("status", env=clean_env(tmp_path, SPARROW_SLOT="2"))
    assert "unknown setting in the environment: SPARROW_SLOT" in one_line_error(done, 2)
    done = run_sparrow("local", env=clean_env(tmp_path, SPARROW_NODE_MONITORS="two"))
    assert "SPARROW_NODE_MONITORS: expected an integer >= 1, got 'two'" in one_line_error(done, 2)


def test_missing_credentials_are_one_line(tmp_path):
    """No TLS files and no --insecure, --insecure with no secret, a missing secret file: one line each."""
    env = clean_env(tmp_path)
    none_given = run_sparrow("scheduler", "--listen", "127.0.0.1:0", env=env)
    assert "no TLS credentials: pass --tls-ca, --tls-cert and --tls-key" in one_line_error(none_given, 1)
    insecure = run_sparrow("scheduler", "--insecure", "--listen", "127.0.0.1:0", env=env)
    assert "no cluster secret: pass --secret-file FILE" in one_line_error(insecure, 1)
    missing = tmp_path / "nowhere.secret"
    no_file = run_sparrow("scheduler", "--insecure", "--secret-file", str(missing), env=env)
    assert f"cannot read the secret file {missing}: No such file or directory" in one_line_error(no_file, 1)
    no_cluster = run_sparrow("submit", "--", "true", env=env)
    assert "no scheduler to connect to" in one_line_error(no_cluster, 1)


def test_cpus_this_host_cannot_give_are_one_line_naming_the_available_ones(tmp_path):
    env = clean_env(tmp_path, SPARROW_SECRET="s", SPARROW_INSECURE="1")
    allowed = format_cpu_list(available_cpus())
    needed = {"scheduler": ["--listen", "127.0.0.1:0"], "node-monitor": ["--scheduler", "127.0.0.1:1"]}
    for command, args in needed.items():
        done = run_sparrow(command, "--cpus", "4096", *args, env=env)
        line = one_line_error(done, 1)
        assert f"sparrow {command}: error: --cpus: cannot run on CPUs 4096: this process may use {allowed}" in line


def test_unreachable_scheduler_is_one_line(tmp_path):
    env = clean_env(tmp_path, SPARROW_SECRET="s", SPARROW_INSECURE="1")
    done = run_sparrow("submit", "--scheduler", "127.0.0.1:1", "--", "true", env=env)
    assert "no scheduler reachable: 127.0.0.1:1" in one_line_error(done, 1)


@pytest.mark.parametrize(
    ("command", "args", "what"),
    [
        ("scheduler", ["--listen", "127.0.0.1:{port}"], "listen on"),
        ("scheduler", ["--listen", "127.0.0.1:0", "--metrics-port", "{port}"], "serve metrics on"),
        ("node-monitor", ["--scheduler", "127.0.0.1:1", "--listen", "127.0.0.1:{port}"], "listen on"),
    ],
)
def test_port_in_use_is_one_line(tmp_path, taken_port, command, args, what):
    """Not a 38-line ExceptionGroup traceback: where, and why."""
    args = [arg.format(port=taken_port) for arg in args]
    env = clean_env(tmp_path, SPARROW_SECRET="s", SPARROW_INSECURE="1")
    done = run_sparrow(command, *args, "--log-level", "error", env=env)  # not the warning of --insecure
    line = one_line_error(done, 1)
    assert line == f"sparrow {command}: error: cannot {what} 127.0.0.1:{taken_port}: Address already in use"


def test_metrics_at_two_places_is_refused(tmp_path):
    done = run_sparrow("scheduler", "--metrics-port", "0", "--metrics-listen", "127.0.0.1:0", env=clean_env(tmp_path))
    assert "--metrics-listen and --metrics-port both say where to serve metrics" in one_line_error(done, 2)


def test_secret_file_others_can_read_is_refused_in_one_line_with_the_fix(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    secret.chmod(0o644)
    done = run_sparrow(
        "scheduler", "--insecure", "--listen", "127.0.0.1:0", "--secret-file", str(secret), env=clean_env(tmp_path)
    )
    line = one_line_error(done, 1)
    assert line == (
        f"sparrow scheduler: error: secret file {secret} has mode 0644: group and others must have no access to "
        f"it; fix it with: chmod 600 {secret}"
    )


def test_module_dot_function_gets_a_hint_instead_of_running_as_a_command(tmp_path):
    """`submit mymodule.work` (module:function was meant) is refused before anything runs."""
    done = run_sparrow("submit", "--tasks", "3", "mymodule.work", env=clean_env(tmp_path))
    assert one_line_error(done, 1) == (
        "sparrow submit: error: 'mymodule.work' is no command on this host; to call a Python function write "
        "MODULE:FUNCTION (mymodule:work); for a program only the workers have, give its path"
    )


def test_a_dotted_program_on_the_path_is_run_as_a_command(tmp_path):
    """A program named like tool.sh that is on PATH is not mistaken for module.function."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tool.sh").write_text("#!/bin/sh\necho hi\n")
    (bin_dir / "tool.sh").chmod(0o755)
    env = clean_env(tmp_path)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    done = run_sparrow("submit", "tool.sh", env=env)
    assert "no scheduler to connect to" in one_line_error(done, 1)  # it went on to find a cluster
