"""Software clauses: kernel, Python, torch, CUDA, NCCL and driver versions, per node,
and the same versions on every node."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_cluster.contract.clauses import declared
from pytest_cluster.run.contract_tests import checks

if TYPE_CHECKING:
    from pytest_cluster.contract.model import VersionClause
    from pytest_cluster.evidence.record.check import Evidence
    from pytest_cluster.launchers.result import ProbeResult
    from pytest_cluster.measure.cluster import Cluster


@checks("host.software")
def test_software_version(node: str, software: VersionClause, host_result: ProbeResult,
                          evidence: Evidence) -> None:
    """Each version the contract names (`software`: its clauses, `[torch-node01]`)."""
    payload = evidence.require(host_result, software)
    found = payload["versions"].get(software.name)
    python = payload.get("python_executable")
    evidence.check_version(software, found, result=host_result,
                           source=payload["sources"].get(software.name),
                           asked=f"{python} on {node}" if found is None and python else None)


@checks("host.same_software")
def test_software_same_on_all_nodes(cluster: Cluster, package: str, evidence: Evidence) -> None:
    """Every node reports the same version (host.same_software, on by default). A node
    that did not answer leaves the clause unproven: never a pass on the others alone."""
    results = cluster.host_all()
    versions: dict[str, list[str]] = {}
    unreachable: dict[str, str] = {}
    for name, result in results.items():
        evidence.saw(result)
        if not result.ok:
            unreachable[name] = result.describe()
            continue
        found = result.payload()["versions"].get(package) or "not installed"
        versions.setdefault(found, []).append(name)
    evidence.check_same(declared("host.same_software").name(member=package), 0, package,
                        versions, unreachable)
