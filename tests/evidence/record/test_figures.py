"""The bar charts' figures (evidence/record/figures.py): each node's worst number of a
storage clause or of interconnect.latency, the requirement once; nothing else kept."""

from __future__ import annotations

from typing import Any

from pytest_cluster.evidence.record.figures import NodeFigures
from pytest_cluster.evidence.sinks.results import ResultLine


def fig(node: str, clause: str, measured: Any, outcome: str = "passed",
        comparison: str = ">=", required: float = 2.0, unit: str = "GB/s") -> ResultLine:
    record: dict[str, Any] = {
        "clause": clause, "spec_key": clause, "node": node, "measured": measured,
        "required": required, "comparison": comparison, "unit": unit,
        "requirement": f"{comparison} {required:g} {unit}", "outcome": outcome,
        "filesystem": clause[len("storage["):clause.index("]")]
        if clause.startswith("storage[") else None}
    return record  # type: ignore[return-value]


def test_each_node_s_worst_figure_of_a_charted_clause() -> None:
    """n1 wrote 3 then 1.5 GB/s (failed): the failed one is its bar; a latency's worst is
    its highest; a text figure, a GPU clause and a skipped case are not kept."""
    found = NodeFigures()
    for record in (fig("n1", "storage[/scratch].write", 3.0),
                   fig("n1", "storage[/scratch].write", 1.5, "failed"),
                   fig("n1", "storage[/scratch].write", 2.5),
                   fig("n2", "storage[/scratch].write", 2.2),
                   fig("n1", "interconnect.latency", 3.0, comparison="<=", unit="us"),
                   fig("n1", "interconnect.latency", 4.0, comparison="<=", unit="us"),
                   fig("n1", "storage[/scratch].shared", "seen on 2 of 2 nodes"),
                   fig("n1", "gpus.h2d", 50.0),
                   fig("n3", "storage[/scratch].write", None, "skipped")):
        found.add(record)
    assert set(found.clauses) == {"storage[/scratch].write", "interconnect.latency"}
    write = found.clauses["storage[/scratch].write"]
    assert (write.filesystem, write.required, write.requirement, write.unit) == (
        "/scratch", 2.0, ">= 2 GB/s", "GB/s")
    assert {n: (b.measured, b.passed) for n, b in write.bars.items()} == {
        "n1": (1.5, False), "n2": (2.2, True)}
    assert found.clauses["interconnect.latency"].bars["n1"].measured == 4.0
