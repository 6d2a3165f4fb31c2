"""What a node monitor offers when not told (services/capacity.py): CPUs and memory detected, GPUs from
CUDA_VISIBLE_DEVICES, /proc/driver/nvidia/gpus or nvidia-smi; and the flags that set it and a task's request."""

from __future__ import annotations

import argparse

import pytest

from sparrow_runtime.cli.config import CONFIG, ConfigError, resolve
from sparrow_runtime.cli.options import COMMANDS
from sparrow_runtime.services import capacity
from sparrow_runtime.services.capacity import detect_gpus, host_capacity


def test_cuda_visible_devices_names_the_gpus(tmp_path):
    assert detect_gpus({"CUDA_VISIBLE_DEVICES": "2, 5"}, tmp_path / "none") == ["2", "5"]
    assert detect_gpus({"CUDA_VISIBLE_DEVICES": "-1"}, tmp_path / "none") == []
    assert detect_gpus({"CUDA_VISIBLE_DEVICES": ""}, tmp_path / "none") == []


def test_the_driver_directory_counts_the_gpus(tmp_path, monkeypatch):
    for bus in ("0000:01:00.0", "0000:02:00.0"):
        (tmp_path / bus).mkdir()
    assert detect_gpus({}, tmp_path) == ["0", "1"]


def test_no_gpu_shown_is_none(tmp_path, monkeypatch):
    monkeypatch.setattr(capacity.shutil, "which", lambda name: None)
    assert detect_gpus({}, tmp_path / "none") == []


def test_detected_capacity_has_this_hosts_cpus_and_memory(monkeypatch):
    monkeypatch.setattr(capacity, "detect_gpus", lambda: [])
    found, gpus = host_capacity(None)
    assert found["cpus"] == 1000 * len(capacity.allowed_cpus()) and found["memory"] > 0
    assert "gpu" not in found and gpus == []


def test_a_declared_capacity_is_used_as_given(monkeypatch):
    monkeypatch.setattr(capacity, "detect_gpus", lambda: ["7"])
    assert host_capacity({"gpu": 1, "license": 3000}) == ({"gpu": 1, "license": 3000}, ["7"])
    assert host_capacity({"gpu": 2}) == ({"gpu": 2}, ["0", "1"])  # not what the host shows: numbered


def settings(command: str, argv: list[str], env: dict[str, str] | None = None):
    parser = argparse.ArgumentParser()
    CONFIG.add_to(parser)
    for setting in COMMANDS[command]:
        setting.add_to(parser)
    return resolve(command, COMMANDS[command], parser.parse_args(argv), env or {}, COMMANDS)


def test_the_resources_flags_give_units():
    s = settings("node-monitor", ["--resources", "cpus=16,memory=64G,gpu=2,license=3"])
    assert s["resources"] == {"cpus": 16000, "memory": 64 * 10**9, "gpu": 2, "license": 3000}
    assert settings("node-monitor", [])["resources"] is None  # detected
    # a task's request is checked and kept as written: the client puts it in units (once)
    assert settings("submit", [], {"SPARROW_RESOURCES": "cpus=0.5"})["resources"] == "cpus=0.5"


@pytest.mark.parametrize("bad", ["gpu=-1", "gpu=nan", "memory=4XB", "gpu"])
def test_a_bad_resources_flag_names_the_setting(bad):
    with pytest.raises(ConfigError, match="--resources"):
        settings("submit", ["--resources", bad])
