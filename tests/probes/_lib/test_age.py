"""probes/_lib/age.py: how long ago, in the words a leftover's report gives."""

from __future__ import annotations

from pytest_cluster.probes._lib.age import ago


def test_ago_says_seconds_minutes_then_hours_never_negative() -> None:
    assert [ago(s) for s in (-5, 0, 119, 120, 7199, 7200, 36000)] == [
        "0 s", "0 s", "119 s", "2 min", "120 min", "2 h", "10 h"]
