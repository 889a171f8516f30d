"""What the scorecard shows of a run's result lines, gathered one line at a time (the
ledger holds these, not the lines): the nodes x clauses matrix of worst cells, each
clause's tally, the rows of the passed checks, each clause's reference. Data only: the
report renders it (report/scorecard.py).
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, NamedTuple

from pytest_cluster.evidence.record.summary import ClauseTally, margin, margin_text, measured_text
from pytest_cluster.evidence.sinks.results import ResultLine, clause_of, outcome
from pytest_cluster.evidence.verdict.blame import NOT_BLAMING, RAS_BLAMED, culprits

NEAR = 10.0  # % of the requirement: a margin closer than this is shown as near the line


@dataclass(frozen=True)
class Cell:
    """One node's result for one clause: the worst of its cases (e.g. 8 GPUs)."""

    css: str
    text: str
    title: str
    #: the exact margin (%) its text rounds: of two cells that read the same, the worse
    #: is the one with the lower margin, so that the hover names the worst case
    margin: float | None = None


def _rank(css: str) -> int:
    return ["m-notrun", "m-pass", "m-near", "m-short", "m-fail", "m-error"].index(css)


def cell_of(record: ResultLine) -> Cell:
    """How one record shows in the matrix: colour by its margin, text the margin."""
    kind = outcome(record)
    where = str(record.get("node", ""))
    if record.get("gpu") is not None:
        where += f" gpu{record['gpu']}"
    found = margin(record)
    text = "" if found is None else "0" if abs(found) < 0.5 else f"{found:+.0f}"
    if kind == "not_run":
        return Cell("m-notrun", "", f"{where}: not reached")
    if kind == "skipped":  # the kill switch's (--cluster-disable) says why, until when
        said = str(record.get("message", "")).removeprefix("Skipped: ")[:300]
        return Cell("m-notrun", "s", f"{where}: {said or 'skipped'}")
    if kind in ("failed", "error"):
        message = str(record.get("message", "")).removeprefix("Failed: ")[:300]
        # a job that hung on a rank NCCL's RAS calls DEAD failed its node (RAS_BLAMED, its
        # verdict REJECTED): a failure, not a figure that could not be measured
        dead = record.get("error_kind") in RAS_BLAMED
        if not dead and (record.get("error_kind")
                         or (found is None and record.get("measured") is None)):
            return Cell("m-error", "!", f"{where}: {message}")
        css = "m-short" if found is not None and found > -NEAR else "m-fail"
        if found is not None and abs(found) < 0.5:  # a miss never shows as a pass's "0"
            text = f"{found:+.2g}"  # -0.44, -0.01
        return Cell(css, text or "x", f"{where}: {message}", found)
    css = "m-near" if found is not None and found < NEAR else "m-pass"
    detail = margin_text(found, str(record.get("comparison", ">="))) if found is not None \
        else str(record.get("measured", "passed"))
    return Cell(css, text, f"{where}: {detail}", found)


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

    def add(self, record: ResultLine) -> None:
        """A record's cell on its node; a check of several nodes that blames some
        (blame.culprits) puts its failure in each of their cells too, as their verdicts
        count it."""
        node = str(record.get("node"))
        if node in self._names:
            self._put(node, clause_of(record), cell_of(record))
        if outcome(record) in ("failed", "error") \
                and record.get("error_kind") not in NOT_BLAMING:
            message = str(record.get("message", "")).removeprefix("Failed: ")[:300]
            for culprit in culprits(record):
                if culprit in self._names and culprit != node:
                    self._put(culprit, clause_of(record),
                              Cell("m-fail", "x", f"{culprit}: blamed by the check across "
                                   f"{node}: {message}"))

    def _put(self, node: str, clause: str, cell: Cell) -> None:
        """Keep the worse of `cell` and the one already at (node, clause)."""
        self._clauses.setdefault(clause, None)
        old = self.cells.get((node, clause))
        if old is None or _rank(cell.css) > _rank(old.css) or (
                _rank(cell.css) == _rank(old.css) and _below(cell, old)):
            self.cells[(node, clause)] = cell


def matrix(nodes: Sequence[str], records: Iterable[ResultLine]) -> Matrix:
    found = Matrix(nodes)
    for record in records:
        found.add(record)
    return found


def _below(cell: Cell, old: Cell) -> bool:
    """Whether `cell` is worse than `old` of the same colour: its exact margin lower (not
    its rounded text: +3 and +3 are 2.6 and 3.4)."""
    if cell.margin is not None and old.margin is not None:
        return cell.margin < old.margin
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


def passed_row(record: ResultLine) -> PassedRow:
    """A passed check's row in its clause's list."""
    found = margin(record)
    shown = margin_text(found, str(record.get("comparison", ">="))) if found is not None \
        else ""
    case = str(record.get("case") or record.get("nodeid", "")).split("::")[-1]
    return PassedRow(case, measured_text(record), str(record.get("requirement", "")), shown,
                     _ratio(record))


def _ratio(record: ResultLine) -> str:
    ratio = record.get("reference_ratio")
    return f"{ratio * 100:.0f} %" if isinstance(ratio, (int, float)) else ""


class PassedRows:
    """The passed lists' rows, spooled to a file as they come (one JSON line each) and
    read back one clause at a time, a row at a time: a 1,024-node run has 157,000 of them,
    and the report streams them into its file (never all in memory). Per row, its place in
    the file (16 bytes)."""

    def __init__(self, spool: IO[bytes]) -> None:
        self._spool = spool  # the owner closes it
        self._where: dict[str, tuple[array[int], array[int]]] = {}  # offsets, lengths

    def add(self, clause: str, row: PassedRow) -> None:
        data = (json.dumps(row, allow_nan=False) + "\n").encode("utf-8")
        offsets, lengths = self._where.setdefault(clause, (array("q"), array("q")))
        offsets.append(self._spool.tell())
        lengths.append(len(data))
        self._spool.write(data)

    @property
    def counts(self) -> dict[str, int]:
        """Each clause with passed checks, in the order first seen: how many."""
        return {clause: len(offsets) for clause, (offsets, _) in self._where.items()}

    def rows(self, clause: str) -> Iterator[PassedRow]:
        """A clause's rows in the order they were added (reads leave the writes' place
        alone)."""
        offsets, lengths = self._where.get(clause, (array("q"), array("q")))
        self._spool.flush()
        handle = self._spool.fileno()
        for offset, length in zip(offsets, lengths, strict=True):
            yield PassedRow(*json.loads(os.pread(handle, length, offset)))

    def as_dict(self) -> dict[str, list[PassedRow]]:
        """Every row, per clause (for a small run, or a test)."""
        return {clause: list(self.rows(clause)) for clause in self._where}


def reference_named(record: ResultLine) -> str:
    """A clause's reference as its list names it once: the figure and what it is, without
    this case's ratio ('794.5 TFLOPS measured by mamf-finder on H100 SXM')."""
    text = str(record.get("reference") or "")
    return "; ".join(part.split(" of the ", 1)[-1] for part in text.split("; ")) if text \
        else ""


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_benchmark(record: ResultLine) -> bool:
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
    passed: PassedRows
    references: dict[str, str] = field(default_factory=dict)  # per clause, its first one
    findings: list[str] = field(default_factory=list)  # 'clause: who held the run up'
