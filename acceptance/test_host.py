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


@pytest.mark.clause("host.cpu_cores")
def test_cpu_cores(cluster_spec: Spec, node: str, host_result: ProbeResult,
                   evidence: Evidence) -> None:
    clause = _clause(cluster_spec, "cpu_cores")
    cpu = evidence.require(host_result, clause)["cpu"]
    if cpu.get("cores") is None:
        evidence.cannot_measure(node, clause, "no CPU topology in /sys on this node", raw=cpu)
    evidence.check(clause, cpu["cores"], node=node, result=host_result,
                   method=f"physical cores ({cpu.get('cores_source')})", raw=cpu)


@pytest.mark.clause("host.cpu_threads")
def test_cpu_threads(cluster_spec: Spec, node: str, host_result: ProbeResult,
                     evidence: Evidence) -> None:
    clause = _clause(cluster_spec, "cpu_threads")
    cpu = evidence.require(host_result, clause)["cpu"]
    evidence.check(clause, cpu["threads"], node=node, result=host_result,
                   method="logical CPUs (os.cpu_count)", raw=cpu)


@pytest.mark.clause("host.memory")
def test_memory(cluster_spec: Spec, node: str, host_result: ProbeResult,
                evidence: Evidence) -> None:
    clause = _clause(cluster_spec, "memory")
    memory = evidence.require(host_result, clause)["memory"]
    if memory.get("total_bytes") is None:
        evidence.cannot_measure(node, clause, "no MemTotal in /proc/meminfo", raw=memory)
    evidence.check(clause, memory["total_bytes"], node=node, result=host_result,
                   method=memory.get("source"), raw=memory)
