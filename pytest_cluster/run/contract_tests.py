"""The acceptance suite's tests, from the clause declarations (contract/clauses.py).

- `checks('gpus.memory')` marks a test written by hand as the check of a declared clause
  (an undeclared name fails at import).
- `table_tests(section, make)` gives a test for every clause of `section` that compares one
  field of a probe's payload (its declaration `Reads` it), named as users know it
  (`test_cpu_cores`, `test_storage_write`); `check_reading` is what such a test does, and
  `node_reading` the whole test of a clause read per node from a probe run without
  arguments: `globals().update(table_tests("host", node_reading))` is a section's suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

import pytest

from pytest_cluster.contract.clauses import clauses, declared
from pytest_cluster.contract.model import Promises
from pytest_cluster.evidence.untrusted_json import found
from pytest_cluster.probes import ProbeCall
from pytest_cluster.units import finite

if TYPE_CHECKING:
    from pytest_cluster.contract.declaration import Declaration
    from pytest_cluster.contract.model import Clause, Spec
    from pytest_cluster.evidence.record.check import Evidence
    from pytest_cluster.launchers.result import ProbeResult
    from pytest_cluster.measure.cluster import Cluster


def checks(name: str) -> pytest.MarkDecorator:
    """The `clause` marker of a declared clause (KeyError for an undeclared one)."""
    return pytest.mark.clause(declared(name).id)


def table_tests(section: str,
                make: Callable[[Declaration], Callable[..., None]]) -> Iterator[
                    tuple[str, Callable[..., None]]]:
    """(name, test) for each clause of `section` whose test is a probe field compared with
    it, in declared order; `make` writes the test of one declaration."""
    for declaration in clauses(section):
        if declaration.table:
            test = make(declaration)
            test.__name__ = test.__qualname__ = declaration.test
            yield declaration.test, checks(declaration.id)(test)


def reading(evidence: Evidence, declaration: Declaration, clause: Clause,
            payload: Mapping[str, object]) -> tuple[float, Mapping[str, object]]:
    """The declared field of a probe's payload (a node's answer: untrusted) and the part
    it is in; fails the test, saying why, when the probe could not measure it."""
    reads = declaration.reads
    assert reads is not None, declaration.id
    if "error" in payload:
        evidence.cannot_measure(clause, str(payload["error"]), raw=payload)
    part = payload.get(reads.part) or {}
    if not isinstance(part, dict):  # the node's answer, named by its part
        evidence.cannot_measure(clause, f"the {reads.probe} probe's {reads.part} is "
                                f"{found(part)}, not a section of figures", kind="bad_output")
    if "error" in part or not part:
        evidence.cannot_measure(clause, str(part.get("error", f"the probe returned no "
                                                             f"{reads.part} result")), raw=part)
    value = part.get(reads.field)
    if value is None:
        evidence.cannot_measure(clause, f"the {reads.probe} probe found no {reads.part} "
                                f"{reads.field}", raw=part)
    # the node's answer, named by its field (finite: a number, neither a bool nor NaN)
    if finite(value) is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        evidence.cannot_measure(clause, f"the {reads.probe} probe's {reads.part}."
                                f"{reads.field} is not a finite number: "
                                f"{found(value)}", raw=part, kind="bad_output")
    return value, part


def check_reading(evidence: Evidence, declaration: Declaration, clause: Clause,
                  result: ProbeResult, payload: Mapping[str, object]) -> None:
    """Compare the declared field of `payload` (from `result`) with `clause`; how it was
    measured is what the probe says, else what the declaration says."""
    value, part = reading(evidence, declaration, clause, payload)
    reads = declaration.reads
    assert reads is not None
    said = part.get(reads.method_field)
    evidence.check(clause, value, result=result, raw=part,
                   method=said if isinstance(said, str) and said else reads.method)


def node_reading(declaration: Declaration) -> Callable[..., None]:
    """The test of a clause whose declaration reads a field of a probe run on each node
    without arguments (`Reads("host", "cpu", "cores")`): the probe's result on the node
    compared with the section's clause."""
    reads = declaration.reads
    assert reads is not None and reads.table, declaration.id
    call = ProbeCall(reads.probe)

    def test(cluster_spec: Spec, cluster: Cluster, node: str, evidence: Evidence) -> None:
        record = cluster_spec.section(declaration.section)
        assert isinstance(record, Promises), declaration.section
        clause = record.clause(declaration.key)
        assert clause is not None, f"{declaration.id} is not in the contract"
        result = cluster.probe(call, node)
        check_reading(evidence, declaration, clause, result, evidence.require(result, clause))
    return test
