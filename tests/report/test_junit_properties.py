"""report/junit_properties.py: the suite's properties, in JUnit's order, from the end record
and the nodes' verdicts; hostile text passes through as the text it is (the XML writer
escapes it once)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from pytest_cluster.evidence.baseline.accepted import Baseline
from pytest_cluster.evidence.record.lines import EndLine
from pytest_cluster.evidence.verdict.cluster_verdict import INCOMPLETE
from pytest_cluster.evidence.verdict.nodes import (
    ACCEPTED,
    FAIL,
    NOT_CHECKED,
    REJECTED,
    UNREACHABLE,
    NodeVerdict,
)
from pytest_cluster.report.junit_properties import suite_properties

HOSTILE = '<b>n"1</b> & ]]>\x1b[2J'


def _end(**extra: Any) -> EndLine:
    return cast("EndLine", {"status": "complete", "checks_ran": 7, "checks_planned": 9,
                            "counts": {"passed": 7}, "verdict": REJECTED, **extra})


def test_a_plain_run_lists_status_checks_outcome_and_every_verdicts_nodes() -> None:
    verdicts = [NodeVerdict("n2", REJECTED), NodeVerdict(HOSTILE, ACCEPTED),
                NodeVerdict("n3", ACCEPTED)]
    assert suite_properties(_end(), None, "", verdicts) == [
        ("status", "complete"), ("checks_ran", "7 of 9"), ("outcome", FAIL),
        ("nodes_accepted", f"{HOSTILE},n3"), ("nodes_rejected", "n2"),
        ("nodes_unreachable", ""), ("nodes_not_checked", "")]


def test_a_soak_a_baseline_checks_not_run_and_the_coverage_are_listed() -> None:
    baseline = Baseline(Path("/b/<x>"), "2026-01-01", (), "ab" * 32,
                        cast("Any", {}), {})
    end = _end(soak={"rounds": 4, "observed_s": 5400.0, "credit": {"total": "0.10 EUR"}},
               counts={"passed": 5, "not_run": 2})
    found = dict(suite_properties(end, baseline, f"{INCOMPLETE}: {HOSTILE}", []))
    assert found["soak"] == "4 round(s) over 1.50 h observed"
    assert found["sla_credit"] == "0.10 EUR"
    assert found["baseline"] == f"/b/<x> ({baseline.label}, manifest sha256 {'ab' * 32})"
    assert found["not_run"] == "2"
    assert found[INCOMPLETE] == f"{INCOMPLETE}: {HOSTILE}"
    assert "level" not in found
    assert dict(suite_properties(_end(), None, "level sanity", []))["level"] == "level sanity"
    nodes = [name for name, _ in suite_properties(_end(), None, "", [])
             if name.startswith("nodes_")]
    assert nodes == [f"nodes_{v.lower().replace(' ', '_')}"
                     for v in (ACCEPTED, REJECTED, UNREACHABLE, NOT_CHECKED)]


def test_the_failed_nodes_are_listed_by_their_first_failures_code() -> None:
    """As `sinfo -R` groups the drained nodes: by the code their drain reasons start
    with; a node not failed (NOT CHECKED) is in none."""
    verdicts = [NodeVerdict("n2", REJECTED, code="PC-GPU-COUNT"),
                NodeVerdict("n3", REJECTED, code="PC-GPU-ROWREMAP"),
                NodeVerdict("n5", UNREACHABLE, code="PC-GPU-ROWREMAP"),
                NodeVerdict("n6", NOT_CHECKED, code="PC-TOOL-FAULT"),
                NodeVerdict("n7", ACCEPTED)]
    found = dict(suite_properties(_end(), None, "", verdicts))
    assert found["fault_codes"] == "PC-GPU-COUNT: n2; PC-GPU-ROWREMAP: n3,n5"
    assert "fault_codes" not in dict(suite_properties(_end(), None, "", verdicts[3:]))
