"""report/soak.py: the soak's timeline and availability."""

from __future__ import annotations

from pytest_cluster.evidence.sla import FAILED, HEALTHY, Span
from pytest_cluster.evidence.timelines import Timelines


def test_a_long_soak_draws_a_bar_per_spell_not_per_round() -> None:
    from pytest_cluster.report.soak import timeline_svg

    spans = [Span(k * 10.0, (k + 1) * 10.0, FAILED if 120 <= k <= 170 else HEALTHY)
             for k in range(300)]
    lines = Timelines({"n1": spans}, (0.0, 3000.0), 0.0)
    svg = timeline_svg(lines, ["n1"])
    assert svg.count("<rect") == 3
    assert "n1 failed 1970-01-01T00:20:00Z to 1970-01-01T00:28:30Z" in svg
