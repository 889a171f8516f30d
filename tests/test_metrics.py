"""--cluster-metrics: the run in Prometheus' text format, read back with prometheus_client's
own parser: each node's verdict, each check's figures in base units with its margin, the
run's status and the cluster's verdict; written atomically; a soak rewrites it after each
round with availability and the credit so far."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pytest_cluster.evidence.metrics import base_unit

SPEC = """\
cluster: {name: m, nodes: "n[1-3]", launcher: sim}
host: {cpu_cores: 96, memory: 1 TiB}
interconnect:
  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}
  payloads: [1 GiB]
  busbw: ">= 40 GB/s"
  node_network: false
sim:
  faults:
    - {node: n2, down: true}
"""


def samples(path: Path) -> dict[str, list[tuple[dict[str, str], float]]]:
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(path.read_text(encoding="utf-8")):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return found


def test_the_metrics_say_each_nodes_verdict_and_each_checks_figures(
        pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC)
    out = pytester.path / "textfile" / "pytest_cluster.prom"
    out.parent.mkdir()
    pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                       f"--cluster-metrics={out}")
    assert [p.name for p in out.parent.iterdir()] == ["pytest_cluster.prom"]  # no temp left
    found = samples(out)
    (info, one), = found["pytest_cluster_run_info"]
    assert one == 1 and info["verdict"] == "REJECTED" and info["status"] == "complete"
    assert info["simulated"] == "true" and info["run_id"].endswith("-m")
    verdicts = {labels["node"]: labels["verdict"]
                for labels, _ in found["pytest_cluster_node_verdict"]}
    assert verdicts == {"n1": "ACCEPTED", "n2": "UNREACHABLE", "n3": "ACCEPTED"}
    assert {labels["node"]: value for labels, value in found["pytest_cluster_node_accepted"]} \
        == {"n1": 1.0, "n2": 0.0, "n3": 1.0}
    memory = {labels["node"]: (labels["unit"], value)
              for labels, value in found["pytest_cluster_required"]
              if labels["clause"] == "host.memory"}
    assert memory["n1"] == ("bytes", 2.0**40)  # base units: 1 TiB in bytes
    busbw = [(labels, value) for labels, value in found["pytest_cluster_measured"]
             if labels["clause"] == "interconnect.busbw[inter_node]"]
    assert busbw == [] or busbw[0][0]["unit"] == "bytes_per_second"
    margins = {labels["node"]: value for labels, value in found["pytest_cluster_margin_ratio"]
               if labels["clause"] == "host.cpu_cores"}
    assert margins["n1"] == pytest.approx(16 / 96)  # the sim's 112 cores against >= 96
    checks = {labels["outcome"]: value for labels, value in found["pytest_cluster_run_checks"]}
    assert checks["failed"] >= 2 and checks["passed"] >= 2


def test_a_soak_rewrites_the_metrics_after_each_round(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(
        SPEC.replace("interconnect:", "sla: {uptime: 99%, price_per_node_hour: 1000000, "
                     "down_after: 0 s, credits: [{below: 99%, credit: 10%}]}\n"
                     "interconnect:"))
    out = pytester.path / "soak.prom"
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", "--cluster-soak-rounds=2",
                                "-m", "sanity", f"--cluster-metrics={out}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    found = samples(out)
    assert found["pytest_cluster_soak_rounds"][0][1] == 2
    availability = {labels["node"]: value
                    for labels, value in found["pytest_cluster_soak_availability_ratio"]}
    assert availability["n1"] == 1.0 and availability["n2"] < 1.0
    (labels, credit), = found["pytest_cluster_soak_credit"]
    assert labels["currency"] == "USD" and credit > 0


def test_every_unit_has_a_base_unit_name() -> None:
    assert [base_unit(u) for u in ("GB/s", "Gb/s", "TiB", "ms", "TFLOPS", "%", "", "C",
                                   "W", "/h", "ops/s")] == [
        "bytes_per_second", "bytes_per_second", "bytes", "seconds", "flops", "ratio",
        "count", "celsius", "watts", "events_per_second", "ops_per_second"]
