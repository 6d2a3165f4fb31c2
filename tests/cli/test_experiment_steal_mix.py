"""`sparrow experiment steal --width/--long-fraction/--long-ms`: the mix asked is the one drawn (the default is the
experiment's), and a bad one fails before any cluster starts."""

from __future__ import annotations

import pytest

from sparrow_experiments.steal import Mix
from sparrow_runtime.cli import experiment_flags, experiment_steal
from sparrow_runtime.cli.main import main


class _ClusterStarted(Exception):
    """Raised by the stand-in LocalCluster: the mix was drawn by then."""


@pytest.mark.parametrize(
    ("flags", "mix"),
    [
        ([], Mix()),
        (
            ["--width", "4", "--long-fraction", "0.03", "--long-ms", "2000"],
            Mix(long_ms=2000.0, long_fraction=0.03, width=4),
        ),
    ],
)
def test_the_mix_asked_is_drawn(flags, mix, monkeypatch, tmp_path):
    drawn: list[Mix] = []
    make_mixed = experiment_steal.steal_report.make_mixed

    def spy(**kwargs):
        drawn.append(kwargs["mix"])
        return make_mixed(**kwargs)

    def stand_in(*args, **kwargs):
        raise _ClusterStarted

    monkeypatch.setattr(experiment_steal.steal_report, "make_mixed", spy)
    monkeypatch.setattr(experiment_flags, "LocalCluster", stand_in)
    with pytest.raises(_ClusterStarted):
        main(["experiment", "steal", "--runs", "2", "--seconds", "1", *flags, "--out", str(tmp_path / "out")])
    assert drawn == [mix, mix]


def test_a_bad_mix_is_refused(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        main(["experiment", "steal", "--long-fraction", "1.5", "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2 and "argument --long-fraction" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
