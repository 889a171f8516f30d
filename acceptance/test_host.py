"""Host clauses: CPU cores and threads, memory, per node."""

from __future__ import annotations

import pytest

from pytest_cluster.evidence import Evidence
from pytest_cluster.launchers.base import ProbeResult
from pytest_cluster.spec.model import Clause, Spec


def _clause(spec: Spec, name: str) -> Clause:
    clause = spec.host_clause(name)
    assert clause is not None, f"host.{name} is not in the contract"
    return clause


def _check(spec: Spec, name: str, section: str, value: str, method: str, node: str,
           result: ProbeResult, evidence: Evidence) -> None:
    """Compare `section[value]` of the host probe with host clause `name`."""
    clause = _clause(spec, name)
    data = evidence.require(result, clause)[section]
    if data.get(value) is None:
        evidence.cannot_measure(node, clause, f"the host probe found no {section} {value}",
                                raw=data)
    evidence.check(clause, data[value], node=node, result=result,
                   method=data.get(method, method), raw=data)


@pytest.mark.clause("host.cpu_cores")
def test_cpu_cores(cluster_spec: Spec, node: str, host_result: ProbeResult,
                   evidence: Evidence) -> None:
    """Physical cores, from the CPU topology in /sys."""
    _check(cluster_spec, "cpu_cores", "cpu", "cores", "cores_source", node, host_result,
           evidence)


@pytest.mark.clause("host.cpu_threads")
def test_cpu_threads(cluster_spec: Spec, node: str, host_result: ProbeResult,
                     evidence: Evidence) -> None:
    _check(cluster_spec, "cpu_threads", "cpu", "threads", "logical CPUs (os.cpu_count)", node,
           host_result, evidence)


@pytest.mark.clause("host.memory")
def test_memory(cluster_spec: Spec, node: str, host_result: ProbeResult,
                evidence: Evidence) -> None:
    _check(cluster_spec, "memory", "memory", "total_bytes", "source", node, host_result,
           evidence)
