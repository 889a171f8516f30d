"""What failed (report/failures.py): each failed node's first failure with its figures and,
where the line says them, its fault code, action and actor; the Nodes table's why with
the failed clauses' figures; both bounded."""

from __future__ import annotations

from typing import Any

from pytest_cluster.evidence.record.plan import Plan, PlannedCase
from pytest_cluster.evidence.sinks.results import ResultLine
from pytest_cluster.evidence.verdict.nodes import NodeVerdict, node_verdicts
from pytest_cluster.report import failures
from pytest_cluster.report.failures import node_rows, what_failed


def line(node: str, clause: str, measured: Any, outcome: str = "failed",
         **more: Any) -> ResultLine:
    record: dict[str, Any] = {
        "case": f"acceptance/test_x.py::test_{clause}[{node}]", "clause": clause,
        "spec_key": clause, "node": node, "measured": measured, "outcome": outcome,
        "unit": "GB/s", "requirement": ">= 40 GB/s", "comparison": ">=",
        "required": 40.0,
        "message": f"{node} {clause}: measured {measured} GB/s < required 40 GB/s", **more}
    return record  # type: ignore[return-value]


def verdicts_of(nodes: list[str], records: list[ResultLine]) -> list[NodeVerdict]:
    """The nodes' verdicts, every record's case planned and selected."""
    cases = tuple(PlannedCase(str(r["case"]), str(r["clause"]), str(r["node"]))
                  for r in records)
    return node_verdicts(nodes, Plan(cases, frozenset(c.case_id for c in cases)), records)


def test_each_failed_node_s_first_failure_with_its_figures_and_fault() -> None:
    """n2's first failure in the run's order is gpus.h2d (measured 13.5 GB/s against >= 40
    GB/s, its code, action and actor); n1 passed and is not listed; a line without code
    shows none."""
    records = [line("n1", "gpus.h2d", 52.0, "passed"),
               line("n2", "gpus.h2d", 13.5, code="PC-GPU-PCIE", action="reseat the GPU",
                    actor="provider-hardware"),
               line("n2", "gpus.d2h", 12.0), line("n3", "gpus.d2h", 30.0)]
    found = what_failed(verdicts_of(["n1", "n2", "n3"], records), records)
    assert found.more == 0
    assert [(f.node, f.failure.clause, f.clauses) for f in found.first] == [
        ("n2", "gpus.h2d", 2), ("n3", "gpus.d2h", 1)]
    first = found.first[0].failure
    assert (first.case, first.measured, first.required) == (
        "test_gpus.h2d[n2]", "13.5 GB/s", ">= 40 GB/s")
    assert first.margin == "-66.2 % below required"
    assert (first.code, first.action, first.actor) == (
        "PC-GPU-PCIE", "reseat the GPU", "provider-hardware")
    assert (found.first[1].failure.code, found.first[1].failure.action) == ("", "")
    assert found.first[0].anchor == "node-1"  # its place in the spec


def test_what_failed_and_the_why_are_bounded() -> None:
    """More failed nodes than the block shows: the first MAX_NODES, then a count; a node
    with more failed clauses than its why shows: the first MAX_CLAUSES, cut at a clause,
    then a count."""
    nodes = [f"n{i:04}" for i in range(failures.MAX_NODES + 7)]
    clauses = [f"c{k}" for k in range(failures.MAX_CLAUSES + 3)]
    records = [line(node, clause, 1.0) for node in nodes for clause in clauses]
    verdicts = verdicts_of(nodes, records)
    found = what_failed(verdicts, records)
    assert (len(found.first), found.more) == (failures.MAX_NODES, 7)
    assert [f.node for f in found.first] == nodes[:failures.MAX_NODES]
    rows = node_rows(verdicts, records)
    assert len(rows) == len(nodes)
    assert [f.clause for f in rows[0].failed] == clauses[:failures.MAX_CLAUSES]
    assert rows[0].more == 3
    assert all(f.measured == "1 GB/s" for f in rows[0].failed)


def test_a_run_where_nothing_failed_lists_none_and_why_keeps_other_reasons() -> None:
    """No failed node: nothing listed. A node not checked keeps its verdict's reason."""
    records = [line("n1", "gpus.h2d", 52.0, "passed")]
    verdicts = verdicts_of(["n1", "n2"], records)
    assert what_failed(verdicts, records) == failures.WhatFailed((), 0)
    [row] = node_rows(verdicts, records)
    assert (row.node, row.verdict, row.reason, row.failed) == (
        "n2", "NOT CHECKED", "no check is about this node alone", ())


def test_a_not_checked_nodes_row_says_what_kept_it_undecided() -> None:
    """A node whose only failure could not be decided (DCGM's configuration finding) is
    not in What failed; its Nodes row shows its reason, then that case's fault code,
    action and actor (verdict.json's), escaped."""
    from pytest_cluster.report.templates import render

    records = [line("n1", "gpus.dcgm_diag", None, error_kind="dcgm_config",
                    code="PC-DCGM-CONFIG", action="<enable> persistence mode",
                    actor="provider-hardware")]
    verdicts = verdicts_of(["n1"], records)
    assert what_failed(verdicts, records) == failures.WhatFailed((), 0)
    [row] = node_rows(verdicts, records)
    assert (row.verdict, row.failed, row.code, row.action, row.actor) == (
        "NOT CHECKED", (), "PC-DCGM-CONFIG", "<enable> persistence mode", "provider-hardware")
    page = render("scorecard.html.j2", **_scorecard_data(verdicts, records))
    assert ('<span class="code">PC-DCGM-CONFIG</span> action: &lt;enable&gt; persistence '
            "mode (by provider-hardware)") in page


def test_the_scorecard_renders_what_failed_first_and_escapes_it() -> None:
    """In the scorecard, What failed comes right after the headline, each node linked to
    its row; a hostile action is escaped; a passed run says so in one line."""
    from pytest_cluster.report.templates import render

    records = [line("n2", "gpus.h2d", 13.5, action="<b>reseat</b>", code="PC-GPU-PCIE")]
    verdicts = verdicts_of(["n1", "n2"], records)
    page = render("scorecard.html.j2", **_scorecard_data(verdicts, records))
    assert page.index('<p class="verdict') < page.index('<div id="what-failed">') \
        < page.index("<h2>Nodes</h2>")
    assert '<a href="#node-1">n2</a>' in page and '<tr id="node-1">' in page
    assert "action: &lt;b&gt;reseat&lt;/b&gt;" in page and "<b>reseat</b>" not in page
    assert "measured 13.5 GB/s, required &gt;= 40 GB/s" in page
    passed = render("scorecard.html.j2", **_scorecard_data(verdicts_of(["n1"], []), []))
    assert "Nothing failed" in passed


def _scorecard_data(verdicts: list[NodeVerdict], records: list[ResultLine]) -> dict[str, Any]:
    from pytest_cluster.report.scorecard import MatrixView

    return {"simulated": False, "simulated_banner": "", "coverage": "",
            "coverage_incomplete": False, "overall": "REJECTED", "cluster": "c",
            "node_count": len(verdicts), "counted": [], "failing": 0, "spec_file": "s",
            "spec_sha256": "0", "extends": None, "launcher": "sim", "checks": None,
            "what_failed": what_failed(verdicts, records),
            "not_accepted": node_rows(verdicts, records), "accepted": [],
            "cluster_failed": [], "findings": [], "matrix": MatrixView((), ()), "near": 10.0,
            "clauses": [], "not_checked": [], "passed_lists": False, "level": ""}
