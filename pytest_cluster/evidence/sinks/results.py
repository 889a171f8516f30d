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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypedDict, TypeGuard, cast

import pytest

if TYPE_CHECKING:
    from pytest_cluster.evidence.plan import NotChecked, Selection

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


class ResultLine(TypedDict, total=False):
    """A result line of results.jsonl, as `report_record` makes it from a finished case and
    every reader takes it (the ledger, the verdicts, the tallies, the reports, the hooks).
    What a test recorded through `Evidence` is among its keys; a test of your own may add
    more (any JSON value), so readers take it as a Mapping."""

    type: str  # "result"
    nodeid: str  # pytest's id of the case
    case: str  # the case id (stable across directories), for contract cases
    clause: str  # the clause family the case checks ('storage.write')
    spec_key: str  # the instance ('storage[/data].write'); the clause when none is recorded
    outcome: str  # passed, failed, skipped, not_run (see `outcome`)
    phase: str  # setup or call
    duration_s: float
    finished_at: float  # epoch seconds
    message: str  # why it failed or was skipped
    node: str | None  # None: a case about no one node, not run
    gpu: int
    gpu_uuid: str
    gpu_serial: str
    filesystem: str
    collective: str
    payload: int
    node_count: int
    spec_line: int
    requirement: str
    theoretical: str
    derivation: str
    measured: Any  # in the clause's unit
    required: Any
    comparison: str
    unit: str
    measured_base: float  # in base units (bytes/s, s, ...)
    required_base: float
    simulated: bool
    method: str
    error_kind: str
    probe: str
    probe_run: str
    verdict: str
    reference: str  # published figures beside the measurement (measure/reference.py)
    reference_ratio: float
    reference_source: str
    finding: str  # what a check found beside its figure (a straggler)
    leftovers: Any  # a storage case: the files an earlier check left
    culprits: str  # a check of several nodes: the nodes it blames, as a hostlist
    #: a node's figure measured in a group whose other members (this hostlist) were not
    #: known good: the slowest bounds it, so it is the group's, not the node's alone
    bounded_by: str
    # a figure of what every node does at once (storage's aggregates): what its bound
    # counts (contract/storage.py BASES: cluster, node, gpu) and what the total was shared by
    basis: str
    basis_nodes: int
    basis_gpus: int
    raw: Any  # the probe's payload or the check's own evidence
    # a case derived from the whole run (evidence/derived_cases.py): the baseline's
    compared_case: str  # the case id a figure's comparison is of
    changes: list[str]
    gpus_at_baseline: int | None
    baseline_value: str
    change_pct: float | None  # None: beyond any share of the baseline (from 0)
    # ... and a soak's (availability, SLA credit, counters, steadiness)
    availability: float
    down_s: float
    observed_s: float
    node_hours_lost: str
    outages: list[list[str]]  # UTC times
    outages_at: list[list[float]]  # epoch seconds
    arithmetic: str
    credit: str
    currency: str
    cluster_availability: float
    rounds_compared: int
    first_round: int
    last_round: int
    spread_pct: float
    drop_pct: float
    # a case over a soak's rounds (soak/tally.py aggregate), a round's line in the soak's
    # results.jsonl (type round_result)
    rounds: int
    rounds_failed: list[list[int]]  # [first, last] spans
    round: int
    utc: str | None


class RunLine(TypedDict, total=False):
    """results.jsonl's first line, as the session writes it (a baseline's, as read back:
    the keys its reader checks)."""

    type: str  # "run"
    tool_version: str
    cluster: str
    spec: str  # the spec's file
    spec_sha256: str
    nodes: list[str]
    launcher: str
    simulated: bool
    started_at: float  # epoch seconds
    spec_warnings: list[str]
    run_dir: str


class BaselineSummary(TypedDict):
    """The end record's `baseline`: the run compared with, and its cases."""

    path: str
    run: str  # 'run <UTC start>'
    manifest_sha256: str
    signature: str  # verified, not_checked (no --cluster-baseline-key) or unsigned
    signature_key: str | None  # the fingerprint it was verified with; None: not checked
    cases: int
    failed: int


class SoakCredit(TypedDict):
    """A soak's SLA credit owed (with an sla: section)."""

    owed: str  # a decimal, in `currency`
    currency: str
    arithmetic: list[str]
    total: str


class _SoakEnd(TypedDict):
    dir: str
    rounds: int
    rounds_finished: int
    duration_s: float | None  # as asked (--cluster-soak), None: rounds only
    max_rounds: int | None
    observed_s: float
    unobserved_s: float
    window: list[str]  # UTC
    availability: dict[str, float]  # per node


class SoakEnd(_SoakEnd, total=False):
    """A soak's own end record (the end record's `soak`)."""

    credit: SoakCredit
    stopped: str  # a round that could not start ended the soak: 'round 2 left no results
    stopped_log: str  # ... (exit status 4)', and where its log is and what it said last
    spec_changed: str  # the spec file was edited since the soak began: said, not used


class _EndLine(TypedDict):
    type: str  # "end"
    simulated: bool
    status: str  # run_status
    exit_code: int
    counts: dict[str, int]  # per outcome (counted)
    checks_ran: int
    checks_planned: int
    checks_selected: int
    deselected: int
    selection: Selection
    nodes_covered: list[str]
    nodes_in_spec: int
    level: str
    levels: list[str]  # the level and every level below it (contract/levels.py)
    not_checked: list[NotChecked]
    verdicts: dict[str, int]  # nodes per verdict
    started_at: float
    ended_at: float
    duration_s: float
    tool_version: str
    verdict: str  # the cluster's


class EndLine(_EndLine, total=False):
    """results.jsonl's last line: how the run ended and exactly what it covered
    (evidence/end.py makes it)."""

    baseline: BaselineSummary
    soak: SoakEnd
    incomplete: str  # why the verdict is INCOMPLETE (cluster_verdict.incomplete_why)
    #: the cases derived from the whole run (a soak's, a baseline's), by outcome: what
    #: pytest, JUnit and the terminal count beside `counts`
    derived_counts: dict[str, int]


class RoundLine(TypedDict):
    """A soak's line for one of its rounds (type round), in the soak's results.jsonl after
    the round's lines that did not pass (type round_result: ResultLines with their round
    and its UTC time)."""

    type: str  # "round"
    round: int
    status: str  # the round's run_status
    started_at: float
    ended_at: float
    started_utc: str
    ended_utc: str
    counts: dict[str, int]
    nodes: dict[str, list[str]]  # by state: healthy, failed, unreachable
    run_dir: str  # the round's, relative to the soak's


def is_result(record: Mapping[str, Any]) -> TypeGuard[ResultLine]:
    """Whether a line of results.jsonl (any of its kinds) is a result line."""
    return record.get("type") == "result"


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


def counts(records: Iterable[ResultLine]) -> dict[str, int]:
    return counted(Counter(outcome(r) for r in records))


def counted(found: Mapping[str, int]) -> dict[str, int]:
    """The end record's `counts`: every outcome, 0 where none."""
    return {name: found.get(name, 0) for name in OUTCOMES}


def makes_line(report: pytest.TestReport) -> bool:
    """Whether a report is one that gets a result line: a contract case's (or a test's of
    your own recording a spec_key), at its call or at a setup that failed (the check could
    not start)."""
    if not (report.when == "call" or (report.when == "setup" and not report.passed)):
        return False
    return getattr(report, "pytest_cluster_case", None) is not None or any(
        name == "spec_key" for name, _ in report.user_properties)


def report_record(report: pytest.TestReport) -> ResultLine | None:
    """The result line of a finished contract case, or None if it is not one (see
    `makes_line` for the phases that get one).

    A case that failed before recording anything (a fixture crashed) still gets its line,
    with the clause its marker names."""
    props = dict(report.user_properties)
    case = getattr(report, "pytest_cluster_case", None)
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
