"""The report's templates (report/templates.py, report/templates/): every section shows
hostile text as text, and a template given too little fails rather than shows nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cluster.evidence.sinks.results import ResultLine


def test_a_template_not_given_a_name_it_shows_fails_loudly() -> None:
    """StrictUndefined: a value the caller forgot is an error, not an empty cell."""
    import jinja2

    from pytest_cluster.report.templates import render

    assert "<h2>Evidence</h2>" in render("sealing.html.j2", keyids=[], run_dir="r")
    with pytest.raises(jinja2.UndefinedError, match="run_dir"):
        render("sealing.html.j2", keyids=[])


HOSTILE = "<img src=x onerror=\"alert('x')\">&amp;"


def test_every_rendered_section_shows_hostile_text_as_text(tmp_path: Path) -> None:
    """A node name, a message, a requirement, a finding, a reference, a soak's stop reason
    and a baseline's change carrying markup: every section the report's templates render
    shows them as text (escaped, read back the same), never as markup."""
    import html
    from decimal import Decimal

    from pytest_cluster.contract import parse_spec
    from pytest_cluster.evidence.baseline.accepted import Baseline
    from pytest_cluster.evidence.derived_cases import Case
    from pytest_cluster.evidence.ledger import Ledger
    from pytest_cluster.evidence.sla import HEALTHY, NodeAvailability, Span
    from pytest_cluster.evidence.timelines import Round, Timelines
    from pytest_cluster.evidence.verdict import NodeVerdict
    from pytest_cluster.report.plots import interconnect_charts
    from pytest_cluster.report.scorecard import passed_lists, scorecard_html
    from pytest_cluster.report.sections import baseline_html, sealing_html
    from pytest_cluster.report.soak import soak_html
    from pytest_cluster.report.templates import macros

    node = f"n1{HOSTILE}"
    spec = parse_spec("cluster: {name: c, nodes: [n1, n2], launcher: ssh}\n"
                      "host: {cpu_cores: '>= 1'}\n", "t.yaml")
    ledger = Ledger((node, "n2"))
    failed: ResultLine = {
        "spec_key": f"gpus.k{HOSTILE}", "node": node, "gpu": 0, "measured": 640.0,
        "outcome": "failed", "message": f"Failed: {HOSTILE}", "comparison": ">=",
        "unit": "TFLOPS", "requirement": f">= 700 {HOSTILE}", "finding": HOSTILE,
        "case": f"test_k[{HOSTILE}]"}
    passed: ResultLine = {**failed, "node": "n2", "outcome": "passed", "measured": 790.0,
                          "message": "", "reference": HOSTILE, "case": f"test_k[n2{HOSTILE}]"}
    benchmark: ResultLine = {
        "spec_key": "interconnect.busbw[intra_node]", "collective": f"all{HOSTILE}",
        "payload": 2**30, "node_count": 1, "node": node, "requirement": ">= 300 GB/s",
        "required_base": 300e9, "measured_base": 350e9, "outcome": "passed",
        "derivation": HOSTILE, "raw": {"sweep": [[2**30, 350e9]]}}
    for record in (failed, passed):
        ledger.add(record)
    gathered = ledger.gathered()
    rounds = [Round(1, tmp_path, 0.0, 10.0, "complete", {node: HEALTHY})]
    baseline = Baseline(tmp_path / HOSTILE, "2026-01-01T00:00:00Z", (HOSTILE,), HOSTILE,
                        {"nodes": {}}, {})
    sections = {
        "scorecard": scorecard_html(spec, None, [NodeVerdict(node, "REJECTED", HOSTILE)],
                                    gathered, HOSTILE),
        "passed lists": "".join(passed_lists(gathered.passed, {f"gpus.k{HOSTILE}": HOSTILE})),
        "charts": interconnect_charts([benchmark]),
        "soak": soak_html(rounds, Timelines({node: [Span(0.0, 10.0, HEALTHY)]}, (0.0, 10.0),
                                            0.0),
                          [NodeAvailability(node, 10.0, 1.0, ((0.0, 1.0),))], None,
                          Decimal("0.99"), stopped=HOSTILE, mark=HOSTILE),
        "baseline": baseline_html(baseline, [Case("p", HOSTILE, node, False, HOSTILE)], 0.05,
                                  [HOSTILE]),
        "sealing": sealing_html([HOSTILE], HOSTILE),
        "results table": str(macros("results_table.html.j2").cell(HOSTILE, True)),
    }
    for name, text in sections.items():
        assert "<img" not in text, name
        assert HOSTILE in html.unescape(text), name
    assert html.unescape(sections["scorecard"]).count(HOSTILE) >= 6  # node, why, message, ...
