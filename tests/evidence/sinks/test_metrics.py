"""--cluster-metrics: the run in Prometheus' text format, read back with prometheus_client's
own parser and checked by promtool: one sample per case that can differ (payloads,
collectives, node counts, GPUs), the worst case per clause and node, every clause's
check_passed (rules included), each node's verdict, the run's status and the cluster's
verdict; written atomically; a bad FILE is a usage error before any test runs; a soak
rewrites it after each round with availability and the credit so far."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pytest_cluster.evidence.blame import NOT_BLAMING, UNDECIDED
from pytest_cluster.evidence.sinks.metrics import CASE_LABELS, CLAUSE_LABELS, JUDGED, base_unit
from pytest_cluster.evidence.sinks.results import ResultLine, outcome
from pytest_cluster.units import UNITS

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

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

Samples = dict[str, list[tuple[dict[str, str], float]]]


def samples(path: Path) -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families(path.read_text(encoding="utf-8")):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return found


def results(run: Path) -> list[ResultLine]:
    lines = (run / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r.get("type") == "result"]


def run_with_metrics(pytester: pytest.Pytester, spec: str, *args: str) -> tuple[
        Samples, list[ResultLine], pytest.RunResult]:
    (pytester.path / "trial.yaml").write_text(spec)
    out = pytester.path / "textfile" / "pytest_cluster.prom"
    out.parent.mkdir()
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", f"--cluster-metrics={out}",
                                *args)
    assert [p.name for p in out.parent.iterdir()] == ["pytest_cluster.prom"]  # no temp left
    return samples(out), results(pytester.path / "reports" / "latest"), result


def test_the_metrics_say_each_nodes_verdict_and_each_checks_figures(
        pytester: pytest.Pytester) -> None:
    found, _, _ = run_with_metrics(pytester, SPEC)
    (info, one), = found["pytest_cluster_run_info"]
    assert one == 1 and info["verdict"] == "REJECTED" and info["status"] == "complete"
    assert info["outcome"] == "FAIL" and info["level"] == "acceptance"
    assert info["simulated"] == "true" and info["run_id"].endswith("-m")
    verdicts = {labels["node"]: (labels["verdict"], labels["outcome"])
                for labels, _ in found["pytest_cluster_node_verdict"]}
    assert verdicts == {"n1": ("ACCEPTED", "PASS"), "n2": ("UNREACHABLE", "FAIL"),
                        "n3": ("ACCEPTED", "PASS")}
    assert {labels["node"]: value for labels, value in found["pytest_cluster_node_accepted"]} \
        == {"n1": 1.0, "n2": 0.0, "n3": 1.0}
    memory = {labels["node"]: value
              for labels, value in found["pytest_cluster_check_required_bytes"]
              if labels["clause"] == "host.memory"}
    assert memory["n1"] == 2.0**40  # base units: 1 TiB in bytes
    margins = {labels["node"]: value for labels, value in found["pytest_cluster_check_margin_ratio"]
               if labels["clause"] == "host.cpu_cores"}
    assert margins["n1"] == pytest.approx(16 / 96)  # the sim's 112 cores against >= 96
    assert {labels["node"]: value for labels, value in found["pytest_cluster_check_measured"]
            if labels["clause"] == "host.cpu_cores"}["n1"] == 112  # a count: no unit
    checks = {labels["outcome"]: value for labels, value in found["pytest_cluster_run_checks"]}
    assert checks["failed"] >= 2 and checks["passed"] >= 2


def test_each_payload_is_its_own_sample_and_the_clause_is_its_worst(
        pytester: pytest.Pytester) -> None:
    """Two nodes, 1 GiB and 16 GiB: the 1 GiB case fails, the 16 GiB one passes. Each is a
    sample of its own (payload_bytes), and the clause's sample on those nodes is the failed
    one - never the last case written."""
    spec = ("cluster: {name: m, nodes: 'n[1-2]', launcher: sim}\n"
            "interconnect:\n"
            "  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}\n"
            "  payloads: [1 GiB, 16 GiB]\n  busbw: '>= 360 GB/s'\n  node_network: false\n"
            "sim: {faults: []}\n")
    found, lines, result = run_with_metrics(pytester, spec)
    inter = [r for r in lines if r["clause"] == "interconnect.busbw[inter_node]"]
    by_payload = {r["payload"]: outcome(r) for r in inter}
    assert by_payload == {2**30: "failed", 16 * 2**30: "passed"}, by_payload
    passed = {(labels["payload_bytes"], labels["collective"], labels["node_count"]): value
              for labels, value in found["pytest_cluster_check_passed"]
              if labels["clause"] == "interconnect.busbw[inter_node]"}
    assert passed == {(str(2**30), "all_reduce", "2"): 0.0,
                      (str(16 * 2**30), "all_reduce", "2"): 1.0}
    measured = {labels["payload_bytes"]: value
                for labels, value in found["pytest_cluster_check_measured_bytes_per_second"]
                if labels["clause"] == "interconnect.busbw[inter_node]"}
    assert measured == {str(r["payload"]): r["measured_base"] for r in inter}
    (clause, worst), = [(labels, value) for labels, value in found["pytest_cluster_clause_passed"]
                        if labels["clause"] == "interconnect.busbw[inter_node]"]
    assert worst == 0.0 and set(clause) == set(CLAUSE_LABELS)
    (_, lowest), = [item for item in found["pytest_cluster_clause_measured_bytes_per_second"]
                    if item[0]["clause"] == "interconnect.busbw[inter_node]"]
    failed, = [r for r in inter if outcome(r) == "failed"]
    assert lowest == failed["measured_base"]
    assert "measured 347.3 GB/s < required 360 GB/s" in str(failed["message"]) \
        or result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.slow
def test_every_judged_case_has_one_check_passed_sample_rules_included(
        pytester: pytest.Pytester) -> None:
    """The richest example: every case judged is one check_passed sample with its own
    labels, equal to its outcome; rules (GPU model, PCIe, NVLink, XID) included; every
    clause and node has a clause_passed that is 0 exactly where one of its cases failed."""
    found, lines, _ = run_with_metrics(pytester, (EXAMPLES / "trial-sim.yaml").read_text())
    judged = [r for r in lines if outcome(r) in ("passed", "failed", "error")]
    passed = found["pytest_cluster_check_passed"]
    assert len(passed) == len(judged)
    assert {tuple(labels[name] for name in CASE_LABELS) for labels, _ in passed} \
        .__len__() == len(passed)
    assert sorted(v for _, v in passed) == sorted(
        1.0 if outcome(r) == "passed" else 0.0 for r in judged)
    rules = {str(r["clause"]) for r in judged if "measured_base" not in r}
    assert {"gpus.model", "gpus.xid"} <= rules
    assert rules <= {labels["clause"].split("[")[0] for labels, _ in passed}
    expected: dict[tuple[str, str], float] = defaultdict(lambda: 1.0)
    for r in judged:
        key = (str(r.get("spec_key")), str(r.get("node")))
        expected[key] = min(expected[key], 1.0 if outcome(r) == "passed" else 0.0)
    assert {(labels["clause"], labels["node"]): value
            for labels, value in found["pytest_cluster_clause_passed"]} == dict(expected)
    # the slowest node's worst intra-node busbw, not the last case written
    intra = [r for r in judged if r["clause"] == "interconnect.busbw[intra_node]"]
    slowest = min(intra, key=lambda r: float(str(r["measured_base"])))
    worst = {labels["node"]: value
             for labels, value in found["pytest_cluster_clause_measured_bytes_per_second"]
             if labels["clause"] == "interconnect.busbw[intra_node]"}
    assert worst[str(slowest["node"])] == slowest["measured_base"]


def test_a_node_a_cluster_check_names_fails_that_clause_in_the_metrics(
        pytester: pytest.Pytester) -> None:
    found, _, _ = run_with_metrics(
        pytester, (EXAMPLES / "sim-h100-fabric-faulty.yaml").read_text())
    firmware = {labels["node"]: value for labels, value in found["pytest_cluster_clause_passed"]
                if labels["clause"] == "fabric.same_firmware"}
    assert firmware == {"all": 0.0, "sim-gpu-04": 0.0}


#: Every node's links at half rate (no known-good node: the slow-node search cannot
#: decide), n2 with a port down too (its own fault).
SLOWDOWN = """\
cluster: {name: m, nodes: "n[1-4]", launcher: sim}
interconnect:
  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}
  payloads: [4 GiB]
  busbw: ">= 80%"
fabric: {ports: 8}
sim:
  faults:
""" + "".join(f"    - {{node: n{i}, link_factor: 0.5}}\n" for i in range(1, 5)) + """\
    - {node: n2, nic: 3, nic_down: true}
"""


def test_a_case_that_could_not_be_judged_is_told_apart_from_a_failure(
        pytester: pytest.Pytester) -> None:
    """check_judged and clause_judged are 0 where a case failed with an error kind that
    blames no node (the slow-node search undecided: NOT CHECKED), 1 elsewhere; so a
    per-node alert on `clause_passed == 0 and clause_judged == 1` fires on exactly the
    clauses verdict.json fails each node for. Before, check_passed and clause_passed were
    0 for n1's undecided node_network with nothing to tell it from n2's port down."""
    found, lines, _ = run_with_metrics(pytester, SLOWDOWN, "-k", "node_network or ports")
    judged = [r for r in lines if outcome(r) in JUDGED]
    assert {r.get("error_kind") for r in judged if outcome(r) != "passed"} == {
        UNDECIDED, None}  # the search's indecision, and n2's port down
    case = {tuple(labels[n] for n in CASE_LABELS[2:4]): value
            for labels, value in found["pytest_cluster_check_judged"]}
    assert case == {(str(r["spec_key"]), str(r["node"])):
                    0.0 if r.get("error_kind") in NOT_BLAMING else 1.0 for r in judged}
    passed = {tuple(labels[n] for n in CLAUSE_LABELS[2:4]): value
              for labels, value in found["pytest_cluster_clause_passed"]}
    clause = {tuple(labels[n] for n in CLAUSE_LABELS[2:4]): value
              for labels, value in found["pytest_cluster_clause_judged"]}
    assert set(clause) == set(passed)
    assert passed[("interconnect.busbw[node_network]", "n1")] == 0.0
    assert clause[("interconnect.busbw[node_network]", "n1")] == 0.0
    assert clause[("fabric.ports", "n2")] == 1.0 and passed[("fabric.ports", "n2")] == 0.0
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    for node in verdict["nodes"]:
        alerting = {name for (name, where), value in passed.items()
                    if where == node["node"] and value == 0 and clause[(name, where)] == 1}
        assert alerting == set(node["failed_clauses"]), node


@pytest.mark.realcomponents
@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool (Debian's prometheus package) is not installed")
def test_promtool_finds_nothing_to_fix_in_the_metrics(pytester: pytest.Pytester) -> None:
    """Prometheus' own linter (names, units, HELP) on the richest example's metrics."""
    run_with_metrics(pytester, (EXAMPLES / "trial-sim.yaml").read_text())
    text = (pytester.path / "textfile" / "pytest_cluster.prom").read_bytes()
    checked = subprocess.run(["promtool", "check", "metrics"], input=text,
                             capture_output=True, check=False, timeout=60)
    assert checked.returncode == 0 and not checked.stdout.strip() \
        and not checked.stderr.strip(), checked


#: running.md's per-node alert: a clause failed where it judged the node, on the series
#: of nodes (pytest_cluster_node_verdict has no series for a check across nodes).
NODE_ALERT = ("(pytest_cluster_clause_passed == 0 and pytest_cluster_clause_judged == 1) "
              "and on(cluster, level, node) pytest_cluster_node_verdict")


def test_the_documented_node_alert_is_the_one_running_md_gives() -> None:
    assert f"`{NODE_ALERT}`" in " ".join((EXAMPLES.parent / "docs" / "running.md")
                                        .read_text().split())


@pytest.mark.realcomponents
@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool (Debian's prometheus package) is not installed")
def test_the_documented_node_alert_fires_on_exactly_the_failed_clauses_of_each_node(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """Prometheus itself (promtool test rules) evaluates running.md's alert on the
    richest example's metrics: it fires on each node's failed_clauses in verdict.json and
    on nothing else: not the checks across nodes (node="all", "2 nodes (...)") that
    failed, not a case that could not judge its node."""
    run_with_metrics(pytester, (EXAMPLES / "trial-sim.yaml").read_text())
    text = (pytester.path / "textfile" / "pytest_cluster.prom").read_text()
    series = [{"series": line.rsplit(" ", 1)[0], "values": line.rsplit(" ", 1)[1]}
              for line in text.splitlines() if line and not line.startswith("#")]
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    assert verdict["cluster_checks_failed"]  # what the alert must leave out is there
    level, cluster = verdict["level"], verdict["cluster"]
    expected = [{"exp_labels": {"clause": clause, "cluster": cluster, "level": level,
                                "node": node["node"], "simulated": "true"}}
                for node in verdict["nodes"] for clause in node["failed_clauses"]]
    assert expected
    (tmp_path / "rules.yaml").write_text(json.dumps({"groups": [{"name": "cluster", "rules": [
        {"alert": "ClauseFailed", "expr": NODE_ALERT}]}]}))
    (tmp_path / "test.yaml").write_text(json.dumps({
        "rule_files": ["rules.yaml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": [
            {"eval_time": "0m", "alertname": "ClauseFailed", "exp_alerts": expected}]}]}))
    checked = subprocess.run(["promtool", "test", "rules", "test.yaml"], cwd=tmp_path,
                             capture_output=True, text=True, check=False, timeout=120)
    assert checked.returncode == 0, (checked.stdout + checked.stderr)[-3000:]


@pytest.mark.parametrize(("given", "said"), [
    ("", "is empty: expected a file"),
    ("{tmp}", "is a directory"),
    ("{tmp}/missing/m.prom", "does not exist"),
    ("/proc/version", "cannot be written"),
])
def test_a_bad_metrics_file_is_a_usage_error_before_any_test_runs(
        pytester: pytest.Pytester, given: str, said: str) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC)
    option = f"--cluster-metrics={given.format(tmp=pytester.path)}"
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    error = result.stderr.str()
    assert error.startswith(f"ERROR: {option} ") and said in error, error
    assert not (pytester.path / "reports").exists()  # no run directory made for it


@pytest.mark.slow
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
    """Each unit the spec takes maps to its dimension's base unit; a bare number has none."""
    assert base_unit("") == ""
    for unit, (dim, _) in UNITS.items():
        assert base_unit(unit) == base_unit(next(u for u, (d, _) in UNITS.items()
                                                 if d == dim)), unit
    assert [base_unit(u) for u in ("GB/s", "Gb/s", "TiB", "ms", "%")] == [
        "bytes_per_second", "bytes_per_second", "bytes", "seconds", "ratio"]
