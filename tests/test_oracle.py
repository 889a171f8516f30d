"""One run, one truth: the consistency oracle (tests/oracle.py) reads every view of a run
- terminal, junit.xml, results.jsonl, verdict.json, report.html with its plots, the
metrics and the manifest - and finds no two that disagree: on every example, on a soak,
on a run against a baseline, and on simulated clusters with random faults across GPUs,
NICs, NCCL's transport, the interconnect, storage and training."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.contract.sections.test_interconnect import DEAD_AND_FAR
from tests.evidence.sinks.test_metrics import SLOWDOWN as METRICS_SLOWDOWN
from tests.oracle import Views, check, read_views
from tests.truth import SHARED_STORAGE

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
#: Every example (the real clusters' too: run here, their nodes fail or do not answer).
SPECS = sorted(p.name for p in EXAMPLES.glob("*.yaml"))


def run_and_check(pytester: pytest.Pytester, spec: str, *args: str) -> list[str]:
    """Run `spec` as a user would, with every view written; the oracle's disagreements."""
    (pytester.path / "trial.yaml").write_text(spec)
    metrics = pytester.path / "metrics.prom"
    metrics.unlink(missing_ok=True)
    shutil.rmtree(pytester.path / "reports", ignore_errors=True)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", f"--cluster-metrics={metrics}",
                                *args)
    run = (pytester.path / "reports" / "latest").resolve()
    return check(run, result.stdout.str(), metrics)


@pytest.mark.slow
@pytest.mark.parametrize("name", SPECS)
def test_every_view_of_every_example_agrees(pytester: pytest.Pytester, name: str) -> None:
    assert run_and_check(pytester, (EXAMPLES / name).read_text()) == []


def test_a_run_stopped_by_maxfail_agrees_in_every_view(pytester: pytest.Pytester) -> None:
    """--maxfail=1 on the trial: the terminal, report.html and junit.xml count the cases
    that ran (JUnit listed the ones never reached as 1,420 skipped), the end record and
    JUnit's `not_run` the others, verdict.json and the end record the same nodes."""
    assert run_and_check(pytester, (EXAMPLES / "trial-sim.yaml").read_text(),
                         "--maxfail=1") == []
    run = (pytester.path / "reports" / "latest").resolve()
    views = read_views(run, "")
    assert views.end is not None and views.end["status"] == "interrupted"
    ran = sum(n for kind, n in views.end["counts"].items() if kind != "not_run")
    suite = next(views.junit.iter("testsuite"))
    assert (int(str(suite.get("tests"))), int(str(suite.get("skipped")))) == (ran, 0)
    assert views.verdict["nodes_checked"] == len(views.end["nodes_covered"]) < \
        views.verdict["nodes_in_spec"]


def test_a_run_with_clauses_disabled_agrees_in_every_view_and_the_oracle_checks_them(
        pytester: pytest.Pytester) -> None:
    """The trial with the kill switch (--cluster-disable): a node's clause (fabric.ports,
    which fails gpu-002), a check across nodes (busbw[inter_node], which fails the
    cluster) and an expired entry (gpus.p2p, which still fails gpu-003). Every view agrees;
    a verdict.json that counts another number of disabled cases, and a JUnit testcase of a
    disabled case that does not say so, are each named."""
    off = pytester.path / "off.yaml"
    off.write_text("disabled:\n"
                   "  - {clause: fabric.ports, reason: misreported (OPS-7), until: 2099-01-01}\n"
                   "  - clause: interconnect.busbw[inter_node]\n"
                   "    reason: spine maintenance (NET-42)\n    until: 2099-01-01\n"
                   "  - {clause: gpus.p2p, reason: old, until: 2001-01-01}\n")
    (pytester.path / "trial.yaml").write_text((EXAMPLES / "trial-sim.yaml").read_text())
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", f"--cluster-disable={off}")
    views = read_views((pytester.path / "reports" / "latest").resolve(), result.stdout.str())
    from tests.oracle import disagreements
    assert disagreements(views) == []
    assert [(e["clause"], e["cases"] > 0) for e in views.verdict["disabled"]] == [
        ("fabric.ports", True), ("interconnect.busbw[inter_node]", True)]
    assert [e["clause"] for e in views.verdict["disabled_expired"]] == ["gpus.p2p"]
    failed = {c["clause"] for c in views.verdict["cluster_checks_failed"]} | {
        c for n in views.verdict["nodes"] for c in n["failed_clauses"]}
    assert "gpus.p2p" in failed and not failed & {"fabric.ports",
                                                  "interconnect.busbw[inter_node]"}
    views.verdict["disabled"][0]["cases"] += 1
    case, skipped = next((tc, mark) for tc in views.junit.iter("testcase")
                         if (mark := tc.find("skipped")) is not None)
    case.remove(skipped)
    found = "\n".join(disagreements(views))
    assert "verdict.json: fabric.ports disabled" in found
    assert f"::{case.get('name')} is not skipped saying 'disabled: " in found


@pytest.mark.slow
def test_the_oracle_finds_a_view_that_disagrees(pytester: pytest.Pytester) -> None:
    """It can fail: a verdict.json edited to accept a rejected node or to hold until it was
    made, a metrics sample, a JUnit outcome and the clause table's counts changed are each
    named."""
    views = _agreeing_views(pytester, "trial-sim.yaml")
    from tests.oracle import disagreements
    rejected = next(n for n in views.verdict["nodes"] if n["verdict"] == "REJECTED")
    rejected["verdict"] = "ACCEPTED"
    views.verdict["valid_until"] = views.verdict["made_at"]  # a verdict that never held
    assert views.metrics is not None
    labels, _ = views.metrics["pytest_cluster_check_passed"][0]
    views.metrics["pytest_cluster_check_passed"][0] = (labels, 0.5)
    case = next(views.junit.iter("testcase"))
    case.append(case.makeelement("failure", {}))
    # the clause table counting nodes, not cases: 3 nodes passed, 1 failed (4 cases)
    assert views.clauses["interconnect.busbw[intra_node]"] == (12, 4)
    views.clauses["interconnect.busbw[intra_node]"] = (3, 1)
    every = views.clauses["Every clause"]
    views.clauses["Every clause"] = (every[0] - 1, every[1])
    found = "\n".join(disagreements(views))
    assert "junit.xml: nodes_rejected" in found or "terminal" in found
    assert f"{rejected['node']} is ACCEPTED but failed" in found
    assert "metrics: check_passed 0.5" in found
    assert f"held until {views.verdict['made_at']}: not the run's end and a time after" in found
    assert "junit.xml: test_" in found and " is failed, results.jsonl passed" in found
    assert ("the clause table shows interconnect.busbw[intra_node] (passed, failed) "
            "(3, 1), results.jsonl (12, 4)") in found
    assert ("the clause table's Every clause row shows (passed, failed) "
            f"({every[0] - 1}, {every[1]}), the terminal {every}") in found


def test_the_oracle_finds_a_fault_code_that_disagrees(pytester: pytest.Pytester) -> None:
    """A failed line without its code, a node's codes or drain reason not its failures',
    a metrics' first fault not verdict.json's: each is named."""
    views = _agreeing_views(pytester, "sim-h100-faulty.yaml")
    from tests.oracle import disagreements
    line = next(r for r in views.results if r.get("outcome") == "failed")
    del line["code"]
    node = next(n for n in views.verdict["nodes"] if n["node"] == "sim-gpu-04")
    node["codes"] = ["PC-GPU-XID"]
    views.verdict["drain"] = [d.replace("Reason=PC-GPU-COUNT ", "Reason=PC-GPU-XID ")
                              for d in views.verdict["drain"]]
    assert views.metrics is not None
    views.metrics["pytest_cluster_node_fault"] = [
        ({**labels, "first": "false"}, value)
        for labels, value in views.metrics["pytest_cluster_node_fault"]]
    found = "\n".join(disagreements(views))
    assert f"results.jsonl: {line['nodeid']} (failed) says fault (None, " in found
    assert "verdict.json: sim-gpu-04 has codes ['PC-GPU-XID'], results.jsonl " in found
    assert ("verdict.json: sim-gpu-02's drain reason starts with 'PC-GPU-XID', its first "
            "failure's code is 'PC-GPU-COUNT'") in found
    assert ("metrics: node_fault ['PC-GPU-D2H', 'PC-GPU-H2D', 'PC-GPU-PCIE', "
            "'PC-GPU-USABLE-MEMORY'] on sim-gpu-01 (first None), verdict.json ['PC-GPU-D2H', "
            "'PC-GPU-H2D', 'PC-GPU-PCIE', 'PC-GPU-USABLE-MEMORY'] (first "
            "'PC-GPU-USABLE-MEMORY')") in found


@pytest.mark.slow
def test_the_oracle_finds_a_heat_map_that_names_the_wrong_node(
        pytester: pytest.Pytester) -> None:
    """sim-gpu-04 is three times farther from its peers: the heat map's caption names it,
    as colocation does. A caption that names another node, and a cell that shows another
    latency than the cases' matrix, are each named."""
    (pytester.path / "trial.yaml").write_text(
        (EXAMPLES / "sim-h100-storage-faulty.yaml").read_text())
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports")
    views = read_views((pytester.path / "reports" / "latest").resolve(), result.stdout.str())
    from tests.oracle import disagreements
    assert disagreements(views) == []
    assert "Farthest node: <b>sim-gpu-04</b>" in views.report
    views.report = views.report.replace("Farthest node: <b>sim-gpu-04</b>",
                                        "Farthest node: <b>sim-gpu-01</b>")
    views.report = re.sub(r"(>sim-gpu-02 to sim-gpu-03: )[\d.]+ us<", r"\g<1>42 us<",
                          views.report, count=1)
    found = "\n".join(disagreements(views))
    assert "the latency heat map names sim-gpu-01 the farthest node" in found
    assert "(sim-gpu-04)" in found  # the highest median, whose it is
    assert "colocation failed ['sim-gpu-04']" in found
    assert "the latency heat map shows sim-gpu-02 to sim-gpu-03 42 us" in found


FAR_33 = """\
cluster: {{name: far-33, nodes: "sim-gpu-[01-33]", launcher: sim}}
interconnect:
  intra_node: {{kind: nvlink, rate: 450 GB/s}}
  inter_node: {{kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}}
  payloads: [4 GiB]
  busbw: ">= 80%"
  latency: "<= 5 us"
sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 8
  faults: [{{node: {far}, latency_factor: 3}}]
"""


def test_above_32_nodes_the_heat_map_is_a_line_that_names_the_far_node(
        pytester: pytest.Pytester) -> None:
    """No matrix in the cases above 32 nodes: the report says so in one line, naming the
    farthest node, and the oracle checks that line against the cases."""
    assert run_and_check(pytester, FAR_33.format(far="sim-gpu-29"), "-k",
                         "latency or colocation") == []
    report = (pytester.path / "reports" / "latest" / "report.html").read_text()
    heat = re.search(r'<figure id="latency-heatmap">(.*?)</figure>', report, re.S)
    assert heat is not None and "<svg" not in heat.group(1)
    assert "33 nodes: no heat map" in heat.group(1)
    assert "Farthest node: <b>sim-gpu-29</b>" in heat.group(1)


def test_a_dead_node_beside_a_far_one_agrees_in_every_view(
        pytester: pytest.Pytester) -> None:
    """n-6 does not answer and is left out of the ping-pong; n-4, far, is named: the
    heat map (over the five measured), the node table, verdict.json, the metrics and the
    terminal agree on who is rejected, who unreachable and who passed."""
    assert run_and_check(pytester, DEAD_AND_FAR) == []
    report = (pytester.path / "reports" / "latest" / "report.html").read_text()
    assert "Farthest node: <b>n-4</b>" in report


#: A fabric-wide slowdown (every node's links at half rate: no known-good node, on the
#: node network or any rail) and n2's own port down.
SLOWDOWN = METRICS_SLOWDOWN.replace("fabric: {ports: 8}",
                                    "fabric: {ports: 8, rail_busbw: 40 GB/s}")


def test_an_undecided_search_agrees_in_every_view_and_the_metrics_say_so(
        pytester: pytest.Pytester) -> None:
    """The slow-node searches cannot decide: the node network's and the rails' cases are
    undecided and n1, n3, n4 NOT CHECKED in every view, n2 rejected for its port; the
    metrics' check_judged and clause_judged say which failures could not be judged, and
    the oracle names a clause_judged that would blame a node verdict.json does not."""
    assert run_and_check(pytester, SLOWDOWN, "-k", "node_network or ports or rail") == []
    metrics = pytester.path / "metrics.prom"
    views = read_views((pytester.path / "reports" / "latest").resolve(), "", metrics)
    assert {n["node"]: n["verdict"] for n in views.verdict["nodes"]} == {
        "n1": "NOT CHECKED", "n2": "REJECTED", "n3": "NOT CHECKED", "n4": "NOT CHECKED"}
    assert views.metrics is not None
    samples = views.metrics["pytest_cluster_clause_judged"]
    index = next(i for i, (labels, value) in enumerate(samples)
                 if labels["node"] == "n1" and value == 0.0)
    samples[index] = (samples[index][0], 1.0)
    from tests.oracle import disagreements
    found = "\n".join(disagreements(views))
    assert "metrics: clause_judged 1.0 for " in found
    assert "on n1 for ['" in found and "verdict.json (NOT CHECKED) fails []" in found


@pytest.mark.slow
@pytest.mark.parametrize("level", [("-m", "sanity"), ()], ids=["sanity", "acceptance"])
def test_a_soak_agrees_in_every_view(pytester: pytest.Pytester,
                                     level: tuple[str, ...]) -> None:
    """At the acceptance level each collective and payload of a node has its own
    steadiness case over the rounds: one metrics sample each (two collectives of a node
    were one sample, their labels alike)."""
    spec = (EXAMPLES / "trial-sim.yaml").read_text().replace(
        "sim:\n", "sla: {uptime: 99%, price_per_node_hour: 10, down_after: 0 s, "
        "credits: [{below: 99%, credit: 10%}]}\nsim:\n", 1)
    assert run_and_check(pytester, spec, "--cluster-soak-rounds=2", *level) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sim-h100.yaml", "trial-sim.yaml"])
def test_a_run_against_a_baseline_agrees_in_every_view(pytester: pytest.Pytester,
                                                       name: str) -> None:
    """trial-sim: two collectives of a node each compared with its baseline are two
    metrics samples (their comparisons' labels were alike, found by the truth oracle).
    A replacement accepted and seen nowhere (--cluster-baseline-accept) is said alike in
    every view."""
    spec = (EXAMPLES / name).read_text()
    assert run_and_check(pytester, spec) == []
    shutil.move(pytester.path / "reports", pytester.path / "accepted")
    accepted = (pytester.path / "accepted" / "latest").resolve()
    assert run_and_check(pytester, spec, f"--cluster-baseline={accepted}",
                         "--cluster-baseline-accept=NOT-SEEN-0001") == []


NODES = [f"gpu-00{i}" for i in range(1, 5)]
GPU_FAULTS = st.sampled_from([
    "bandwidth_factor: 0.7", "matmul_factor: 0.6", "xid: 79", "temperature: 95 C",
    "nvlinks_down: 2", "ecc_uncorrected: 2", "throttle: hw_slowdown", "sdc: true",
    "row_remap_pending: true", "model: H100-PCIe-80GB", "memory_held: 9 GiB",
    "pcie_gen: 4", "replaced: true"])
NODE_FAULTS = st.sampled_from([
    "down: true", "gpus: 7", "link_factor: 0.5", "transport: socket", "gdr: false",
    "nic: 2, nic_down: true", "nic: 5, nic_rate: 200 Gb/s", "nic: 0, nic_firmware: 28.36.1010",
    "nic: 1, nic_link_downed: 3", "nic: 6, nic_symbol_errors: 5000", "latency_factor: 3",
    "storage_factor: 0.5", "storage_corrupt: true"])
FAULT = st.one_of(
    st.tuples(st.sampled_from(NODES), st.integers(0, 7), GPU_FAULTS).map(
        lambda f: f"    - {{node: {f[0]}, gpu: {f[1]}, {f[2]}}}"),
    st.tuples(st.sampled_from(NODES), NODE_FAULTS).map(
        lambda f: f"    - {{node: {f[0]}, {f[1]}}}"))
#: The interconnect promise varied too: its bar and its payloads.
BUSBW = st.sampled_from(['">= 70%"', '">= 80%"', '">= 85%"', '">= 330 GB/s"'])
PAYLOADS = st.sampled_from(["[4 GiB, 16 GiB]", "[1 GiB]", "[256 MiB, 16 GiB]"])


@pytest.mark.slow
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(faults=st.lists(FAULT, min_size=0, max_size=4), busbw=BUSBW, payloads=PAYLOADS,
       level=st.sampled_from([(), ("-m", "sanity")]))
def test_random_faults_agree_in_every_view(pytester: pytest.Pytester, faults: list[str],
                                           busbw: str, payloads: str,
                                           level: tuple[str, ...]) -> None:
    """The richest simulated example with random GPU, NIC, transport and network faults."""
    spec = (EXAMPLES / "trial-sim.yaml").read_text()
    head, _, _ = spec.partition("  faults:\n")
    # the latency bound and colocation ride along with the busbw promise, and a shared
    # filesystem's checkpoint burst and data loader reads with the GPUs
    head = re.sub(r"(?m)^  busbw: .*$", f'  busbw: {busbw}\n  latency: "<= 5 us"', head)
    head = re.sub(r"(?m)^gpus:", SHARED_STORAGE + "gpus:", head, count=1)
    head = re.sub(r"(?m)^  payloads: .*$", f"  payloads: {payloads}", head)
    text = head + "  faults:\n" + ("\n".join(faults) + "\n" if faults else "    []\n")
    assert run_and_check(pytester, text, *level) == [], text


LOCAL = """\
cluster: {{name: local-faults, nodes: localhost, launcher: local, probe_timeout: 5 min}}
host: {{cpu_cores: ">= {cores}"}}
storage:
  - {{path: {path}, shared: false, capacity: ">= {capacity}", write: ">= {write} MB/s",
     read: ">= 1 MB/s", metadata: ">= {metadata} ops/s", io_size: 8 MiB,
     metadata_files: 100}}
interconnect: {{payloads: [1 MiB], ranks_per_node: 2, busbw: ">= {busbw} GB/s",
               iterations: 5}}
training: {{steps: 4, step_time: "<= {step} s", spread: "<= 100%"}}
"""


@pytest.mark.slow
@pytest.mark.parametrize("bounds", [
    {"cores": 1, "capacity": "1 MiB", "write": 1, "metadata": 1, "busbw": "0.001",
     "step": "600"},
    {"cores": 100000, "capacity": "1 PiB", "write": 10**9, "metadata": 10**9,
     "busbw": "10000", "step": "0.000001"},
    {"cores": 1, "capacity": "1 PiB", "write": 1, "metadata": 10**9, "busbw": "0.001",
     "step": "0.000001"},
], ids=["all-hold", "none-holds", "some-hold"])
def test_storage_training_and_gloo_on_this_machine_agree_in_every_view(
        pytester: pytest.Pytester, bounds: dict[str, object]) -> None:
    """Storage and the training loop run on this machine (the simulator has neither),
    their promises set so that all, none or some hold: every view agrees on which."""
    spec = LOCAL.format(path=pytester.path, **bounds)
    assert run_and_check(pytester, spec) == [], spec
    lines = (pytester.path / "reports" / "latest" / "results.jsonl").read_text()
    failed = lines.count('"outcome": "failed"')
    assert (failed == 0) == (bounds["cores"] == 1 and bounds["step"] == "600"), failed


def test_every_node_down_agrees_in_every_view(pytester: pytest.Pytester) -> None:
    """No node answers: none is blamed (NOT CHECKED, the controller's fault said once),
    and the metrics judge none of their cases (no per-node alert fires)."""
    down = "\n".join(f"    - {{node: n{i}, down: true}}" for i in (1, 2, 3))
    spec = ("cluster: {name: c, nodes: 'n[1-3]', launcher: sim}\nhost: {cpu_cores: 96}\n"
            f"sim:\n  faults:\n{down}\n")
    assert run_and_check(pytester, spec) == []
    metrics = (pytester.path / "metrics.prom").read_text()
    assert 'pytest_cluster_clause_judged{' in metrics
    assert not [line for line in metrics.splitlines()
                if line.startswith("pytest_cluster_clause_judged{") and line.endswith(" 1.0")]


def test_the_oracle_finds_a_not_checked_nodes_fault_that_disagrees(
        pytester: pytest.Pytester) -> None:
    """A NOT CHECKED node (the fleet example's gpu-002: DCGM found persistence mode off)
    whose verdict.json says no code, or another first code, than its undecided cases:
    named; so is its Nodes row without the fault."""
    views = _agreeing_views(pytester, "sim-h100-fleet-faulty.yaml")
    from tests.oracle import disagreements
    node = next(n for n in views.verdict["nodes"] if n["verdict"] == "NOT CHECKED")
    said = (node["node"], node["codes"], node["code"])
    assert said == ("gpu-002", ["PC-DCGM-CONFIG"], "PC-DCGM-CONFIG")
    node["codes"], node["code"] = [], ""
    found = "\n".join(disagreements(views))
    assert ("verdict.json: NOT CHECKED gpu-002 has codes [] (first ''), its undecided cases "
            "['PC-DCGM-CONFIG']") in found
    # the report still shows the fault verdict.json no longer says
    assert "report.html: gpu-002 shown ('NOT CHECKED', " in found


def _agreeing_views(pytester: pytest.Pytester, example: str) -> Views:
    """The views of a run of examples/`example` with metrics, which agree (the oracle finds
    nothing), for a test to break one of them."""
    (pytester.path / "trial.yaml").write_text((EXAMPLES / example).read_text())
    metrics = pytester.path / "metrics.prom"
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", f"--cluster-metrics={metrics}")
    views = read_views((pytester.path / "reports" / "latest").resolve(),
                       result.stdout.str(), metrics)
    from tests.oracle import disagreements
    assert disagreements(views) == []
    return views
