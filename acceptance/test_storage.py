"""Storage clauses per node and filesystem: capacity, free space, write, read, metadata
rate and `import torch` latency."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_cluster.evidence import Evidence
from pytest_cluster.launchers.base import ProbeResult
from pytest_cluster.spec.model import Clause, StorageSpec


def _clause(fs: StorageSpec, name: str) -> Clause:
    clause = fs.clause(name)
    assert clause is not None, f"storage[{fs.path}].{name} is not in the contract"
    return clause


def _part(evidence: Evidence, result: ProbeResult, node: str, fs: StorageSpec,
          clause: Clause, part: str) -> dict[str, Any]:
    payload = evidence.require(result, clause, fs.path)
    if "error" in payload:
        evidence.cannot_measure(node, clause, payload["error"], fs.path, raw=payload)
    section: dict[str, Any] = payload.get(part) or {}
    if "error" in section or not section:
        reason = section.get("error", f"the probe returned no {part} result")
        evidence.cannot_measure(node, clause, reason, fs.path, raw=section)
    return section


@pytest.mark.clause("storage.capacity")
def test_storage_capacity(node: str, filesystem: StorageSpec, storage_result: ProbeResult,
                          evidence: Evidence) -> None:
    clause = _clause(filesystem, "capacity")
    cap = _part(evidence, storage_result, node, filesystem, clause, "capacity")
    evidence.check(clause, cap["total_bytes"], node=node, filesystem=filesystem.path,
                   result=storage_result, method="statvfs total size", raw=cap)


@pytest.mark.clause("storage.free")
def test_storage_free(node: str, filesystem: StorageSpec, storage_result: ProbeResult,
                      evidence: Evidence) -> None:
    clause = _clause(filesystem, "free")
    cap = _part(evidence, storage_result, node, filesystem, clause, "capacity")
    evidence.check(clause, cap["free_bytes"], node=node, filesystem=filesystem.path,
                   result=storage_result, method=cap.get("free_source"), raw=cap)


@pytest.mark.clause("storage.write")
def test_storage_write(node: str, filesystem: StorageSpec, storage_result: ProbeResult,
                       evidence: Evidence) -> None:
    clause = _clause(filesystem, "write")
    write = _part(evidence, storage_result, node, filesystem, clause, "write")
    evidence.check(clause, write["bytes_per_s"], node=node, filesystem=filesystem.path,
                   result=storage_result, method=write.get("method"), raw=write)


@pytest.mark.clause("storage.read")
def test_storage_read(node: str, filesystem: StorageSpec, storage_result: ProbeResult,
                      evidence: Evidence) -> None:
    clause = _clause(filesystem, "read")
    read = _part(evidence, storage_result, node, filesystem, clause, "read")
    evidence.check(clause, read["bytes_per_s"], node=node, filesystem=filesystem.path,
                   result=storage_result, method=read.get("method"), raw=read)


@pytest.mark.clause("storage.metadata")
def test_storage_metadata(node: str, filesystem: StorageSpec, storage_result: ProbeResult,
                          evidence: Evidence) -> None:
    clause = _clause(filesystem, "metadata")
    meta = _part(evidence, storage_result, node, filesystem, clause, "metadata")
    evidence.check(clause, meta["ops_per_s"], node=node, filesystem=filesystem.path,
                   result=storage_result, method=meta.get("method"), raw=meta)


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
