"""One collected case's report over every round of a soak (tally.aggregate's record),
through pytest's report hooks, as a case that ran once: the terminal, JUnit and
pytest-html see each case once, however many rounds ran it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Literal

import pytest

from pytest_cluster.evidence import derived_cases

if TYPE_CHECKING:
    from pytest_cluster.evidence.sinks.results import ResultLine


def emit(config: pytest.Config, item: pytest.Item, case: list[Any],
         record: ResultLine) -> None:
    """One collected case's report over the soak, through pytest's report hooks."""
    skip = {"type", "nodeid", "outcome", "phase", "duration_s", "finished_at", "message",
            "case", "clause"}
    props = [(k, v) for k, v in record.items() if k not in skip]
    outcome = record["outcome"]
    failed_at = record.get("phase") if outcome == "failed" else None
    now = time.time()
    reports = []
    for when in derived_cases.WHEN:
        if failed_at == "setup" and when == "call":
            continue
        this: Literal["passed", "failed", "skipped"] = "passed"
        if when == (failed_at or "call") and outcome in ("failed", "skipped"):
            this = "failed" if outcome == "failed" else "skipped"
        longrepr: Any = None
        if this == "failed":
            longrepr = record.get("message", "")
        elif this == "skipped":
            longrepr = (str(item.path), None, str(record.get("message", "")))
        report = pytest.TestReport(
            nodeid=item.nodeid, location=item.location, keywords=dict(item.keywords),
            outcome=this, longrepr=longrepr, when=when, sections=[],
            duration=float(record.get("duration_s") or 0.0) if when == "call" else 0.0,
            start=now, stop=now, user_properties=list(props))
        report.pytest_cluster_case = case  # type: ignore[attr-defined]
        reports.append(report)
    derived_cases.log(config, item.nodeid, item.location, reports)
