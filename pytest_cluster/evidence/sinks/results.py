"""results.jsonl: a run line, one line per contract case as it ends, and an end line.

    {"type": "run", ...}       cluster, spec and its SHA-256, nodes, launcher, simulated
    {"type": "result", ...}    one per contract case, written and flushed as it ends
    {"type": "end", ...}       how the run ended and exactly what it covered

A file without an end line is a run that was cut off (killed, power lost): `read_results`
reports it as interrupted.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import pytest

from pytest_cluster.evidence.record.lines import (
    BaselineSummary,
    EndLine,
    Line,
    ResultLine,
    RoundLine,
    RunLine,
    SoakCredit,
    SoakEnd,
    is_result,
)

# declared in evidence/record/lines.py; read here too
__all__ = ["BaselineSummary", "EndLine", "Line", "ResultLine", "RoundLine", "RunLine",
           "SoakCredit", "SoakEnd", "is_result"]

#: How a run ended (the end record's `status`).
COMPLETE = "complete"  # every contract check of the spec ran
PARTIAL = "partial"  # ran to its end, but the selection (-k, -m, --lf) left checks out
INTERRUPTED = "interrupted"  # Ctrl-C, -x / --maxfail, a killed run: selected checks not reached
INTERNAL_ERROR = "internal_error"


def run_status(exit_code: int, planned: int, selected: int, ran: int) -> str:
    if exit_code == pytest.ExitCode.INTERNAL_ERROR:
        return INTERNAL_ERROR
    if exit_code == pytest.ExitCode.INTERRUPTED or ran < selected:
        return INTERRUPTED
    if selected < planned:
        return PARTIAL
    return COMPLETE


def clause_of(record: ResultLine) -> str:
    """The clause a line is about: its case's clause family, else the key it recorded (a
    test of your own). The one place that says so."""
    return str(record.get("clause") or record.get("spec_key"))


def outcome(record: ResultLine) -> str:
    """passed, failed, error (the check could not start: setup failed), skipped, not_run."""
    if record.get("outcome") == "failed" and record.get("phase") == "setup":
        return "error"
    return str(record.get("outcome"))


OUTCOMES = ("passed", "failed", "error", "skipped", "not_run")

#: The key of a case's result line (and JUnit property) that says the kill switch skipped
#: it: the clause it turned off (run/disabling.py); `disabled_until` says until when.
DISABLED = "disabled"


def disabled_clause(record: Mapping[str, object]) -> str | None:
    """The clause a skipped case's line says the kill switch turned off, or None."""
    clause = record.get(DISABLED)
    return clause if isinstance(clause, str) and record.get("outcome") == "skipped" else None


def counts(records: Iterable[ResultLine]) -> dict[str, int]:
    return counted(Counter(outcome(r) for r in records))


def counted(found: Mapping[str, int]) -> dict[str, int]:
    """The end record's `counts`: every outcome, 0 where none."""
    return {name: found.get(name, 0) for name in OUTCOMES}


#: The attribute a contract case's report carries its case in (case id, clause, node):
#: what makes it a case's, for the result line, the session, JUnit and the HTML report.
CASE_ATTRIBUTE = "pytest_cluster_case"


def carry_case(report: pytest.TestReport, case: Sequence[str | None]) -> None:
    """Mark `report` as the report of contract case `case` (case id, clause, node)."""
    setattr(report, CASE_ATTRIBUTE, case)


def makes_line(report: pytest.TestReport) -> bool:
    """Whether a report is one that gets a result line: a contract case's (or a test's of
    your own recording a spec_key), at its call or at a setup that failed (the check could
    not start)."""
    if not (report.when == "call" or (report.when == "setup" and not report.passed)):
        return False
    return getattr(report, CASE_ATTRIBUTE, None) is not None or any(
        name == "spec_key" for name, _ in report.user_properties)


def report_record(report: pytest.TestReport) -> ResultLine | None:
    """The result line of a finished contract case, or None if it is not one (see
    `makes_line` for the phases that get one).

    A case that failed before recording anything (a fixture crashed) still gets its line,
    with the clause its marker names."""
    props = dict(report.user_properties)
    case = getattr(report, CASE_ATTRIBUTE, None)
    if "spec_key" not in props and case is None:
        return None
    raw_text = None
    if "raw" in props and isinstance(props["raw"], str):
        with contextlib.suppress(json.JSONDecodeError):
            text = props["raw"]
            props["raw"] = json.loads(text)
            # as Evidence serialised it (one line); a test's own raw with line breaks
            # between its tokens is serialised again, to keep results.jsonl a line each
            raw_text = text if "\n" not in text and "\r" not in text else None
    message = ""
    if report.failed or report.skipped:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(report.longrepr)
        if isinstance(report.longrepr, tuple):  # skip: (path, line, reason)
            message = str(report.longrepr[2])
    record: dict[str, Any] = {"type": "result", "nodeid": report.nodeid,
                              "outcome": report.outcome, "phase": report.when,
                              "duration_s": round(report.duration, 6),
                              "finished_at": time.time(), "message": message}
    if case is not None:
        record.update(case=case[0], clause=case[1])
        props.setdefault("spec_key", case[1])
        if case[2] is not None:
            props.setdefault("node", case[2])
    record.update(props)
    line = _Line(record)
    line.raw_text = raw_text
    return cast("ResultLine", line)


class _Line(dict[str, Any]):
    """A result line that keeps its raw part as Evidence serialised it (`raw_text`), so
    that results.jsonl writes that text instead of serialising the parsed value again."""

    raw_text: str | None = None


def line_text(record: Mapping[str, Any]) -> str:
    """A line of results.jsonl: the record as JSON, its keys sorted; a raw part already
    serialised (a result line's, see _Line) is put in as it is, in its sorted place."""
    raw_text = getattr(record, "raw_text", None)
    if raw_text is None:
        return strict_json(record)
    before = strict_json({k: v for k, v in record.items() if k < "raw"})[1:-1]
    after = strict_json({k: v for k, v in record.items() if k > "raw"})[1:-1]
    return "{" + ", ".join(p for p in (before, f'"raw": {raw_text}', after) if p) + "}"


def strict_json(value: Any) -> str:
    """`value` as strict JSON, keys sorted: a number that is not finite (strict JSON has
    none) written as its text ("inf"), never as NaN or Infinity."""
    try:
        return json.dumps(value, sort_keys=True, default=str, allow_nan=False)
    except ValueError:
        return json.dumps(_finite_only(value), sort_keys=True, default=str, allow_nan=False)


def _finite_only(value: Any) -> Any:
    """`value` with every float that is not finite as its text."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite_only(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_only(v) for v in value]
    return value


class ResultsWriter:
    """Appends one line per record, flushed at once; never overwrites an earlier file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: IO[str] = path.open("x", encoding="utf-8")

    def write(self, record: Mapping[str, Any]) -> None:
        self._file.write(line_text(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


@dataclass(frozen=True)
class RunResults:
    """A results.jsonl as read back: its run line, result lines and end line (None when
    the run was cut off), and the status that follows."""

    run: RunLine
    results: list[ResultLine]
    end: EndLine | None

    @property
    def status(self) -> str:
        return str(self.end["status"]) if self.end is not None else INTERRUPTED

    @property
    def complete(self) -> bool:
        return self.status == COMPLETE


def read_results(path: Path) -> RunResults:
    """Read a results.jsonl; a last line cut in half (a killed writer) is ignored."""
    run: RunLine = {}
    results: list[ResultLine] = []
    end: EndLine | None = None
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            kind = record.get("type")
            if kind == "run":
                run = record
            elif kind == "result":
                results.append(record)
            elif kind == "end":
                end = record
    return RunResults(run, results, end)
