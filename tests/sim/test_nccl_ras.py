"""The sim's NCCL RAS (sim/nccl_ras.py) and its `nccl_dead` fault: the status written as
NCCL's JSON reads back as the dead ranks; on the shipped faulty example, every collective
job over gpu-003 hangs, RAS names its rank on GPU 1 DEAD, and the cases that fail are
gpu-003's or name it; no other node is blamed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_cluster.probes._lib.nccl_ras import parse_json
from pytest_cluster.sim.nccl_ras import hang_report, status_json
from tests.oracle import check

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sim-h100-fleet-faulty.yaml"


def test_the_status_reads_back_as_the_dead_ranks() -> None:
    report = parse_json(status_json(("a", "b"), 2, {1, 2}, "all_gather", 5))
    assert [(r["rank"], r["host"], r["gpu"]) for r in report["dead"]] == [
        (1, "a", "1"), (2, "b", "0")]
    assert report["missing"] == [] and report["mismatched"] == []
    assert hang_report("gloo", ("a",), 1, {0}, "all_reduce")["available"] is False


def test_the_faulty_examples_dead_rank_fails_gpu_003_only(pytester: pytest.Pytester) -> None:
    shutil.copy(EXAMPLE, pytester.path / "faulty.yaml")
    metrics = pytester.path / "metrics.prom"
    result = pytester.runpytest("--cluster=faulty.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", f"--cluster-metrics={metrics}",
                                "-k", "interconnect")
    run = (pytester.path / "reports" / "latest").resolve()
    assert check(run, result.stdout.str(), metrics) == []
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    ras = [r for r in lines if "NCCL RAS" in str(r.get("message", ""))]
    assert ras and all(r["outcome"] == "failed" for r in ras)
    assert all("gpu-003, GPU 1) DEAD" in r["message"] for r in ras)
    assert {r["node"] for r in ras} == {"gpu-003", "6 nodes (gpu-001..gpu-006)"}
    across = next(r for r in ras if r["node"] != "gpu-003")
    assert across["culprits"] == "gpu-003" and "rank 17 (gpu-003, GPU 1) DEAD" in \
        across["message"]
    failed = [r for r in lines if r.get("outcome") == "failed"]
    assert {r["node"] for r in failed} <= {"gpu-003", across["node"]}
    verdicts = {entry["node"]: entry["verdict"]
                for entry in json.loads((run / "verdict.json").read_text())["nodes"]}
    assert verdicts.pop("gpu-003") == "REJECTED"
    assert set(verdicts.values()) <= {"ACCEPTED"}, verdicts
