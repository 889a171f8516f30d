"""What a technician paged at night reads first: per node that failed (REJECTED) or did not
answer (UNREACHABLE), its first failure (the earliest of its failed cases in the run's
order, as its verdict counted them): the clause and the case, measured against required
with the unit, and the fault code, the action and who acts where the result line says
them; and, for the Nodes table, each failed clause of a node with its measured and
required figures instead of its name alone.

Records only (the node verdicts and the lines that did not pass, which the ledger holds
without their raw payloads); scorecard.html.j2 renders them. Both are bounded: the first
MAX_NODES nodes, MAX_CLAUSES clauses a node, then a count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_cluster.evidence.record.summary import margin, margin_text, measured_text
from pytest_cluster.evidence.sinks.results import outcome
from pytest_cluster.evidence.verdict.nodes import ACCEPTED, REJECTED, UNREACHABLE

if TYPE_CHECKING:
    from pytest_cluster.evidence.sinks.results import ResultLine
    from pytest_cluster.evidence.verdict.nodes import NodeVerdict

MAX_NODES = 50  # nodes in "What failed"; then "and N more"
MAX_CLAUSES = 4  # failed clauses in a node's "why"; then "and N more clause(s)"
MAX_MESSAGE = 400  # characters of a failure's message shown in place of a text measurement


@dataclass(frozen=True)
class Failure:
    """One failed case as the report shows it (text, not HTML)."""

    clause: str
    case: str  # the clause instance: its test and place ('' for a line without a case id)
    measured: str  # '612 TFLOPS'; '' when nothing was measured
    required: str  # '>= 700 TFLOPS'; '' when the line does not say
    margin: str  # '-12.6 % below required'; ''
    message: str
    code: str = ""  # PC-...; '' when the line carries none
    action: str = ""
    actor: str = ""


@dataclass(frozen=True)
class FirstFailure:
    node: str
    verdict: str
    anchor: str  # the id of the node's row in the Nodes table
    failure: Failure
    clauses: int  # how many clauses failed on the node


@dataclass(frozen=True)
class WhatFailed:
    first: tuple[FirstFailure, ...]  # the first MAX_NODES failed nodes, in the spec's order
    more: int  # failed nodes beyond those


def anchor(index: int) -> str:
    """The id of a node's row in the Nodes table (by its place in the spec: a node's name
    may hold any character)."""
    return f"node-{index}"


def _text(record: ResultLine | None, key: str) -> str:
    value = record.get(key) if record is not None else None
    return str(value) if value not in (None, "") else ""


def failure_of(entry: dict[str, str], record: ResultLine | None) -> Failure:
    """A failure as the node's verdict counted it (clause, case, message), with the figures
    of its result line (`record`, None when the ledger did not keep it). A measurement in
    words ('1 of 60 field(s) differ', '23 result(s) passed') does not say what failed: the
    case's message does (the GPU, the test, the field), its first MAX_MESSAGE characters."""
    measured = required = shown_margin = ""
    message = entry.get("message", "")
    if record is not None:
        if isinstance(record.get("measured"), str) and message:
            message = message if len(message) <= MAX_MESSAGE else \
                message[:MAX_MESSAGE - 3] + "..."
        elif record.get("measured") is not None:
            measured = measured_text(record)
        required = _text(record, "requirement")
        found = margin(record)
        if found is not None:
            shown_margin = margin_text(found, str(record.get("comparison", ">=")))
    return Failure(entry.get("clause", ""), entry.get("case", "").split("::")[-1], measured,
                   required, shown_margin, message, _text(record, "code"),
                   _text(record, "action"), _text(record, "actor"))


def failed_lines(records: Iterable[ResultLine]) -> dict[str, ResultLine]:
    """The lines that failed (or could not start), by case id: the first of each."""
    found: dict[str, ResultLine] = {}
    for record in records:
        case = record.get("case")
        if isinstance(case, str) and outcome(record) in ("failed", "error"):
            found.setdefault(case, record)
    return found


def what_failed(verdicts: Sequence[NodeVerdict], records: Iterable[ResultLine]) -> WhatFailed:
    """Each REJECTED or UNREACHABLE node's first failure, in the spec's order (the first
    MAX_NODES of them)."""
    lines = failed_lines(records)
    first: list[FirstFailure] = []
    failed = 0
    for index, verdict in enumerate(verdicts):
        if verdict.verdict not in (REJECTED, UNREACHABLE) or not verdict.failures:
            continue
        failed += 1
        if len(first) < MAX_NODES:
            first.append(FirstFailure(
                verdict.node, verdict.verdict, anchor(index),
                failure_of(verdict.failures[0], lines.get(verdict.failures[0].get("case", ""))),
                len(verdict.failed_clauses)))
    return WhatFailed(tuple(first), failed - len(first))


@dataclass(frozen=True)
class NodeRow:
    """A node not accepted, as the Nodes table shows it."""

    node: str
    verdict: str
    anchor: str
    reason: str  # the verdict's reason (for a node without failed clauses)
    failed: tuple[Failure, ...]  # its failed clauses, the first failure of each
    more: int  # failed clauses beyond those
    #: a node without failed clauses shown (UNREACHABLE, NOT CHECKED): its verdict's fault
    #: (what kept a NOT CHECKED node undecided), as its reason is followed by
    code: str = ""
    action: str = ""
    actor: str = ""


def node_rows(verdicts: Sequence[NodeVerdict], records: Iterable[ResultLine]) -> list[NodeRow]:
    """The nodes not accepted, in the spec's order: a REJECTED node's first MAX_CLAUSES
    failed clauses (the first failure of each, with its figures), an UNREACHABLE or NOT
    CHECKED node's reason and its fault (a NOT CHECKED node's: what kept it undecided)."""
    lines = failed_lines(records)
    rows = []
    for index, verdict in enumerate(verdicts):
        if verdict.verdict == ACCEPTED:
            continue
        shown: list[Failure] = []
        seen: set[str] = set()
        for entry in verdict.failures if verdict.verdict == REJECTED else ():
            clause = entry.get("clause", "")
            if clause in seen:
                continue
            seen.add(clause)
            shown.append(failure_of(entry, lines.get(entry.get("case", ""))))
            if len(shown) == MAX_CLAUSES:
                break
        more = len(verdict.failed_clauses) - len(shown) if shown else 0
        fault = ("", "", "") if shown else (verdict.code, verdict.action, verdict.actor)
        rows.append(NodeRow(verdict.node, verdict.verdict, anchor(index), verdict.reason,
                            tuple(shown), more, *fault))
    return rows
