"""Software clauses: kernel, Python, torch, CUDA, NCCL and driver versions, per node,
and the same versions on every node."""

from __future__ import annotations

import pytest

from pytest_cluster.cluster import Cluster
from pytest_cluster.evidence import Evidence
from pytest_cluster.launchers.base import ProbeResult
from pytest_cluster.spec.model import VersionClause
from pytest_cluster.state import SPEC_KEY

SOFTWARE = ("kernel", "python", "torch", "cuda", "nccl", "driver")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    spec = metafunc.config.stash.get(SPEC_KEY, None)
    if spec is None:
        return
    if "software" in metafunc.fixturenames:
        clauses = spec.host.software
        metafunc.parametrize("software", clauses, ids=[c.name for c in clauses])
    if "package" in metafunc.fixturenames:
        metafunc.parametrize("package", SOFTWARE, ids=list(SOFTWARE))


@pytest.mark.clause("host.software")
def test_software_version(node: str, software: VersionClause, host_result: ProbeResult,
                          evidence: Evidence) -> None:
    payload = evidence.require(host_result, software)
    found = payload["versions"].get(software.name)
    python = payload.get("python_executable")
    evidence.check_version(software, found, node=node, result=host_result,
                           source=payload["sources"].get(software.name),
                           asked=f"{python} on {node}" if found is None and python else None)


@pytest.mark.clause("host.same_software")
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
    evidence.check_same(f"host.same_software.{package}", 0, package, versions, unreachable,
                        _summary(versions) if versions else "",
                        raw={"versions": versions, "unreachable": unreachable})


def _summary(versions: dict[str, list[str]]) -> str:
    """'2.4.0 on all 64 nodes', or each version with its nodes: the odd ones out in full,
    the most common version's nodes counted (the raw evidence keeps every name)."""
    if len(versions) == 1:
        (version, nodes), = versions.items()
        return f"{version} on all {len(nodes)} node(s)" if len(nodes) > 4 else (
            f"{version} on {', '.join(nodes)}")
    common = max(versions, key=lambda v: len(versions[v]))
    parts = []
    for version, nodes in versions.items():
        shown = ", ".join(nodes)
        if version == common and len(nodes) > 4:
            shown = f"{len(nodes)} nodes ({', '.join(nodes[:2])}, ...)"
        parts.append(f"{version} on {shown}")
    return "; ".join(parts)
