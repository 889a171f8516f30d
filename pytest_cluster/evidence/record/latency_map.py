"""What the report's latency heat map shows of a run's result lines, gathered one line at a
time (the ledger holds this, not the lines): from the `interconnect.latency` and
`interconnect.colocation` cases, the one-way latency matrix at `latency_size` (each case's
raw keeps the same run's, up to 32 nodes: `matrix_us`) and each node's median to its
peers (`median_us`); the farthest node is the one with the highest median, as colocation
judges it. Data only: report/heatmap.py draws it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_cluster.errors import UnitError
from pytest_cluster.hostlist import expand_hostlist
from pytest_cluster.units import finite

#: Up to this many nodes, each latency case's raw keeps the whole matrix (`matrix_us`).
MATRIX_UP_TO = 32
#: The clauses whose cases carry the ping-pong's figures.
LATENCY_CLAUSES = frozenset({"interconnect.latency", "interconnect.colocation"})


@dataclass(frozen=True)
class Farthest:
    """The node with the highest median one-way latency to its peers (microseconds)."""

    node: str
    median_us: float
    others_median_us: float | None
    ratio: float | None


def farthest_of(medians: Mapping[str, float]) -> str | None:
    """The node with the highest median; of equal ones, the first by name."""
    return min(medians, key=lambda node: (-medians[node], node)) if medians else None


def _matrix(found: object) -> tuple[tuple[str, ...], list[list[float | None]], int] | None:
    """`matrix_us` as (nodes, N x N microseconds or None, size), or None when it is not
    that shape."""
    if not isinstance(found, dict):
        return None
    nodes, rows, size = found.get("nodes"), found.get("one_way"), found.get("size")
    if not (isinstance(nodes, list) and isinstance(rows, list) and len(rows) == len(nodes)
            and all(isinstance(row, list) and len(row) == len(nodes) for row in rows)
            and isinstance(size, int)):
        return None
    return (tuple(map(str, nodes)), [[finite(v) for v in row] for row in rows], size)


class LatencyMap:
    """The latency cases' figures, gathered as their lines are written."""

    def __init__(self) -> None:
        self.size: int | None = None  # latency_size, bytes
        self.run_file: str | None = None  # the run's document, in the run directory
        self.matrix_nodes: tuple[str, ...] = ()
        self.one_way: list[list[float | None]] | None = None  # microseconds, or None
        self._hostlist = ""  # the run's nodes, as its cases name them
        self._medians: dict[str, tuple[float, float | None, float | None]] = {}

    def add(self, record: Mapping[str, Any]) -> None:
        if record.get("spec_key") not in LATENCY_CLAUSES:
            return
        raw = record.get("raw")
        if not isinstance(raw, dict):
            return
        run = raw.get("run")
        if isinstance(run, dict) and not self._hostlist:
            self._hostlist = str(run.get("nodes") or "")
            self.run_file = str(run["file"]) if run.get("file") else None
        if self.size is None and isinstance(raw.get("size"), int):
            self.size = int(raw["size"])
        if self.one_way is None and (matrix := _matrix(raw.get("matrix_us"))) is not None:
            self.matrix_nodes, self.one_way, size = matrix
            self.size = self.size if self.size is not None else size
        median = finite(raw.get("median_us"))
        if median is not None and record.get("node") is not None:
            self._medians[str(record["node"])] = (
                median, finite(raw.get("others_median_us")), finite(raw.get("ratio")))

    @property
    def medians(self) -> dict[str, float]:
        """Each node's median one-way latency to its peers (us), as its cases say."""
        return {node: figures[0] for node, figures in self._medians.items()}

    @property
    def node_count(self) -> int:
        """How many nodes the ping-pong ran on."""
        if self.matrix_nodes:
            return len(self.matrix_nodes)
        try:
            return len(expand_hostlist(self._hostlist)) if self._hostlist else len(
                self._medians)
        except UnitError:
            return len(self._medians)

    def farthest(self) -> Farthest | None:
        """The node with the highest median (farthest_of), None when no node has one."""
        node = farthest_of(self.medians)
        if node is None:
            return None
        median, middle, ratio = self._medians[node]
        return Farthest(node, median, middle, ratio)
