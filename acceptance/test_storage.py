"""Storage clauses per node and filesystem: capacity, free space, write, read, metadata
rate (each a field of the storage probe's payload compared with the clause, a test per
declared clause: `test_storage_write[node01-/data]`), `import torch` latency, and that a
shared filesystem is shared.

Files an earlier, killed run left on a tested filesystem (the probes' `leftovers`, see
probes/storage.py) are notes, not failures: each case that reads the probe records them
(`leftovers` in its evidence) and warns with a LeftoverWarning (pytest's warnings
summary), saying whether the sweep removed it and why."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_cluster.run.contract_tests import check_reading, checks, table_tests
from pytest_cluster.spec.clauses import Declaration, declared
from pytest_cluster.units import format_size

if TYPE_CHECKING:
    from pytest_cluster.evidence.check import Evidence
    from pytest_cluster.launchers.result import ProbeResult
    from pytest_cluster.measure.cluster import Cluster
    from pytest_cluster.spec.model import Clause, StorageSpec


class LeftoverWarning(UserWarning):
    """Files an earlier pytest-cluster run left on a tested filesystem."""


def leftover_note(node: str, item: dict[str, Any]) -> str:
    """One leftover as a sentence: what, how big, removed or not, and why."""
    what = f"{item['path']} ({format_size(item['bytes'])})"
    if item["removed"]:
        return f"{node}: removed {what}, left by an earlier pytest-cluster run: {item['why']}"
    return f"{node}: found {what}, left by an earlier pytest-cluster run: {item['why']}"


def _leftovers(evidence: Evidence, node: str, payload: dict[str, Any]) -> None:
    """Record and warn about what the probe found of earlier runs (not a failure)."""
    found: list[dict[str, Any]] = payload.get("leftovers") or []
    if payload.get("leftovers_error"):
        warnings.warn(LeftoverWarning(f"{node}: could not look for files earlier runs left: "
                                      f"{payload['leftovers_error']}"), stacklevel=2)
    if not found:
        return
    evidence.record(leftovers=found)
    for item in found:
        warnings.warn(LeftoverWarning(leftover_note(node, item)), stacklevel=2)


def _clause(fs: StorageSpec, key: str) -> Clause:
    clause = fs.clause(key)
    assert clause is not None, f"{declared(f'storage.{key}').name(fs.path)} is not in the contract"
    return clause


def _test(declaration: Declaration) -> Callable[..., None]:
    def test(node: str, filesystem: StorageSpec, storage_result: ProbeResult,
             evidence: Evidence) -> None:
        clause = _clause(filesystem, declaration.key)
        payload = evidence.require(storage_result, clause)
        _leftovers(evidence, node, payload)
        check_reading(evidence, declaration, clause, storage_result, payload)
    return test


globals().update(table_tests("storage", _test))


@checks("storage.import_torch")
def test_import_torch(filesystem: StorageSpec, import_result: ProbeResult,
                      evidence: Evidence) -> None:
    """Cold start when the page cache could be dropped (root), else the warm median."""
    clause = _clause(filesystem, "import_torch")
    data = evidence.require(import_result, clause)
    if "error" in data:
        evidence.cannot_measure(clause, data["error"], raw=data)
    cold = data.get("cold") or {}
    if cold.get("error"):
        evidence.cannot_measure(clause, f"cold run failed: {cold['error']}", raw=data)
    if "seconds" in cold:
        seconds, method = cold["seconds"], f"cold: {cold['method']}"
    else:
        seconds = data["warm"]["median_s"]
        why = cold.get("skipped", "cold run not asked for (cold_cache: false)")
        method = f"warm: median of {len(data['warm']['runs_s'])} runs ({why})"
    evidence.check(clause, seconds, result=import_result, method=method, raw=data)


@checks("storage.shared")
def test_storage_shared(cluster: Cluster, filesystem: StorageSpec, evidence: Evidence) -> None:
    """`shared: true` means it: a file written on one node is seen, byte for byte, on
    every other node."""
    writer, write, reads = cluster.shared_check(filesystem)
    rule = filesystem.rule("shared")
    assert rule is not None, f"{filesystem.path} is not promised shared"
    data = evidence.require(write, rule)
    _leftovers(evidence, writer, data)
    if "error" in data:
        evidence.cannot_measure(rule, data["error"], raw=data, node=writer)
    missing, different, failed = [], [], []
    for node, result in reads.items():
        seen = result.data if result.ok else None
        if seen is None or "error" in seen:
            failed.append(f"{node} ({seen['error'] if seen else result.describe()})")
        elif not seen.get("seen"):
            missing.append(node)
        elif seen.get("sha256") != data["sha256"]:
            different.append(node)
    problems = []
    if missing:
        problems.append(f"not seen on {', '.join(missing)}")
    if different:
        problems.append(f"different content on {', '.join(different)}")
    if failed:
        problems.append(f"could not be read on {', '.join(failed)}")
    seen_on = len(reads) - len(missing) - len(different) - len(failed)
    evidence.check_rule(
        rule, not problems, f"seen on {seen_on} of {len(reads)} nodes", node="all",
        result=write, problem=f"a file written on {writer} is " + "; ".join(problems),
        method=f"1 MiB of random data written and fsync'ed on {writer}, SHA-256 compared on "
               "every node", raw={"writer": writer, "file": data.get("file"),
                                  "missing": missing, "different": different,
                                  "failed": failed})
