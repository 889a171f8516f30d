"""What the report's per-node bar charts show of a run's result lines, gathered one line at
a time (the ledger holds this, not the lines): for each charted clause (every storage
clause of a filesystem that measures a number: write, read, metadata, import latency,
the checkpoint's and the data loader's rates; and interconnect.latency, each node's
median to its peers), each node's measured number and whether it passed, and the
clause's requirement once. One number a node a clause: bounded by the spec. Data only:
report/bars.py draws it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_cluster.evidence.sinks.results import ResultLine, clause_of, outcome
from pytest_cluster.units import finite

#: The clauses charted beside storage's: each node's median latency to its peers.
LATENCY = "interconnect.latency"


def charted(clause: str) -> bool:
    """Whether a clause's figures are charted: a filesystem's (storage[/path]...) or the
    peers' latency."""
    return clause.startswith("storage[") or clause == LATENCY


@dataclass(frozen=True)
class Bar:
    node: str  # 'all' for a figure of every node at once (a checkpoint's aggregate)
    measured: float
    passed: bool


@dataclass
class ClauseFigures:
    """A clause's requirement and each node's figure, in the order the lines came."""

    clause: str
    requirement: str  # '>= 2 GB/s'
    required: float
    comparison: str  # '>=', '<=', ...
    unit: str
    filesystem: str  # '' for a clause of no filesystem
    bars: dict[str, Bar] = field(default_factory=dict)  # node -> its (worst) figure


def _worse(new: float, old: float, comparison: str) -> bool:
    return new > old if comparison in ("<=", "<") else new < old


class NodeFigures:
    """The charted clauses' figures, gathered as their lines are written."""

    def __init__(self) -> None:
        self.clauses: dict[str, ClauseFigures] = {}

    def add(self, record: ResultLine) -> None:
        clause = clause_of(record)
        if not charted(clause) or outcome(record) not in ("passed", "failed"):
            return
        measured, required = finite(record.get("measured")), finite(record.get("required"))
        if measured is None or required is None:
            return
        found = self.clauses.get(clause)
        if found is None:
            found = self.clauses[clause] = ClauseFigures(
                clause, str(record.get("requirement") or ""), required,
                str(record.get("comparison") or ">="), str(record.get("unit") or ""),
                str(record.get("filesystem") or ""))
        node = str(record.get("node"))
        bar = Bar(node, measured, outcome(record) == "passed")
        old = found.bars.get(node)
        if old is None or (old.passed and not bar.passed) or (
                old.passed == bar.passed and _worse(measured, old.measured, found.comparison)):
            found.bars[node] = bar  # a node's worst case of the clause, as the matrix's
