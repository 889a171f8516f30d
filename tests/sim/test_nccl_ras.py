"""The sim's NCCL RAS (sim/nccl_ras.py) and its `nccl_dead` fault: the status written as
NCCL's JSON reads back as the dead ranks; on the shipped faulty example, every collective
job over gpu-003 hangs, RAS names its rank on GPU 1 DEAD, and the cases that fail are
gpu-003's or name it, with the dead rank's fault (PC-NODE-RANK-DEAD), not a slow link's;
no other node is blamed. A hang RAS does not explain (not asked, or a rank dead on every
node of the job) keeps its clause's fault."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.evidence.verdict.faults import KINDS
from pytest_cluster.measure.nccl_ras import RANK_DEAD
from pytest_cluster.probes._lib.nccl_ras import parse_json
from pytest_cluster.sim.nccl_ras import hang_report, status_json
from tests.oracle import check

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sim-h100-fleet-faulty.yaml"
#: The dead rank's fault (evidence/verdict/faults.py)
DEAD = KINDS[RANK_DEAD].fault.code


def test_the_status_reads_back_as_the_dead_ranks() -> None:
    report = parse_json(status_json(("a", "b"), 2, {1, 2}, "all_gather", 5))
    assert [(r["rank"], r["host"], r["gpu"]) for r in report["dead"]] == [
        (1, "a", "1"), (2, "b", "0")]
    assert report["missing"] == [] and report["mismatched"] == []
    assert hang_report("gloo", ("a",), 1, {0}, "all_reduce")["available"] is False


def checked_run(pytester: pytest.Pytester, spec: str, selected: str,
                ) -> tuple[pytest.RunResult, Path, list[dict[str, Any]]]:
    """The run of `spec`'s cases `-k selected`, its evidence directory and its
    results.jsonl lines; every view of it agreeing (the consistency oracle)."""
    (pytester.path / "t.yaml").write_text(spec)
    metrics = pytester.path / "metrics.prom"
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", f"--cluster-metrics={metrics}",
                                "-k", selected)
    run = (pytester.path / "reports" / "latest").resolve()
    assert check(run, result.stdout.str(), metrics) == []
    return result, run, [json.loads(line)
                         for line in (run / "results.jsonl").read_text().splitlines()]


def test_the_faulty_examples_dead_rank_fails_gpu_003_only(pytester: pytest.Pytester) -> None:
    result, run, lines = checked_run(pytester, EXAMPLE.read_text(), "interconnect")
    ras = [r for r in lines if "NCCL RAS" in str(r.get("message", ""))]
    assert ras and all(r["outcome"] == "failed" for r in ras)
    assert all("gpu-003, GPU 1) DEAD" in r["message"] for r in ras)
    assert {r["node"] for r in ras} == {"gpu-003", "6 nodes (gpu-001..gpu-006)"}
    across = next(r for r in ras if r["node"] != "gpu-003")
    assert across["culprits"] == "gpu-003" and "rank 17 (gpu-003, GPU 1) DEAD" in \
        across["message"]
    failed = [r for r in lines if r.get("outcome") == "failed"]
    assert {r["node"] for r in failed} <= {"gpu-003", across["node"]}
    nodes = {entry["node"]: entry
             for entry in json.loads((run / "verdict.json").read_text())["nodes"]}
    assert nodes["gpu-003"]["verdict"] == "REJECTED"
    assert {e["verdict"] for n, e in nodes.items() if n != "gpu-003"} <= {"ACCEPTED"}, nodes
    # a rank died or wedged: its node's fault, not a slow link's, on every case it failed
    # (the slow-node search's too, with RAS's words), and the drain reason leads with it
    search = next(r for r in failed if "test_node_network" in r["nodeid"])
    assert search["node"] == "gpu-003" and "(gpu-003, GPU 1) DEAD" in search["message"]
    assert {(r["error_kind"], r["code"]) for r in failed} == {(RANK_DEAD, DEAD)}
    assert nodes["gpu-003"]["code"] == DEAD and nodes["gpu-003"]["codes"] == [DEAD]
    assert not [e for n, e in nodes.items() if n != "gpu-003" and DEAD in e["codes"]]
    result.stdout.fnmatch_lines([f"*NodeName=gpu-003 State=DRAIN 'Reason={DEAD} "
                                 "pytest-cluster rejected: *"])
    assert "PC-NET-" not in result.stdout.str()
    # where the ranks hung is the sweep's first payload, said as such (not the case's 4 GiB)
    assert all("was still at the sweep's 1 MiB all_reduce (payload 1 of " in r["message"]
               for r in failed if "the job hung" in r["message"]), failed
    # the report's matrix: a dead rank rejected gpu-003, a failure cell ('x'), never '!'
    report = (run / "report.html").read_text(encoding="utf-8")
    [row] = re.findall(r"<tr><th>gpu-003</th>(.*?)</tr>", report)
    dead = re.findall(r'<td class="(m-[a-z]+)" title="[^"]*DEAD[^"]*">([^<]*)</td>', row)
    assert len(dead) == len({r["clause"] for r in failed}) and set(dead) == {("m-fail", "x")}


SPEC = """\
cluster: {{name: t, nodes: "n[1-3]", launcher: sim}}
gpus: {{count: 8}}
interconnect:
  intra_node: {{kind: nvlink, rate: 450 GB/s}}
  inter_node: {{kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}}
  payloads: [4 GiB]
  node_counts: [{count}]
  busbw: ">= 80%"
  node_network: false
  backend: {backend}
sim:
  gpus_per_node: 8
  faults: [{faults}]
"""


def run_lines(pytester: pytest.Pytester, spec: str) -> list[dict[str, object]]:
    _, _, lines = checked_run(pytester, spec, "collective")
    return [r for r in lines if r.get("type") == "result" and r.get("outcome") == "failed"]


def test_a_hang_ras_did_not_answer_keeps_its_clauses_fault(pytester: pytest.Pytester) -> None:
    """Over gloo, no NCCL and so no RAS: the hang says so, blames the node as before, with
    its clause's fault (nothing singles out a dead rank)."""
    failed = run_lines(pytester, SPEC.format(count=2, backend="gloo", faults=(
        "{node: n2, gpu: 1, nccl_dead: true}")))
    assert failed and all("NCCL RAS not available" in str(r["message"]) for r in failed)
    assert {(r["node"], r["error_kind"], r["code"]) for r in failed} == {
        ("n2", "job_failed", "PC-NET-NVLINK-BUSBW"),
        ("2 nodes (n1..n2)", "job_failed", "PC-NET-BUSBW")}


def test_a_rank_dead_on_every_node_of_a_job_names_none_of_them(
        pytester: pytest.Pytester) -> None:
    """A dead rank on each node of the two-node job: a fault they share, no culprit and
    the clause's fault; each node's own job (inside it) is its dead rank's."""
    failed = run_lines(pytester, SPEC.format(count=2, backend="nccl", faults=(
        "{node: n1, gpu: 1, nccl_dead: true}, {node: n2, gpu: 3, nccl_dead: true}")))
    assert {(r["node"], r["error_kind"], r["code"], r.get("culprits")) for r in failed} == {
        ("n1", RANK_DEAD, DEAD, None), ("n2", RANK_DEAD, DEAD, None),
        ("2 nodes (n1..n2)", "job_failed", "PC-NET-BUSBW", None)}
