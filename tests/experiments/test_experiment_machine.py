"""The machine a report names: its CPUs and their model from /proc/cpuinfo, virtual or not."""

from __future__ import annotations

import platform

from sparrow_experiments.machine import Machine, this_machine
from sparrow_runtime.services.cpus import available_cpus

X86_VM = """processor\t: 0
model name\t: AMD EPYC 7B13
flags\t\t: fpu vme de pse hypervisor lahf_lm

processor\t: 1
model name\t: AMD EPYC 7B13
flags\t\t: fpu vme de pse hypervisor lahf_lm
"""


def test_a_virtual_x86_machine_is_named_by_its_model_and_said_virtual(tmp_path):
    """The model name and the hypervisor flag of cpuinfo; the CPUs this process may use."""
    (tmp_path / "cpuinfo").write_text(X86_VM)
    machine = this_machine(str(tmp_path / "cpuinfo"))
    assert machine == Machine(len(available_cpus()), "AMD EPYC 7B13", virtual=True)


def test_a_machine_without_the_hypervisor_flag_is_not_called_virtual(tmp_path):
    """No `hypervisor` flag: nothing is said about virtualisation."""
    (tmp_path / "cpuinfo").write_text(X86_VM.replace(" hypervisor", ""))
    machine = this_machine(str(tmp_path / "cpuinfo"))
    assert not machine.virtual
    assert machine.describe().endswith("(AMD EPYC 7B13)")


def test_without_cpuinfo_the_model_comes_from_platform(tmp_path):
    """Off Linux (no cpuinfo) the model is what `platform` tells, never an empty pair of brackets."""
    machine = this_machine(str(tmp_path / "missing"))
    assert machine.model == (platform.processor() or platform.machine() or "unknown model")
    assert not machine.virtual


def test_the_description_counts_cpus_in_words():
    """One CPU is singular; a virtual machine says so."""
    assert Machine(1, "Arm Neoverse", virtual=False).describe() == "1 CPU (Arm Neoverse)"
    assert Machine(8, "AMD EPYC", virtual=True).describe() == "8 CPUs (AMD EPYC) of a virtual machine"
