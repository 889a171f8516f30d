"""The terminal's section as a pure function of what the run found (report/terminal.py):
a soak's lines first and marked when simulated, the nodes not accepted named, what was not
checked, the drain lines commented where the nodes are no SLURM nodes, lists cut."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.evidence.record.plan import LeftOut
from pytest_cluster.evidence.verdict.nodes import ACCEPTED, REJECTED, NodeVerdict
from pytest_cluster.report.terminal import (
    MAX_LISTED,
    NEEDS_A_SOAK,
    RunSummary,
    terminal_lines,
    verdict_line,
)
from pytest_cluster.units import format_size

SIM = parse_spec("cluster: {name: c, nodes: 'n[1-30]', launcher: sim}\ngpus: {count: 8}\n"
                 "sim: {}\n", "t.yaml")


def end(**changes: Any) -> dict[str, Any]:
    found = {"counts": {"failed": 2, "error": 0}, "checks_ran": 10, "checks_planned": 12,
             "nodes_covered": ["n1", "n2"], "selection": {}, "deselected": 0,
             "not_checked": [{"clause": "sla", "why": NEEDS_A_SOAK}], "status": "partial",
             "verdict": "REJECTED", "level": "acceptance"}
    return {**found, **changes}


def summary(**changes: Any) -> RunSummary:
    found: dict[str, Any] = dict(
        spec=SIM, end=end(), runs_checks=True, verdicts=(), cluster_failures=[],
        soak_lines=None, baseline=None, coverage="", not_in_contract=(), inventory_error="",
        evidence=None)
    return RunSummary(**{**found, **changes})


def test_no_check_ran_says_so_and_what_the_contract_left_out() -> None:
    assert terminal_lines(summary(end=None, runs_checks=False,
                                  not_in_contract=(LeftOut("storage"), LeftOut("training")))) == [
        "cluster c: 30 node(s); no check was run, so no evidence was written",
        "not in contract, not tested: storage, training"]


def test_a_soaks_lines_come_first_marked_simulated_and_lists_are_cut() -> None:
    rejected = tuple(NodeVerdict(f"n{i}", REJECTED, "gpus.count: 7 GPUs") for i in
                     range(1, MAX_LISTED + 3))
    failures = [{"clause": f"storage[/d{i}].write", "where": "all", "message": "slow"}
                for i in range(MAX_LISTED + 4)]
    lines = terminal_lines(summary(
        soak_lines=["soak: 2 round(s)", "  availability: cluster 100 %"],
        verdicts=(NodeVerdict("n30", ACCEPTED), *rejected), evidence="evidence: here/",
        cluster_failures=failures, findings=tuple(f"f{i}" for i in range(MAX_LISTED + 1))))
    assert lines[:3] == [
        "[SIMULATED] soak: 2 round(s)", "  availability: cluster 100 %",
        "cluster c: 10 of 12 contract check(s) ran, 2 failed; nodes covered: n1, n2 (2 of 30)"]
    assert "nodes: 1 ACCEPTED, 22 REJECTED, 0 UNREACHABLE, 0 NOT CHECKED" in lines
    assert "verdict: REJECTED at level acceptance (FAIL)" in lines
    assert lines.count("  REJECTED n1: gpus.count: 7 GPUs") == 1
    # every list cut says how many it left out, and where they all are
    assert "  and 2 more nodes (verdict.json lists all)" in lines
    assert sum(line.startswith("  cluster check failed: ") for line in lines) == MAX_LISTED
    assert "  and 4 more cluster checks failed (verdict.json lists all)" in lines
    assert sum(line.startswith("found: f") for line in lines) == MAX_LISTED
    assert "found: 1 more (results.jsonl has each case's)" in lines
    assert f"not checked: sla: {NEEDS_A_SOAK}" in lines
    drain = lines.index("to drain them in SLURM (printed, never run):")
    taint = lines.index("to keep new pods off them in Kubernetes (printed, never run):")
    assert lines[drain + 1].startswith("  # ") and "SIMULATED" in lines[drain + 1]
    assert len(lines[drain + 1:taint]) == len(lines[taint + 1:-1]) == MAX_LISTED + 1
    assert lines[taint - 1] == lines[-2] == ("  # and 2 more nodes (verdict.json's drain "
                                             "lists all)")
    assert lines[taint + 1] == ("  # SIMULATED, not a real node: kubectl taint nodes n1 "
                                "pytest-cluster/verdict=rejected:NoSchedule --overwrite")
    assert lines[-1] == "evidence: here/"


@pytest.mark.parametrize(("changes", "why"), [
    # a soak stopped in its round 2 of 4, every node judged in round 1: nothing of
    # 'not every node was judged', which is false of it
    ({"status": "interrupted", "verdicts": {"ACCEPTED": 4},
      "soak": {"rounds": 2, "rounds_finished": 1, "max_rounds": 4}},
     "the soak was stopped: round 2 of 4 not finished"),
    ({"status": "interrupted", "verdicts": {"ACCEPTED": 4},
      "soak": {"rounds": 3, "rounds_finished": 3, "max_rounds": None}},
     "the soak was stopped after round 3"),
    ({"status": "interrupted", "verdicts": {"ACCEPTED": 2}},
     "the run was stopped before every selected check ran"),
    ({"status": "interrupted", "verdicts": {"NOT CHECKED": 3},
      "soak": {"rounds": 1, "rounds_finished": 0, "max_rounds": 3}},
     "the soak was stopped: round 1 of 3 not finished; not every node was judged"),
    ({"status": "partial", "verdicts": {"ACCEPTED": 1, "NOT CHECKED": 2}},
     "not every node was judged"),
])
def test_an_incomplete_verdict_says_why_as_it_is(changes: dict[str, Any], why: str) -> None:
    """The verdict line's reason is what made the run INCOMPLETE: it was stopped (a soak:
    in which round), and/or some node was not judged."""
    assert verdict_line(end(verdict="INCOMPLETE", **changes)) == (  # type: ignore[arg-type]
        f"verdict: INCOMPLETE at level acceptance (ERROR: {why}; none is drained for it)")


# -- every summary line of a failed check across nodes says which check it is -------------

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow
def test_no_two_cluster_failures_read_alike_and_each_names_its_payload(
        pytester: pytest.Pytester) -> None:
    """sim-h100-64: the 64-node all_reduce, measured over the 63 nodes that answer (sim-gpu-50
    is down), fails at 4 GiB and at 16 GiB.
    The terminal's lines, verdict.json, the scorecard and JUnit each say which is which."""
    result = pytester.runpytest(f"--cluster={EXAMPLES / 'sim-h100-64.yaml'}",
                                "-p", "no:cacheprovider")
    latest = pytester.path / "reports" / "latest"
    lines = [line.strip() for line in result.outlines if "cluster check failed:" in line]
    assert len(lines) == len(set(lines)) >= 2
    records = [json.loads(line) for line in
               (latest / "results.jsonl").read_text().splitlines()]
    nodes = {f"sim-gpu-{index:02d}" for index in range(1, 65)}
    across = [r for r in records if r.get("type") == "result" and r["outcome"] == "failed"
              and r["node"] not in nodes and "payload" in r]
    assert len(across) == 2
    listed = json.loads((latest / "verdict.json").read_text())["cluster_checks_failed"]
    assert lines == [f"cluster check failed: {f['clause']} ({f['where']}): {f['message']}"
                     for f in listed]
    html = (latest / "report.html").read_text()
    junit = {case.get("name"): case for case in
             ElementTree.parse(latest / "junit.xml").getroot().iter("testcase")}
    for record in across:
        what = f"{record['collective']} {format_size(record['payload'])}"
        where = f"{record['node']}, {what}"
        assert sum(f"({where})" in line for line in lines) == 1
        assert f"<td>{escape(where)}</td>" in html
        failure = junit[record["nodeid"].split("::")[1]].find("failure")
        # measured over the 63 nodes that answer: the note names its payload
        assert failure is not None and f"{what} over 63 node(s)" in (failure.text or "")
