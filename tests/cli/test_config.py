"""Settings: flags, then SPARROW_* variables, then the TOML file (command table, then top level), then
defaults; every bad value names its setting and source. Logging: one line per event, never the secret."""

from __future__ import annotations

import argparse
import logging
import re

import pytest

from sparrow_runtime import LocalCluster, NodeMonitorConfig, SchedulerConfig
from sparrow_runtime.cli.config import CONFIG, RESEARCH, ConfigError, Retired, resolve
from sparrow_runtime.cli.main import build_parser
from sparrow_runtime.cli.options import COMMANDS, EVERY_RETIRED
from sparrow_runtime.services.logsetup import OneLineFormatter


def parse(command: str, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    CONFIG.add_to(parser)
    for setting in COMMANDS[command]:
        setting.add_to(parser)
    return parser.parse_args(argv)


def settings(command: str, argv: list[str], env: dict[str, str] | None = None):
    return resolve(command, COMMANDS[command], parse(command, argv), env or {}, COMMANDS, EVERY_RETIRED)


def test_flag_beats_environment_beats_command_table_beats_top_level_beats_default(tmp_path):
    config = tmp_path / "sparrow.toml"
    config.write_text('slots = 3\npolicy = "fair"\nlabel = ["ssd"]\n[node-monitor]\nslots = 5\nexecutor = "thread"\n')
    s = settings("node-monitor", ["--config", str(config), "--slots", "9"], {"SPARROW_EXECUTOR": "process"})
    assert (s["slots"], s.sources["slots"]) == (9, "--slots")
    assert (s["executor"], s.sources["executor"]) == ("process", "SPARROW_EXECUTOR")
    assert (s["policy"], s["label"]) == ("fair", ["ssd"])
    assert (s["heartbeat_interval"], s.sources["heartbeat_interval"]) == (0.5, "default")
    s = settings("node-monitor", [], {"SPARROW_CONFIG": str(config)})
    assert (s["slots"], s["executor"]) == (5, "thread")  # the [node-monitor] table wins over the top level
    assert settings("local", ["--config", str(config)])["slots"] == 3  # local has no table: the top level


def test_cpu_lists_from_flag_environment_and_file(tmp_path):
    config = tmp_path / "sparrow.toml"
    config.write_text('[node-monitor]\ncpus = [3, 1, 1]\n[scheduler]\ncpus = "0-2,5"\n')
    assert settings("node-monitor", ["--config", str(config)])["cpus"] == [1, 3]
    assert settings("scheduler", ["--config", str(config)])["cpus"] == [0, 1, 2, 5]
    assert settings("scheduler", ["--cpus", "4-5"], {"SPARROW_CPUS": "0"})["cpus"] == [4, 5]
    assert settings("node-monitor", [], {"SPARROW_CPUS": "1,0"})["cpus"] == [0, 1]
    assert settings("node-monitor", [])["cpus"] is None  # default: wherever the process may run
    assert settings("local", ["--share-cpus"])["share_cpus"] is True
    assert settings("scheduler", ["--result-delay", "0"])["result_delay"] == 0.0


def test_lists_repeat_or_split_on_commas_and_weights_merge():
    s = settings(
        "node-monitor", ["--scheduler", "a:1,b:2", "--scheduler", "c:3", "--weight", "alice=3", "--weight", "bob=1"]
    )
    assert s["scheduler"] == ["a:1", "b:2", "c:3"]
    assert s["weight"] == {"alice": 3.0, "bob": 1.0}
    assert settings("node-monitor", [], {"SPARROW_WEIGHT": "alice=3, bob=1"})["weight"] == {"alice": 3.0, "bob": 1.0}
    assert settings("scheduler", ["--listen", "0.0.0.0:0"])["listen"] == ("0.0.0.0", 0)
    assert settings("scheduler", ["--listen", "unix:/run/s.sock"])["listen"] == ("unix:/run/s.sock", 0)
    assert settings("node-monitor", ["--scheduler", "unix:/run/s.sock"])["scheduler"] == ["unix:/run/s.sock"]


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[node-monitor]\nweight = { alice = -1 }\n", "[node-monitor] weight: expected USER=WEIGHT with a weight > 0"),
        ("[node-monitor]\nheartbeat_interval = true\n", "[node-monitor] heartbeat_interval: expected a number > 0"),
        ("[scheduler]\nslots = 2\n", "unknown setting 'slots' in [scheduler]"),
        ("label = 7\n", "label: expected a list of strings, got 7"),
        ("[node-monitor]\ncpus = [0, -1]\n", "[node-monitor] cpus: expected a CPU list"),
        ('cpus = "2-1"\n', "cpus: CPU list '2-1': '2-1' is not a CPU number"),
    ],
)
def test_bad_file_values_name_setting_and_file(tmp_path, toml, message):
    config = tmp_path / "bad.toml"
    config.write_text(toml)
    with pytest.raises(ConfigError, match=str(config)) as info:
        settings("node-monitor", ["--config", str(config)])
    assert message in str(info.value)


def test_unknown_environment_variable_is_an_error_but_the_secret_is_not():
    with pytest.raises(ConfigError, match="SPARROW_SLTOS"):
        settings("node-monitor", [], {"SPARROW_SLTOS": "2"})
    assert settings("node-monitor", [], {"SPARROW_SECRET": "x", "SPARROW_TASK_INDEX": "3"})["slots"] is None


def test_help_names_default_and_environment_variable():
    parser = argparse.ArgumentParser()
    for setting in COMMANDS["local"]:
        setting.add_to(parser)
    text = " ".join(parser.format_help().split())
    assert "offered load, a fraction of the slots (default: 0.8; env SPARROW_LOAD)" in text


def test_log_lines_are_single_and_never_show_the_secret():
    record = logging.LogRecord(
        "sparrow_runtime.x", logging.WARNING, __file__, 1, "peer sent %s", ("top-secret\nnext",), None
    )
    line = OneLineFormatter(["top-secret"]).format(record)
    assert "top-secret" not in line and "***" in line
    assert "\n" not in line and line.endswith("peer sent ***\\nnext")


def test_the_deploy_example_file_serves_every_command(tmp_path):
    """docs/deploy.md's file; and without a [scheduler] table, `scheduler` addresses may sit at the top level."""
    config = tmp_path / "sparrow.toml"
    config.write_text(
        'secret_file = "/etc/sparrow/secret"\n[scheduler]\nlisten = "0.0.0.0:7077"\nmetrics_port = 9477\n'
        '[node-monitor]\nscheduler = ["sched-1.example:7077", "sched-2.example:7077"]\npolicy = "fair"\n'
        "weight = { analytics = 3, batch = 1 }\nmetrics_port = 9478\n"
    )
    scheduler = settings("scheduler", ["--config", str(config)])
    assert (scheduler["listen"], scheduler["metrics_port"]) == (("0.0.0.0", 7077), 9477)
    node = settings("node-monitor", ["--config", str(config)])
    assert node["scheduler"] == ["sched-1.example:7077", "sched-2.example:7077"]
    assert (node["weight"], node["metrics_port"], node["secret_file"]) == (
        {"analytics": 3.0, "batch": 1.0},
        9478,
        "/etc/sparrow/secret",
    )
    config.write_text('scheduler = ["sched-1.example:7077"]\n[status]\njson = true\n')
    status = settings("status", ["--config", str(config)])
    assert (status["scheduler"], status["json"]) == (["sched-1.example:7077"], True)


def test_the_deploy_tls_file_gives_each_service_its_own_files(tmp_path):
    """docs/deploy.md's TLS file: the CA for everyone at the top level, each service's pair and the
    node monitor's task user in its table; SPARROW_INSECURE and SPARROW_TLS_* are settings."""
    config = tmp_path / "sparrow.toml"
    config.write_text(
        'tls_ca = "/etc/sparrow/tls/ca.pem"\n[scheduler]\ntls_cert = "/etc/sparrow/tls/scheduler.pem"\n'
        'tls_key = "/etc/sparrow/tls/scheduler-key.pem"\n[node-monitor]\nscheduler = ["sched-1.example:7077"]\n'
        'tls_cert = "/etc/sparrow/tls/node.pem"\ntls_key = "/etc/sparrow/tls/node-key.pem"\n'
        'task_user = "sparrow-task"\n'
    )
    scheduler = settings("scheduler", ["--config", str(config)])
    assert (scheduler["tls_ca"], scheduler["tls_cert"]) == ("/etc/sparrow/tls/ca.pem", "/etc/sparrow/tls/scheduler.pem")
    node = settings("node-monitor", ["--config", str(config)])
    assert (node["tls_ca"], node["tls_key"], node["task_user"]) == (
        "/etc/sparrow/tls/ca.pem",
        "/etc/sparrow/tls/node-key.pem",
        "sparrow-task",
    )
    env = {"SPARROW_INSECURE": "1", "SPARROW_TLS_CERT": "/x.pem"}
    assert settings("scheduler", [], env)["insecure"] is True
    assert settings("submit", [], env)["tls_cert"] == "/x.pem"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_shows_every_flags_default_and_environment_variable(command, capsys):
    """`sparrow COMMAND --help-all` (`--help` where it has no research switch), as docs/cli.md promises: each
    flag's line ends with both."""
    research = any(setting.group == RESEARCH for setting in COMMANDS[command])
    with pytest.raises(SystemExit):
        build_parser(command).parse_args([command, "--help-all" if research else "--help"])
    text = " ".join(capsys.readouterr().out.split())  # undo argparse's line wrapping
    for setting in (CONFIG, *COMMANDS[command]):
        found = re.search(
            re.escape(setting.flag) + r"(?: \S+)? (.*?\(default: [^;()]+; env " + setting.env + r"\))", text
        )
        assert found, f"{setting.flag} in `sparrow {command} --help`:\n{text}"


@pytest.mark.parametrize("command", ["scheduler", "local"])
def test_bind_idle_is_on_by_default_and_no_bind_idle_turns_it_off(command):
    """bind_idle (a small job's tasks sent with its reservations to idle node monitors) is on by default for the
    services; --no-bind-idle and the environment turn it off, and LocalCluster passes its choice either way."""
    assert settings(command, [])["bind_idle"] is True
    assert settings(command, ["--no-bind-idle"])["bind_idle"] is False
    assert settings(command, [], {"SPARROW_BIND_IDLE": "false"})["bind_idle"] is False
    if command == "local":
        assert "--bind-idle" not in LocalCluster()._scheduler_args(0)  # the default: SPARROW_BIND_IDLE may say
        assert "--no-bind-idle" in LocalCluster(scheduler=SchedulerConfig(bind_idle=False))._scheduler_args(0)


@pytest.mark.parametrize("command", ["node-monitor", "local"])
def test_pipelining_is_steady_16_deep_by_default_and_one_setting_names_the_mode(command, tmp_path):
    """--pipeline MODE (its variable, its TOML key) chooses the mode, steady by default; a mode it does not know is
    an error naming the modes."""
    s = settings(command, [])
    assert (s["pipeline"], s["pipeline_depth"]) == ("steady", 16)
    assert settings(command, ["--pipeline", "off"])["pipeline"] == "off"
    assert settings(command, ["--pipeline", "always", "--pipeline", "jit"])["pipeline"] == "jit"  # the last wins
    assert settings(command, [], {"SPARROW_PIPELINE": "gated"})["pipeline"] == "gated"
    config = tmp_path / "sparrow.toml"
    config.write_text('pipeline = "always"\n')
    assert settings(command, ["--config", str(config)])["pipeline"] == "always"
    with pytest.raises(ConfigError, match="SPARROW_PIPELINE: expected one of off, gated, steady, jit, always"):
        settings(command, [], {"SPARROW_PIPELINE": "true"})


@pytest.mark.parametrize("command", ["node-monitor", "local"])
@pytest.mark.parametrize(
    ("flag", "instead"),
    [
        ("--no-pipeline", "--pipeline off"),
        ("--pipeline-always", "--pipeline always"),
        ("--pipeline-jit", "--pipeline jit"),
        ("--pipeline-steady", "--pipeline steady"),
        ("--no-pipeline-steady", "--pipeline gated"),
    ],
)
def test_a_retired_pipelining_flag_is_a_usage_error_naming_its_mode(command, flag, instead, capsys):
    """The switches --pipeline MODE replaced are refused with exit status 2, naming what to write instead."""
    with pytest.raises(SystemExit) as stop:
        build_parser(command).parse_args([command, flag])
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert f"{flag} is retired: use " in error and instead in error


@pytest.mark.parametrize("name", ["pipeline_always", "pipeline_jit", "pipeline_steady"])
def test_a_retired_pipelining_variable_or_key_is_refused_naming_the_mode_setting(name, tmp_path):
    """Their SPARROW_* variables and TOML keys are refused too (not silently ignored), naming --pipeline."""
    with pytest.raises(ConfigError, match=f"SPARROW_{name.upper()} is retired: use --pipeline"):
        settings("node-monitor", [], {f"SPARROW_{name.upper()}": "true"})
    config = tmp_path / "sparrow.toml"
    config.write_text(f"[node-monitor]\n{name} = true\n")
    with pytest.raises(ConfigError, match=f"{name} is retired: use --pipeline"):
        settings("node-monitor", ["--config", str(config)])


def test_local_cluster_passes_a_pipelining_mode_only_when_given():
    """LocalCluster passes --pipeline and --pipeline-depth to its node monitors only when given, so their own
    defaults and SPARROW_PIPELINE reach them otherwise (benchtools/pipelining_ten_ms.py sets it)."""
    assert not {"--pipeline", "--pipeline-depth"} & set(LocalCluster()._node_monitor_args(0))
    args = LocalCluster(node_monitor=NodeMonitorConfig(pipeline="jit", pipeline_depth=4))._node_monitor_args(0)
    assert args[args.index("--pipeline") + 1] == "jit" and args[args.index("--pipeline-depth") + 1] == "4"
    with pytest.raises(ValueError, match="pipeline must be one of off, gated, steady, jit, always, got True"):
        LocalCluster(node_monitor=NodeMonitorConfig(pipeline=True))


@pytest.mark.parametrize("argv", [["--pipeline-gamma"], ["--no-pipeline-gamma"], ["--pipeline-gamma", "3"]])
def test_a_retired_flag_is_a_usage_error_saying_what_to_do_instead(argv, capsys):
    parser = argparse.ArgumentParser(prog="sparrow node-monitor")
    Retired("pipeline_gamma", "use --pipeline MODE").add_to(parser)
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(argv)
    assert stop.value.code == 2
    assert f"{argv[0]} is retired: use --pipeline MODE" in capsys.readouterr().err


def test_a_retired_variable_or_toml_key_is_refused_saying_what_to_do_instead(tmp_path):
    old = Retired("pipeline_gamma", "use --pipeline MODE")
    args = parse("node-monitor", [])

    def resolved(env):
        return resolve("node-monitor", COMMANDS["node-monitor"], args, env, COMMANDS, [old])

    with pytest.raises(ConfigError, match=r"^SPARROW_PIPELINE_GAMMA is retired: use --pipeline MODE$"):
        resolved({"SPARROW_PIPELINE_GAMMA": "true"})
    config = tmp_path / "sparrow.toml"
    for text in ("pipeline_gamma = true\n", "[node-monitor]\npipeline_gamma = true\n"):
        config.write_text(text)
        with pytest.raises(ConfigError, match=r"sparrow.toml: pipeline_gamma is retired: use --pipeline MODE$"):
            resolved({"SPARROW_CONFIG": str(config)})
    assert resolved({})["slots"] is None  # the rest reads as before
