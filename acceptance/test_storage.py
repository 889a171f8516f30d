"""Storage clauses per node and filesystem: capacity, free space, write, read, metadata
rate and `import torch` latency.

Files an earlier, killed run left on a tested filesystem (the probes' `leftovers`, see
probes/storage.py) are notes, not failures: each case that reads the probe records them
(`leftovers` in its evidence) and warns with a LeftoverWarning (pytest's warnings
summary), saying whether the sweep removed it and why."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from pytest_cluster.cluster import Cluster
from pytest_cluster.evidence import Evidence
from pytest_cluster.launchers.base import ProbeResult
from pytest_cluster.spec.model import Clause, Rule, StorageSpec
from pytest_cluster.units import format_size


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


def _clause(fs: StorageSpec, name: str) -> Clause:
    clause = fs.clause(name)
    assert clause is not None, f"storage[{fs.path}].{name} is not in the contract"
    return clause


def _part(evidence: Evidence, result: ProbeResult, node: str, fs: StorageSpec,
          clause: Clause, part: str) -> dict[str, Any]:
    payload = evidence.require(result, clause, fs.path)
    _leftovers(evidence, node, payload)
    if "error" in payload:
        evidence.cannot_measure(node, clause, payload["error"], fs.path, raw=payload)
    section: dict[str, Any] = payload.get(part) or {}
    if "error" in section or not section:
        reason = section.get("error", f"the probe returned no {part} result")
        evidence.cannot_measure(node, clause, reason, fs.path, raw=section)
    return section


def _check(evidence: Evidence, result: ProbeResult, node: str, fs: StorageSpec, name: str,
           part: str, value: str, method: str | None = None) -> None:
    """Compare `part[value]` of the storage probe with clause `name` of `fs`."""
    clause = _clause(fs, name)
    section = _part(evidence, result, node, fs, clause, part)
    evidence.check(clause, section[value], node=node, filesystem=fs.path, result=result,
                   method=method or section.get("method"), raw=section)


@pytest.mark.clause("storage.capacity")
def test_storage_capacity(node: str, filesystem: StorageSpec, storage_result: ProbeResult,
                          evidence: Evidence) -> None:
    _check(evidence, storage_result, node, filesystem, "capacity", "capacity", "total_bytes",
           "statvfs total size")


@pytest.mark.clause("storage.free")
def test_storage_free(node: str, filesystem: StorageSpec, storage_result: ProbeResult,
                      evidence: Evidence) -> None:
    _check(evidence, storage_result, node, filesystem, "free", "capacity", "free_bytes",
           "statvfs f_bavail (space a non-root user can still write)")


@pytest.mark.clause("storage.write")
def test_storage_write(node: str, filesystem: StorageSpec, storage_result: ProbeResult,
                       evidence: Evidence) -> None:
    _check(evidence, storage_result, node, filesystem, "write", "write", "bytes_per_s")


@pytest.mark.clause("storage.read")
def test_storage_read(node: str, filesystem: StorageSpec, storage_result: ProbeResult,
                      evidence: Evidence) -> None:
    _check(evidence, storage_result, node, filesystem, "read", "read", "bytes_per_s")


@pytest.mark.clause("storage.metadata")
def test_storage_metadata(node: str, filesystem: StorageSpec, storage_result: ProbeResult,
                          evidence: Evidence) -> None:
    _check(evidence, storage_result, node, filesystem, "metadata", "metadata", "ops_per_s")


@pytest.mark.clause("storage.import_torch")
def test_import_torch(node: str, filesystem: StorageSpec, import_result: ProbeResult,
                      evidence: Evidence) -> None:
    """Cold start when the page cache could be dropped (root), else the warm median."""
    clause = _clause(filesystem, "import_torch")
    data = evidence.require(import_result, clause, filesystem.path)
    if "error" in data:
        evidence.cannot_measure(node, clause, data["error"], filesystem.path, raw=data)
    cold = data.get("cold") or {}
    if cold.get("error"):
        evidence.cannot_measure(node, clause, f"cold run failed: {cold['error']}",
                                filesystem.path, raw=data)
    if "seconds" in cold:
        seconds, method = cold["seconds"], f"cold: {cold['method']}"
    else:
        seconds = data["warm"]["median_s"]
        why = cold.get("skipped", "cold run not asked for (cold_cache: false)")
        method = f"warm: median of {len(data['warm']['runs_s'])} runs ({why})"
    evidence.check(clause, seconds, node=node, filesystem=filesystem.path,
                   result=import_result, method=method, raw=data)


@pytest.mark.clause("storage.shared")
def test_storage_shared(cluster: Cluster, filesystem: StorageSpec, evidence: Evidence) -> None:
    """`shared: true` means it: a file written on one node is seen, byte for byte, on
    every other node."""
    writer, write, reads = cluster.shared_check(filesystem)
    rule = Rule(f"storage[{filesystem.path}].shared", filesystem.shared_line,
                "a file written on one node is seen with the same content on every node")
    data = evidence.require(write, rule, filesystem.path)
    _leftovers(evidence, writer, data)
    if "error" in data:
        evidence.cannot_measure(writer, rule, data["error"], filesystem.path, raw=data)
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
