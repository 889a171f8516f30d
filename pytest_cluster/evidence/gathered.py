"""What the scorecard shows of a run's result lines, gathered one line at a time (the
ledger holds these, not the lines): the nodes x clauses matrix of worst cells, each
clause's tally, the rows of the passed checks, each clause's reference. Data only: the
report renders it (report/scorecard.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pytest_cluster.evidence.results import clause_of, outcome
from pytest_cluster.evidence.tally import ClauseTally, margin, margin_text, measured_text

NEAR = 10.0  # % of the requirement: a margin closer than this is shown as near the line


@dataclass(frozen=True)
class Cell:
    """One node's result for one clause: the worst of its cases (e.g. 8 GPUs)."""

    css: str
    text: str
    title: str


def _rank(css: str) -> int:
    return ["m-notrun", "m-pass", "m-near", "m-short", "m-fail", "m-error"].index(css)


def cell_of(record: Mapping[str, Any]) -> Cell:
    """How one record shows in the matrix: colour by its margin, text the margin."""
    kind = outcome(record)
    where = str(record.get("node", ""))
    if record.get("gpu") is not None:
        where += f" gpu{record['gpu']}"
    found = margin(record)
    text = "" if found is None else "0" if abs(found) < 0.5 else f"{found:+.0f}"
    if kind == "not_run":
        return Cell("m-notrun", "", f"{where}: not reached")
    if kind == "skipped":
        return Cell("m-notrun", "s", f"{where}: skipped")
    if kind in ("failed", "error"):
        message = str(record.get("message", "")).removeprefix("Failed: ")[:300]
        if record.get("error_kind") or (found is None and record.get("measured") is None):
            return Cell("m-error", "!", f"{where}: {message}")
        css = "m-short" if found is not None and found > -NEAR else "m-fail"
        return Cell(css, text or "x", f"{where}: {message}")
    css = "m-near" if found is not None and found < NEAR else "m-pass"
    detail = margin_text(found, str(record.get("comparison", ">="))) if found is not None \
        else str(record.get("measured", "passed"))
    return Cell(css, text, f"{where}: {detail}")


class Matrix:
    """Clauses (columns, in the order first seen) and the worst cell per (node, clause),
    gathered one result line at a time."""

    def __init__(self, nodes: Sequence[str]) -> None:
        self.nodes = tuple(nodes)
        self._names = set(nodes)
        self._clauses: dict[str, None] = {}
        self.cells: dict[tuple[str, str], Cell] = {}

    @property
    def clauses(self) -> list[str]:
        return list(self._clauses)

    def add(self, record: Mapping[str, Any]) -> None:
        node = str(record.get("node"))
        if node not in self._names:
            return
        clause = clause_of(record)
        self._clauses.setdefault(clause, None)
        cell = cell_of(record)
        old = self.cells.get((node, clause))
        if old is None or _rank(cell.css) > _rank(old.css) or (
                _rank(cell.css) == _rank(old.css) and _below(cell, old)):
            self.cells[(node, clause)] = cell


def matrix(nodes: Sequence[str], records: Iterable[Mapping[str, Any]]) -> Matrix:
    found = Matrix(nodes)
    for record in records:
        found.add(record)
    return found


def _below(cell: Cell, old: Cell) -> bool:
    try:
        return float(cell.text) < float(old.text)
    except ValueError:
        return False


class PassedRow(NamedTuple):
    """A passed check as its clause's list shows it (text, not HTML: the report renders
    it); a tuple, so that the ledger spools it as a JSON list."""

    case: str
    measured: str
    requirement: str
    margin: str
    of_reference: str


def passed_row(record: Mapping[str, Any]) -> PassedRow:
    """A passed check's row in its clause's list."""
    found = margin(record)
    shown = margin_text(found, str(record.get("comparison", ">="))) if found is not None \
        else ""
    case = str(record.get("case") or record.get("nodeid", "")).split("::")[-1]
    return PassedRow(case, measured_text(record), str(record.get("requirement", "")), shown,
                     _ratio(record))


def _ratio(record: Mapping[str, Any]) -> str:
    ratio = record.get("reference_ratio")
    return f"{ratio * 100:.0f} %" if isinstance(ratio, (int, float)) else ""


def reference_named(record: Mapping[str, Any]) -> str:
    """A clause's reference as its list names it once: the figure and what it is, without
    this case's ratio ('794.5 TFLOPS measured by mamf-finder on H100 SXM')."""
    text = str(record.get("reference") or "")
    return "; ".join(part.split(" of the ", 1)[-1] for part in text.split("; ")) if text \
        else ""


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_benchmark(record: Mapping[str, Any]) -> bool:
    """Whether the record is a benchmark run's (its raw has a payload sweep, empty when
    the job failed), not the slow-node search's."""
    raw = record.get("raw")
    return (isinstance(raw, dict) and "sweep" in raw and _is_number(record.get("node_count"))
            and str(record.get("spec_key", "")).startswith("interconnect.busbw"))


@dataclass(frozen=True)
class Gathered:
    """What the scorecard shows of a run's result lines, gathered as they were written
    (ledger.py): the checks about several nodes that failed, each clause's tally, the
    nodes x clauses matrix and, per clause, the rows of its passed checks."""

    cluster_failed: list[dict[str, str]]
    tallies: list[ClauseTally]
    matrix: Matrix
    passed: dict[str, list[PassedRow]]
    references: dict[str, str] = field(default_factory=dict)  # per clause, its first one
