"""The per-node bar charts (report/bars.py): a bar per node, the requirement a labelled
line, the unit on the axis; past MAX_BARS nodes the worst ones, said so."""

from __future__ import annotations

import re

import pytest

from pytest_cluster.evidence.record.figures import NodeFigures
from pytest_cluster.report import bars
from pytest_cluster.report.bars import figure_charts, figures_html
from tests.evidence.record.test_figures import fig


def test_each_filesystem_s_clauses_and_the_latency_are_charted_with_their_requirement(
        ) -> None:
    """Two nodes' write and import latency on /scratch, and their latency: a chart each,
    the failed bar red, the requirement's line at its value, the units said."""
    found = NodeFigures()
    for record in (fig("n1", "storage[/scratch].write", 3.0),
                   fig("n2", "storage[/scratch].write", 1.0, "failed"),
                   fig("n1", "storage[/scratch].import_torch", 12.0, comparison="<=",
                       required=20.0, unit="s"),
                   fig("n1", "interconnect.latency", 3.0, comparison="<=", required=5.0,
                       unit="us")):
        found.add(record)
    storage, latency = figure_charts(found)
    [scratch] = storage
    assert scratch.path == "/scratch"
    write, imports = scratch.charts
    assert [(r.label, r.passed) for r in write.rows] == [("n1", True), ("n2", False)]
    assert write.axis_label == "write (GB/s)" and write.required_label == "required >= 2 GB/s"
    # the requirement's line is where its value falls on the axis: 2 of 3's bar
    assert (write.required_x - write.left) / write.rows[0].width == pytest.approx(2 / 3)
    assert imports.axis_label == "import_torch (s)"
    assert latency is not None and latency.required_label == "required <= 5 us"
    page = figures_html(found)
    assert page.count("<svg") == 3 and page.count('class="required"') == 3
    assert "<h4>/scratch</h4>" in page and "required &lt;= 5 us" in page
    assert len(re.findall(r'class="bar-failed"', page)) == 1
    assert figures_html(NodeFigures()) == ""


def test_a_thousand_nodes_chart_the_worst_and_say_of_how_many() -> None:
    """1,000 nodes' write: MAX_BARS bars, the failed and the lowest first, the title
    saying of how many; a latency's worst are its highest."""
    found = NodeFigures()
    count = 1000
    for i in range(count):
        value = 1.0 + i / 100
        found.add(fig(f"n{i:04}", "storage[/scratch].write", value,
                      "failed" if value < 2 else "passed"))
        found.add(fig(f"n{i:04}", "interconnect.latency", value, comparison="<=",
                      required=5.0, unit="us"))
    [scratch], latency = figure_charts(found)
    [write] = scratch.charts
    assert len(write.rows) == bars.MAX_BARS
    assert [r.label for r in write.rows] == [f"n{i:04}" for i in range(bars.MAX_BARS)]
    assert f"the {bars.MAX_BARS} worst of 1,000 nodes" in write.title
    assert latency is not None
    assert [r.label for r in latency.rows][:2] == ["n0999", "n0998"]
    assert len(figures_html(found)) < 60_000
