"""The machine-condition figures the runtime benchmark prints with its results (bench/measure.py)."""

from bench.measure import cpu_counters, steal_percent


def test_steal_is_the_share_of_cpu_time_given_to_other_machines():
    before = [100, 0, 50, 800, 0, 0, 0, 10, 0, 0]
    after = [160, 0, 70, 900, 0, 0, 0, 30, 5, 0]  # +60 user, +20 system, +100 idle, +20 steal
    assert steal_percent(before, after) == 10.0
    assert steal_percent(before, before) == 0.0
    assert steal_percent(None, after) is None and steal_percent(before, None) is None


def test_cpu_counters_read_this_machine():
    counters = cpu_counters()
    assert counters is None or (len(counters) >= 8 and all(c >= 0 for c in counters))
