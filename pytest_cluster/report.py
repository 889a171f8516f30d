"""Results on the controller: results.jsonl as each test ends, and the contract summary."""

from __future__ import annotations

import contextlib
import html
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

from pytest_cluster.spec.model import Spec
from pytest_cluster.units import format_number

MAX_SHOWN = 5


def _places(names: list[str]) -> str:
    ordered = sorted(names)
    if len(ordered) <= 4:
        return ", ".join(ordered)
    return f"{', '.join(ordered[:3])} and {len(ordered) - 3} more"


@dataclass
class ClauseTally:
    key: str
    required: str = ""
    unit: str = ""
    comparison: str = ""
    passed: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    worst: float | None = None
    worst_node: str = ""
    simulated: bool = False
    found: dict[str, list[str]] = field(default_factory=dict)  # text values -> nodes
    found_failed: dict[str, list[str]] = field(default_factory=dict)

    def add(self, record: dict[str, Any]) -> None:
        node = str(record.get("node", "?"))
        if record.get("gpu") is not None:
            node = f"{node} gpu{record['gpu']}"
        (self.passed if record["outcome"] == "passed" else self.failed).add(node)
        self.required = str(record.get("requirement", self.required))
        self.unit = str(record.get("unit", self.unit) or "")
        self.comparison = str(record.get("comparison", self.comparison) or "")
        self.simulated = self.simulated or bool(record.get("simulated"))
        measured = record.get("measured")
        if isinstance(measured, str):
            self.found.setdefault(measured, []).append(node)
            if record["outcome"] != "passed":
                self.found_failed.setdefault(measured, []).append(node)
        elif isinstance(measured, (int, float)) and not isinstance(measured, bool):
            lower_is_worse = self.comparison in (">=", ">", "")
            if self.worst is None or (measured < self.worst if lower_is_worse
                                      else measured > self.worst):
                self.worst, self.worst_node = float(measured), node

    def worst_text(self) -> str:
        """Numbers: the worst and where. Text: the failing values when some failed (health
        rules), else every value when there are few (versions); at most MAX_SHOWN."""
        if self.found:
            shown = self.found_failed or (self.found if len(self.found) <= 3 else {})
            if not shown:
                return f"{len(self.found)} different values, all as required"
            items = sorted(shown.items())
            text = "; ".join(f"{value} ({_places(nodes)})" for value, nodes in items[:MAX_SHOWN])
            more = len(items) - MAX_SHOWN
            return text + (f"; and {more} more" if more > 0 else "")
        if self.worst is None:
            return "-"
        unit = f" {self.unit}" if self.unit and self.unit != "%" else self.unit
        return f"{format_number(self.worst)}{unit} ({self.worst_node})"


def report_record(report: pytest.TestReport) -> dict[str, Any] | None:
    """The JSONL record of a finished test, or None if it is not a contract test."""
    props = dict(report.user_properties)
    if "spec_key" not in props:
        return None
    if "raw" in props and isinstance(props["raw"], str):
        with contextlib.suppress(json.JSONDecodeError):
            props["raw"] = json.loads(props["raw"])
    message = ""
    if report.failed or report.skipped:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(report.longrepr)
        if isinstance(report.longrepr, tuple):  # skip: (path, line, reason)
            message = str(report.longrepr[2])
    return {"type": "result", "nodeid": report.nodeid, "outcome": report.outcome,
            "phase": report.when, "duration_s": round(report.duration, 6),
            "finished_at": time.time(), "message": message, **props}


class ResultsWriter:
    """Appends one line per finished contract test, flushed at once."""

    def __init__(self, path: Path, spec: Spec) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: IO[str] = path.open("w", encoding="utf-8")
        self.write({"type": "run", "cluster": spec.cluster.name, "spec": spec.file,
                    "spec_sha256": spec.sha256, "nodes": list(spec.cluster.nodes),
                    "launcher": spec.cluster.launcher, "simulated": is_simulated(spec),
                    "started_at": time.time()})

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, sort_keys=True, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def is_simulated(spec: Spec) -> bool:
    """Whether every result of this run comes from a simulated cluster."""
    return spec.cluster.launcher == "sim"


SIMULATED_BANNER = ("SIMULATED cluster: every number in this report is simulated from the "
                    "spec's sim section; no hardware was measured.")


def tally(records: Iterable[dict[str, Any]]) -> list[ClauseTally]:
    clauses: dict[str, ClauseTally] = {}
    for record in records:
        key = str(record["spec_key"])
        clauses.setdefault(key, ClauseTally(key)).add(record)
    return list(clauses.values())


def summary_html(spec: Spec, tallies: list[ClauseTally], not_in_contract: list[str]) -> str:
    esc = html.escape
    rows = []
    for t in tallies:
        status = "passed" if not t.failed else "failed"
        sim = ' <span class="simulated">SIMULATED</span>' if t.simulated else ""
        failed_nodes = ", ".join(sorted(t.failed)) or "-"
        rows.append(
            f'<tr class="{status}"><td>{esc(t.key)}{sim}</td><td>{esc(t.required)}</td>'
            f"<td>{len(t.passed)}</td><td>{len(t.failed)}</td><td>{esc(failed_nodes)}</td>"
            f"<td>{esc(t.worst_text())}</td></tr>")
    skipped = ""
    if not_in_contract:
        skipped = ("<p>Not in the contract, so not tested: "
                   f"{esc(', '.join(sorted(set(not_in_contract))))}</p>")
    banner = (f'<p class="simulated" style="font-size:140%">{esc(SIMULATED_BANNER)}</p>'
              if is_simulated(spec) else "")
    return (
        '<div id="contract-summary"><h2>Contract summary: '
        f"{esc(spec.cluster.name)}</h2>{banner}"
        f"<p>Spec {esc(spec.file)} (sha256 {spec.sha256[:12]}), "
        f"{len(spec.cluster.nodes)} node(s), launcher {esc(spec.cluster.launcher)}.</p>"
        "<style>#contract-summary table{border-collapse:collapse}"
        "#contract-summary td,#contract-summary th{border:1px solid #999;padding:2px 8px}"
        "#contract-summary tr.failed td{background:#fdd}"
        ".simulated{background:#fc0;font-weight:bold;padding:0 4px}</style>"
        "<table><tr><th>Clause</th><th>Required</th><th>Passed</th>"
        "<th>Failed</th><th>Failed on</th><th>Worst measured</th></tr>"
        + "".join(rows) + "</table>" + skipped + "</div>")
