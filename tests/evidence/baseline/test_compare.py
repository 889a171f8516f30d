"""--cluster-baseline: this run against an accepted one. The comparisons (figures, nodes,
hardware) as pure functions, then whole runs: a GPU swapped and a link slowed in the sim
are both named, a tampered baseline is a usage error, the spec's tolerance decides."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any, cast

import pytest
from jsonschema import Draft202012Validator

from pytest_cluster import cli
from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.narrow import narrow
from pytest_cluster.contract.storage import BASES
from pytest_cluster.evidence.baseline.accepted import (
    NOT_CHECKED,
    UNSIGNED,
    VERIFIED,
    Baseline,
    figures,
    load,
    signature_said,
)
from pytest_cluster.evidence.baseline.hardware import hardware_changes, same_hardware, same_nodes
from pytest_cluster.evidence.baseline.performance import SHARED_BY, compared
from pytest_cluster.evidence.blame import NO_CULPRIT, NOT_COMPARABLE
from pytest_cluster.evidence.bundle.manifest import MANIFEST, seal
from pytest_cluster.evidence.end import verdict_schema
from pytest_cluster.evidence.sinks.results import ResultLine, read_results
from pytest_cluster.measure.inventory_file import GpuRecord, InventoryDocument, NodeRecord
from tests.evidence.bundle.test_bundle import ed25519_key


def figure(measured: float, scale: float, unit: str, comparison: str = ">=",
           **extra: Any) -> ResultLine:
    return cast("ResultLine", {
        "case": "acceptance/test_gpus.py::test_gpu_matmul[gpu-003-gpu6-bf16]",
        "clause": "gpus.matmul.bf16", "node": "gpu-003", "gpu": 6, "measured": measured,
        "measured_base": measured * scale, "unit": unit, "comparison": comparison, **extra})


def test_a_figure_worse_than_baseline_reads_as_the_contract_would_say_it() -> None:
    case = compared(figure(598.2, 1e12, "TFLOPS"), figure(663.1, 1e12, "TFLOPS"), 0.05,
                    "run 2026-11-02")
    assert case is not None and not case.passed
    assert case.message == ("gpu-003 gpu6 gpus.matmul.bf16: 598.2 TFLOPS, 9.8 % below "
                            "baseline 663.1 (run 2026-11-02)")
    assert case.param == "test_gpu_matmul[gpu-003-gpu6-bf16]"
    assert case.props["change_pct"] == pytest.approx(-9.79, abs=0.01)
    # within the tolerance, and better, both pass
    assert compared(figure(640.0, 1e12, "TFLOPS"), figure(663.1, 1e12, "TFLOPS"), 0.05,
                    "r").passed
    assert compared(figure(700.0, 1e12, "TFLOPS"), figure(663.1, 1e12, "TFLOPS"), 0.0,
                    "r").passed


def test_every_number_a_comparison_prints_is_bounded_in_its_digits() -> None:
    """As units.format_number writes a number (four significant digits, an exponent past
    what a double holds exactly): a baseline of 1e288 TFLOPS or 1e-280 TFLOPS (each as its
    run wrote it) is said in a few characters, never a number of 289 digits."""
    now = figure(801.5, 1e12, "TFLOPS")
    huge = compared(now, figure(1e288, 1e12, "TFLOPS"), 0.05, "r")
    assert huge is not None and not huge.passed
    assert huge.message == ("gpu-003 gpu6 gpus.matmul.bf16: 801.5 TFLOPS, 100.0 % below "
                            "baseline 1e+288 (r)")
    tiny = compared(now, figure(1e-280, 1e12, "TFLOPS"), 0.05, "r")
    assert tiny is not None and tiny.passed
    assert tiny.props["measured"] == "801.5 TFLOPS (+8.015e+284 % on 1e-280)"
    for case in (huge, tiny):
        shown = [case.message, *(str(v) for v in case.props.values())]
        assert all(len(text) < 200 and not re.search(r"\d{17}", text) for text in shown), \
            shown


def test_lower_is_better_where_the_clause_says_so() -> None:
    slower = compared(figure(3.4, 1.0, "s", "<=", gpu=None, node="n1",
                             clause="storage[/data].import_torch"),
                      figure(2.8, 1.0, "s", "<="), 0.05, "run 2026-11-02")
    assert slower is not None and not slower.passed
    assert slower.message == ("n1 storage[/data].import_torch: 3.4 s, 21.4 % above baseline "
                              "2.8 (run 2026-11-02)")
    faster = compared(figure(2.0, 1.0, "s", "<="), figure(2.8, 1.0, "s", "<="), 0.05, "r")
    assert faster is not None and faster.passed


def test_a_comparison_from_a_baseline_of_0_is_made_never_left_out() -> None:
    """A baseline figure of 0 (a count of errors then) has no relative change: the
    comparison was left out in silence (3 errors now, 0 then: no case). Any change from 0
    is beyond every share of it: worse, it fails; better or the same, it passes."""
    rose = compared(figure(3.0, 1.0, "", "<=", gpu=None, node="n1",
                           clause="gpus.ecc_corrected"), figure(0.0, 1.0, "", "<="), 0.05, "r")
    assert not rose.passed
    assert rose.message == ("n1 gpus.ecc_corrected: 3, above baseline 0, by more than any "
                            "share of it (r)")
    assert rose.props["change_pct"] is None
    assert rose.props["measured"] == "3 (above 0, by more than any share of it)"
    same = compared(figure(0.0, 1.0, "", "<="), figure(0.0, 1.0, "", "<="), 0.05, "r")
    assert same.passed and same.props["change_pct"] == 0
    assert compared(figure(5.0, 1e9, "GB/s"), figure(0.0, 1e9, "GB/s"), 0.05, "r").passed
    assert not compared(figure(0.0, 1e9, "GB/s"), figure(5.0, 1e9, "GB/s"), 0.05, "r").passed


def test_a_change_past_what_a_double_holds_is_judged_by_its_direction() -> None:
    """1e300 s now against 1e-10 s at baseline: (now - then) / then overflows, and the
    comparison was left out in silence; it is a change beyond every share, and fails."""
    slower = compared(figure(1e300, 1.0, "s", "<="), figure(1e-10, 1.0, "s", "<="), 0.05, "r")
    assert not slower.passed and "above baseline 0.0000000001, by more than any share" in \
        slower.message
    faster = compared(figure(1e-10, 1.0, "s", "<="), figure(1e300, 1.0, "s", "<="), 0.05, "r")
    assert faster.passed


def test_only_figures_compared_one_way_are_kept() -> None:
    kept = figures([
        {**figure(1.0, 1.0, ""), "outcome": "passed"},
        {**figure(8.0, 1.0, "", "=="), "case": "a::count", "outcome": "passed"},
        cast("ResultLine", {**figure(1.0, 1.0, ""), "case": "a::b", "measured_base": None,
                            "outcome": "failed"}),
        {**figure(1.0, 1.0, ""), "case": "a::c", "outcome": "not_run"},
        {**figure(1.0, 1.0, ""), "case": "a::d", "measured_base": True, "outcome": "passed"},
    ])
    assert list(kept) == ["acceptance/test_gpus.py::test_gpu_matmul[gpu-003-gpu6-bf16]"]


def aggregate(measured: float, basis: str, **counts: int) -> ResultLine:
    """The checkpoint burst's figure of 4 nodes x 8 GPUs on `basis`, in GB/s."""
    return cast("ResultLine", {
        "case": "acceptance/test_storage.py::test_storage_checkpoint_write[/shared]",
        "clause": "storage[/shared].checkpoint.write", "node": "all", "measured": measured,
        "measured_base": measured * 1e9, "unit": "GB/s", "comparison": ">=", "basis": basis,
        **counts})


COUNTS = {"basis_nodes": 4, "basis_gpus": 32}


def test_a_figure_on_another_basis_is_converted_from_the_baselines_own_counts() -> None:
    """A bound per GPU at baseline and the cluster's total now (the contract edited
    between the runs): the baseline's 2.476 per GPU is 79.2 GB/s in all, so 39.6 now is a
    50 % drop (it was compared as it was: +1500 % on 2.476, and passed)."""
    case = compared(aggregate(39.61, "cluster", **COUNTS), aggregate(2.476, "gpu", **COUNTS),
                    0.05, "run 2026-11-02")
    assert case is not None and not case.passed
    assert case.props["change_pct"] == pytest.approx(-50.0, abs=0.1)
    assert case.message == (
        "all storage[/shared].checkpoint.write: 39.61 GB/s, 50.0 % below baseline 79.23 "
        f"(2.476 GB/s {BASES['gpu']} at baseline x 32 GPU(s)) (run 2026-11-02)")
    # per node now, per GPU at baseline: 8 GPUs a node; the same figure passes
    node = compared(aggregate(19.81, "node", **COUNTS), aggregate(2.476, "gpu", **COUNTS),
                    0.05, "r")
    assert node is not None and node.passed, node
    assert node.props["baseline_value"] == "19.81"
    assert "x 32 GPU(s) / 4 node(s)" in node.props["measured"]
    # on the same basis, nothing is converted
    same = compared(aggregate(2.4, "gpu", **COUNTS), aggregate(2.476, "gpu", **COUNTS), 0.05,
                    "r")
    assert same is not None and same.passed and same.props["baseline_value"] == "2.476"
    # and a figure per GPU says so: 1.2 GB/s is no cluster total
    worse = compared(aggregate(1.2, "gpu", **COUNTS), aggregate(2.476, "gpu", **COUNTS),
                     0.05, "r")
    assert worse is not None and not worse.passed
    assert worse.message.startswith(f"all storage[/shared].checkpoint.write: 1.2 GB/s "
                                    f"{BASES['gpu']}, 51.5 % below baseline 2.476"), worse


def test_a_figure_on_another_basis_without_the_counts_is_not_comparable() -> None:
    """Neither a pass nor a node's failure: the case fails saying which basis each run
    measured on and what the baseline's line lacks; it names no culprit."""
    lacking = compared(aggregate(39.61, "cluster"), aggregate(2.476, "gpu"), 0.05, "r")
    assert lacking is not None and not lacking.passed
    assert lacking.props["error_kind"] == NOT_COMPARABLE in NO_CULPRIT
    assert lacking.message == (
        f"all storage[/shared].checkpoint.write: measured {BASES['gpu']} in the baseline, "
        f"{BASES['cluster']} here, and the baseline's line holds no basis_gpus (the GPU(s) "
        "its total was shared out by) to convert with: not compared (r)")
    # a baseline written before the basis was recorded: its spec alone can say it
    old = cast("ResultLine", {k: v for k, v in aggregate(2.476, "gpu").items()
                              if k != "basis"})
    unknown = compared(aggregate(39.61, "cluster"), old, 0.05, "r")
    assert unknown is not None and not unknown.passed
    assert "the baseline's line records no basis" in unknown.message
    assert unknown.props["error_kind"] == NOT_COMPARABLE
    same_spec = compared(aggregate(2.4, "gpu"), old, 0.05, "r", same_spec=True)
    assert same_spec is not None and same_spec.passed
    # every basis a bound may count has its count (or is the total)
    assert set(SHARED_BY) == set(BASES)


def _baseline(nodes: dict[str, Any]) -> Baseline:
    return Baseline(Path("b"), "2026-11-02", (), "0" * 64, {"nodes": nodes}, {})


GPU: GpuRecord = {"index": 6, "serial": "1650001", "uuid": "GPU-a", "board_part": "692",
                  "vbios": "96.1", "pci_bus_id": "0:ba"}
NODE: NodeRecord = {
    "dmi": {"product_serial": "S1", "product_uuid": "U1"}, "machine_id": "m1",
    "gpus": [GPU], "software": {"driver": "550.90.07"},
    "interfaces": [{"name": "eno1", "address": "aa:bb", "firmware": "22.39",
                    "rate_gbps": 25.0, "link_layer": "ethernet"}],
    "infiniband": [{"name": "mlx5_0", "node_guid": "g0", "firmware": "28.39",
                    "ports": [{"port": "1", "rate": "400 Gb/sec (4X NDR)"}]}],
    "filesystems": [{"path": "/data", "block_devices": [{"name": "nvme0n1",
                                                         "serial": "D1", "model": "X"}]}]}


def test_hardware_changes_name_both_sides() -> None:
    assert hardware_changes(NODE, json.loads(json.dumps(NODE))) == []
    now = json.loads(json.dumps(NODE))
    now["gpus"][0].update(serial="1650002", uuid="GPU-b")
    now["interfaces"][0]["firmware"] = "22.41"
    now["infiniband"][0]["ports"][0]["rate"] = "200 Gb/sec (4X HDR)"
    now["software"]["driver"] = "560.35.03"
    now["filesystems"][0]["block_devices"] = []
    assert hardware_changes(NODE, now) == [
        "gpu6 swapped: serial 1650001 (GPU-a) at baseline, now serial 1650002 (GPU-b)",
        "NIC eno1 firmware 22.39 at baseline, now 22.41",
        "HCA mlx5_0 rate port 1 400 Gb/sec (4X NDR) at baseline, now port 1 200 Gb/sec "
        "(4X HDR)",
        "disk under /data nvme0n1 missing (was D1, X)",
        "driver 550.90.07 at baseline, now 560.35.03"]
    gone: NodeRecord = {**NODE, "gpus": {"unreadable": "NVML not available"}}
    assert hardware_changes(NODE, gone) == ["GPUs unreadable now (unreadable (NVML not "
                                            "available))"]
    assert hardware_changes(NODE, {"unreadable": "n1: ssh: connection refused"}) == [
        "no inventory this run: n1: ssh: connection refused"]
    # unreadable at baseline: nothing to compare it with, so no change is claimed
    assert hardware_changes({**NODE, "dmi": {"unreadable": "root only"}},
                            {**NODE, "dmi": {"product_serial": "S9"}}) == []


def test_what_a_terminal_would_act_on_is_escaped_in_a_change() -> None:
    """A hostile baseline's serial that clears the screen, or a node name with a bidi
    override, is shown escaped; printable text (accents too) is kept as it is."""
    before = json.loads(json.dumps(NODE))
    before["gpus"][0]["serial"] = "\x1b[2J\x1b[Hall good\u202e"
    before["software"]["driver"] = "550 é"
    assert hardware_changes(before, NODE) == [
        "gpu6 swapped: serial \\x1b[2J\\x1b[Hall good\\u202e (GPU-a) at baseline, now serial "
        "1650001 (GPU-a)",
        "driver 550 é at baseline, now 550.90.07"]
    case = same_nodes(_baseline({"n1": NODE, "n\x1b[31m2": NODE}), {"nodes": {"n1": NODE}})
    assert case.message.endswith("1 missing since the baseline: n\\x1b[31m2")


def test_missing_and_new_nodes_are_named() -> None:
    case = same_nodes(_baseline({"n1": NODE, "n2": NODE}), {"nodes": {"n1": NODE, "n3": NODE}})
    assert not case.passed
    assert case.message == ("nodes differ from the baseline (run 2026-11-02): 1 missing since "
                            "the baseline: n2; 1 new: n3")
    assert same_nodes(_baseline({"n1": NODE}), {"nodes": {"n1": NODE}}).passed


def test_a_run_of_some_nodes_misses_none_it_was_not_asked_to_check() -> None:
    """A run of some of the spec's nodes (--cluster-node, a SLURM prolog's this host) is
    compared on those alone: the baseline's others are named as left out, not missing
    (before, a run of one node of an accepted four failed baseline.nodes: 3 missing)."""
    whole = parse_spec("cluster: {name: c, nodes: 'n[1-4]', launcher: ssh}\n"
                       "host: {cpu_cores: '>= 1'}\n", "s.yaml")
    four = _baseline({node: NODE for node in whole.cluster.nodes})
    one = narrow(whole, ["n1"]).cluster
    case = same_nodes(four, {"nodes": {"n1": NODE}}, one)
    assert case.passed, case.message
    assert case.props["measured"] == ("1 node(s), 4 at baseline; 3 left out by the node "
                                      "selection: n2, n3, n4")
    assert case.props["not_checked"] == ["n2", "n3", "n4"]
    assert case.props["requirement"] == "the nodes of the baseline that this run checks"
    # a node the run was asked to check and did not report is still missing
    lost = same_nodes(four, {"nodes": {}}, one)
    assert lost.message == ("nodes differ from the baseline (run 2026-11-02): 1 missing "
                            "since the baseline: n1")
    # a run of every node: a baseline node gone from the spec is missing, as before
    assert not same_nodes(four, {"nodes": {"n1": NODE}}, whole.cluster).passed
    # a selection that kept checks of n1 alone (-k n1): the same, every node's inventory
    # taken or not
    every: InventoryDocument = cast("InventoryDocument", {
        "nodes": {node: NODE for node in whole.cluster.nodes}})
    one_taken: InventoryDocument = cast("InventoryDocument", {"nodes": {"n1": NODE}})
    for taken in (every, one_taken):
        kept = same_nodes(four, taken, whole.cluster, frozenset({"n1"}))
        assert kept.passed, kept.message
        assert kept.props["not_checked"] == ["n2", "n3", "n4"]
    assert [case.node for case in same_hardware(four, every, {"n1"})] == ["n1"]


SPEC = """\
cluster: {{name: base, nodes: "n[1-4]", launcher: sim}}
gpus:
  count: 8
  matmul: {{bf16: ">= 700 TFLOPS"}}
interconnect:
  intra_node: {{kind: nvlink, rate: 450 GB/s}}
  inter_node: {{kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}}
  payloads: [1 GiB]
  node_counts: [2, 4]
  busbw: ">= 10%"
  ranks_per_node: 8
  backend: nccl
{baseline}sim:
  gpus_per_node: 8
{faults}"""
CHANGED = """\
  faults:
    - {node: n3, gpu: 6, replaced: true}
    - {node: n2, link_factor: 0.5}
"""


def _run(pytester: pytest.Pytester, reports: str, *args: str, faults: str = "",
         baseline: str = "") -> pytest.RunResult:
    (pytester.path / "trial.yaml").write_text(SPEC.format(faults=faults, baseline=baseline))
    return pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                              f"--cluster-reports={reports}", *args)


@pytest.mark.slow
def test_a_swapped_gpu_and_a_slowed_link_are_both_named(pytester: pytest.Pytester) -> None:
    accepted = _run(pytester, "accepted")
    assert accepted.ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    same = _run(pytester, "same", f"--cluster-baseline={base}")
    assert same.ret == pytest.ExitCode.OK, same.stdout.str()[-3000:]
    kept = read_results(pytester.path / "same" / "latest" / "results.jsonl").results
    derived = [r for r in kept if r["clause"].startswith("baseline.")]
    assert {r["clause"].split("[")[0] for r in derived} == {
        "baseline.nodes", "baseline.hardware", "baseline.performance"}
    assert "baseline.performance[gpus.matmul.bf16]" in {r["clause"] for r in derived}
    assert all(r["outcome"] == "passed" for r in derived)
    end = read_results(pytester.path / "same" / "latest" / "results.jsonl").end
    assert end is not None and end["baseline"]["failed"] == 0
    # the contract's checks are counted as without a baseline; its cases apart
    assert end["checks_ran"] == end["checks_planned"] == read_results(
        base / "results.jsonl").end["checks_ran"]  # type: ignore[index]
    assert end["baseline"]["cases"] == len(derived)
    assert "baseline: compared with" in same.stdout.str()
    now = _run(pytester, "now", f"--cluster-baseline={base}", faults=CHANGED)
    assert now.ret == pytest.ExitCode.TESTS_FAILED
    failed = {r["nodeid"]: r["message"] for r in read_results(
        pytester.path / "now" / "latest" / "results.jsonl").results
        if r["outcome"] == "failed" and r["clause"].startswith("baseline.")}
    swapped = failed.pop("pytest_cluster/baseline.py::test_same_hardware[n3]")
    assert "gpu6 swapped: serial 1654" in swapped and swapped.endswith(
        f"({load(base).label})")
    slowed = failed.pop("pytest_cluster/baseline.py::test_same_hardware[n2]")
    assert "HCA mlx5_0 rate port 1 400 Gb/sec (4X NDR) at baseline, now port 1 200 Gb/sec" \
        in slowed
    assert failed, "the busbw over n2's link is slower than at baseline"
    for nodeid, message in failed.items():
        assert nodeid.startswith("pytest_cluster/baseline.py::test_not_worse[")
        assert "interconnect.busbw" in message and "% below baseline" in message
    report = (pytester.path / "now" / "latest" / "report.html").read_text()
    assert "<h2>Against the baseline</h2>" in report and "gpu6 swapped: serial" in report
    assert load(base).manifest_sha256 in report
    junit = (pytester.path / "now" / "latest" / "junit.xml").read_text()
    assert 'classname="pytest_cluster.baseline" name="test_same_hardware[n3]"' in junit
    # the spec's tolerance decides: at 60 %, a link at half its rate is within it
    lenient = _run(pytester, "lenient", f"--cluster-baseline={base}", faults=CHANGED,
                   baseline="baseline: {tolerance: 60%}\n")
    results = read_results(pytester.path / "lenient" / "latest" / "results.jsonl").results
    assert not [r for r in results if r["clause"].startswith("baseline.performance")
                and r["outcome"] == "failed"]
    assert lenient.ret == pytest.ExitCode.TESTS_FAILED  # the hardware still changed


def test_a_group_figure_below_baseline_blames_none_of_the_group() -> None:
    """A node's figure measured with a partner not known good (the slow-node search's
    first pairs: the slower bounds it) is the pair's: below baseline, the case fails
    without a culprit (undecided); the node's own figure (with a known-good partner)
    below baseline fails as before; within the tolerance, both pass."""
    def search(busbw: float, **extra: Any) -> ResultLine:
        return cast("ResultLine", {
            "case": "acceptance/test_interconnect.py::test_node_network[n1]",
            "clause": "interconnect.busbw[node_network]", "node": "n1", "measured": busbw,
            "measured_base": busbw * 1e9, "unit": "GB/s", "comparison": ">=", **extra})

    shared = compared(search(90.0, bounded_by="n2"), search(100.0), 0.05, "r")
    assert shared is not None and not shared.passed
    assert shared.props["error_kind"] == "undecided" and "undecided" in NO_CULPRIT
    assert shared.message == ("n1 interconnect.busbw[node_network]: 90 GB/s, 10.0 % below "
                              "baseline 100 (r): measured with n2, not known good then, it "
                              "is the group's figure (the slowest bounds it) and singles "
                              "out none of them")
    own = compared(search(90.0), search(100.0), 0.05, "r")
    assert own is not None and not own.passed and "error_kind" not in own.props
    within = compared(search(99.0, bounded_by="n2"), search(100.0), 0.05, "r")
    assert within is not None and within.passed and "error_kind" not in within.props
    assert figures([{**search(90.0, bounded_by="n2"), "outcome": "passed"}])[
        "acceptance/test_interconnect.py::test_node_network[n1]"]["bounded_by"] == "n2"


@pytest.mark.slow
def test_a_node_paired_with_a_slower_one_is_not_blamed_for_it(
        pytester: pytest.Pytester) -> None:
    """n2's network at 90 %, above the search's bar: the first round pairs it with n1,
    both reach the bar at n2's pace, 10 % below the baseline. Neither is singled out:
    baseline.performance[interconnect.busbw[node_network]] is undecided for both (n1 was
    rejected for its partner, and drained), n1 NOT CHECKED (n2 is rejected for its HCA's
    rate, baseline.hardware); n3 and n4, paired together, pass. A node the
    search names slow (n2 at 5 %, below the bar: its figure with a known-good partner is
    its own) is rejected, and n1, then cleared with a known-good partner, passes."""
    selected = ("-k", "node_network")
    assert _run(pytester, "accepted", *selected).ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()

    def judged(factor: float) -> tuple[dict[str, str], dict[str, ResultLine]]:
        faults = f"  faults:\n    - {{node: n2, link_factor: {factor}}}\n"
        _run(pytester, f"x{factor}", f"--cluster-baseline={base}", *selected,
             faults=faults)
        run_dir = pytester.path / f"x{factor}" / "latest"
        verdict = json.loads((run_dir / "verdict.json").read_text())
        compared_ = {str(r["node"]): r for r in read_results(run_dir / "results.jsonl")
                     .results if r["clause"] ==
                     "baseline.performance[interconnect.busbw[node_network]]"}
        return {n["node"]: n["verdict"] for n in verdict["nodes"]}, compared_

    verdicts, cases = judged(0.9)  # n2 is rejected for its HCA's rate (baseline.hardware)
    assert verdicts == {"n1": "NOT CHECKED", "n2": "REJECTED", "n3": "ACCEPTED",
                        "n4": "ACCEPTED"}
    for node in ("n1", "n2"):
        assert cases[node]["outcome"] == "failed"
        assert cases[node]["error_kind"] == "undecided", cases[node]
    assert "measured with n2, not known good then" in cases["n1"]["message"]
    verdicts, cases = judged(0.05)
    assert verdicts == {"n1": "ACCEPTED", "n2": "REJECTED", "n3": "ACCEPTED",
                        "n4": "ACCEPTED"}
    assert cases["n1"]["outcome"] == "passed" and cases["n2"]["outcome"] == "failed"
    assert "error_kind" not in cases["n2"]


BURST = """\
cluster: {{name: dispute, nodes: "n[1-2]", launcher: sim}}
storage:
  - path: /shared
    shared: true
    checkpoint: {{size_per_gpu: 64 MiB, write: "{write}"}}
gpus: {{count: 8}}
sim:
  gpus_per_node: 8
  faults: {faults}
"""


@pytest.mark.slow
def test_a_bound_edited_to_another_basis_is_compared_on_one(pytester: pytest.Pytester) -> None:
    """Accepted at '>= 2 GB/s per GPU', run at '>= 10 GB/s' (the cluster's total) with a
    node at half its rate: the write case compares the totals (the burst waits on its
    slowest node: half the rate; it said +708 % on the per-GPU figure and passed), and
    names no node to drain."""
    (pytester.path / "trial.yaml").write_text(BURST.format(write=">= 2 GB/s per GPU",
                                                           faults="[]"))
    assert pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                              "--cluster-reports=accepted").ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    (pytester.path / "trial.yaml").write_text(BURST.format(
        write=">= 10 GB/s", faults="[{node: n2, storage_factor: 0.5}]"))
    pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                       "--cluster-reports=now", f"--cluster-baseline={base}")
    run_dir = pytester.path / "now" / "latest"
    [line] = [r for r in read_results(run_dir / "results.jsonl").results
              if r["clause"] == "baseline.performance[storage[/shared].checkpoint.write]"]
    assert line["outcome"] == "failed", line
    change = line["change_pct"]
    assert change is not None and -55 < change < -45, line["measured"]
    assert f"{BASES['gpu']} at baseline x 16 GPU(s)" in line["message"]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert not [f for f in verdict["cluster_checks_failed"] if f["clause"] == line["clause"]
                and f.get("culprits")]


@pytest.mark.slow
def test_a_run_of_one_node_passes_against_a_baseline_of_all(pytester: pytest.Pytester) -> None:
    """`--cluster-node=n1` against an accepted run of n1-n4: baseline.nodes passes, naming
    the three left out by the selection, and the gate says PASS (it said FAIL: 3 missing
    since the baseline, verdict REJECTED)."""
    assert _run(pytester, "accepted").ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    one = _run(pytester, "one", f"--cluster-baseline={base}", "--cluster-node=n1")
    assert one.ret == pytest.ExitCode.OK, one.stdout.str()[-3000:]
    run_dir = pytester.path / "one" / "latest"
    [nodes] = [r for r in read_results(run_dir / "results.jsonl").results
               if r["clause"] == "baseline.nodes"]
    assert nodes["outcome"] == "passed"
    assert nodes["measured"] == ("1 node(s), 4 at baseline; 3 left out by the node "
                                 "selection: n2, n3, n4")
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["verdict"] == "ACCEPTED", verdict
    assert cli.main(["gate", str(run_dir), "--exit-status", str(int(one.ret))]) == 0


@pytest.mark.slow
def test_a_selection_of_some_nodes_judges_no_other_by_the_baseline(
        pytester: pytest.Pytester) -> None:
    """`-k n1` against an accepted run of n1-n4: the baseline compares n1 alone, so n2-n4,
    none of whose checks ran, stay NOT CHECKED and the run INCOMPLETE, as without a
    baseline (a passed baseline.hardware case made each of them ACCEPTED, and the gate
    said PASS)."""
    assert _run(pytester, "accepted").ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    some = _run(pytester, "some", f"--cluster-baseline={base}", "-k", "n1")
    verdict = json.loads((pytester.path / "some" / "latest" / "verdict.json").read_text())
    assert {n["node"]: n["verdict"] for n in verdict["nodes"]} == {
        "n1": "ACCEPTED", "n2": "NOT CHECKED", "n3": "NOT CHECKED", "n4": "NOT CHECKED"}
    assert (verdict["verdict"], verdict["outcome"]) == ("INCOMPLETE", "ERROR"), some.ret
    hardware = [r["node"] for r in read_results(pytester.path / "some" / "latest"
                                                / "results.jsonl").results
                if r["clause"] == "baseline.hardware"]
    assert hardware == ["n1"]


@pytest.mark.slow
def test_a_baseline_that_fails_verify_is_a_usage_error(pytester: pytest.Pytester) -> None:
    assert _run(pytester, "accepted").ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    with (base / "results.jsonl").open("a") as out:
        out.write("\n")
    result = _run(pytester, "now", f"--cluster-baseline={base}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--cluster-baseline={base}: it fails pytest-cluster "
                                 "verify*CHANGED: results.jsonl*"])
    assert not (pytester.path / "now").exists()
    result = _run(pytester, "now", f"--cluster-baseline={pytester.path / 'nowhere'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (pytester.path / "now").exists()


def _reseal(run_dir: Path) -> None:
    """A forger's bundle: files changed, the manifest made again over them (unsigned)."""
    (run_dir / MANIFEST).unlink()
    seal(run_dir, {}, ())


@pytest.mark.slow
def test_a_baseline_that_verifies_but_holds_odd_values_never_crashes_the_run(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(pytester, "accepted").ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    inventory = (base / "inventory.json").read_text()
    (base / "inventory.json").write_text('{"nodes": [1, 2]}')
    _reseal(base)
    refused = _run(pytester, "now", f"--cluster-baseline={base}")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines([f"ERROR: --cluster-baseline={base}: inventory.json: nodes: "
                                  "expected a mapping of node names to their inventory, found "
                                  "a list of 2 item(s)"])
    assert not (pytester.path / "now").exists()
    (base / "inventory.json").write_text(inventory)
    _reseal(base)

    def odd(*_: object) -> None:
        raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")

    monkeypatch.setattr("pytest_cluster.run.after_checks.compare", odd)
    crashed = _run(pytester, "odd", f"--cluster-baseline={base}")
    assert crashed.ret == pytest.ExitCode.TESTS_FAILED
    [failed] = [r for r in read_results(pytester.path / "odd" / "latest" /
                                        "results.jsonl").results if r["outcome"] == "failed"]
    assert failed["nodeid"] == "pytest_cluster/baseline.py::test_same_nodes[cluster]"
    assert failed["message"].endswith(
        "could not be compared: TypeError: unsupported operand type(s) for +: 'int' and 'str'")


@pytest.mark.slow
def test_a_baseline_key_requires_the_baseline_signed_by_it(pytester: pytest.Pytester,
                                                          tmp_path: Path) -> None:
    private, public, _ = ed25519_key(tmp_path, "accepted")
    _, other, _ = ed25519_key(tmp_path, "other")
    assert _run(pytester, "accepted", f"--cluster-sign-key={private}").ret == \
        pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    good = _run(pytester, "good", f"--cluster-baseline={base}",
                f"--cluster-baseline-key={public}")
    assert good.ret == pytest.ExitCode.OK
    report = (pytester.path / "good" / "latest" / "report.html").read_text()
    assert "the signature checked against SHA256:" in report
    _says_its_signature(pytester, good, "good", VERIFIED, load(base, public).checked_key)
    wrong = _run(pytester, "wrong", f"--cluster-baseline={base}",
                 f"--cluster-baseline-key={other}")
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR
    wrong.stderr.fnmatch_lines(["*it fails pytest-cluster verify*signature: INVALID*"])
    assert not (pytester.path / "wrong").exists()
    alone = _run(pytester, "alone", f"--cluster-baseline-key={public}")
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    alone.stderr.fnmatch_lines(["*--cluster-baseline-key needs --cluster-baseline=DIR*"])


def _says_its_signature(pytester: pytest.Pytester, run: pytest.RunResult, reports: str,
                        signature: str, key: str | None) -> None:
    """The run says how its baseline's signature stood: the terminal's baseline line, the
    end record's baseline and verdict.json's (valid against its schema)."""
    run_dir = pytester.path / reports / "latest"
    end = read_results(run_dir / "results.jsonl").end
    assert end is not None
    assert (end["baseline"]["signature"], end["baseline"]["signature_key"]) == (signature, key)
    run.stdout.fnmatch_lines([f"*baseline: compared with *; {signature_said(signature, key)}"
                              "): * case(s), * failed"])
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["baseline"] == end["baseline"]
    Draft202012Validator(verdict_schema()).validate(verdict)


def _rehash(run_dir: Path) -> None:
    """A forger's bundle that keeps its signatures: every subject's digest made again over
    the files as they are now (the signature no longer holds; verify without a key
    passes)."""
    manifest = json.loads((run_dir / MANIFEST).read_text())
    statement = json.loads(base64.b64decode(manifest["payload"]))
    for subject in statement["subject"]:
        data = (run_dir / subject["name"]).read_bytes()
        subject["digest"]["sha256"] = hashlib.sha256(data).hexdigest()
        subject["annotations"]["size"] = len(data)
    manifest["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    (run_dir / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.slow
def test_a_run_says_whether_its_baselines_signature_was_checked(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A signed baseline tampered with and re-hashed (its signature INVALID) and used
    without --cluster-baseline-key: the run says the signature was not checked (it said
    only 'baseline: compared with ...', and recorded nothing of it); resealed unsigned:
    unsigned."""
    private, _, _ = ed25519_key(tmp_path, "accepted")
    assert _run(pytester, "accepted", f"--cluster-sign-key={private}").ret == \
        pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    with (base / "results.jsonl").open("a") as out:
        out.write("\n")
    _rehash(base)
    assert load(base).signed_by, "its manifest still names the signature"
    kept = _run(pytester, "kept", f"--cluster-baseline={base}")
    assert kept.ret == pytest.ExitCode.OK, kept.stdout.str()[-3000:]
    _says_its_signature(pytester, kept, "kept", NOT_CHECKED, None)
    _reseal(base)
    unsigned = _run(pytester, "unsigned", f"--cluster-baseline={base}")
    _says_its_signature(pytester, unsigned, "unsigned", UNSIGNED, None)


def test_a_weaker_baseline_says_why() -> None:
    spec = parse_spec(SPEC.format(faults="", baseline=""), "t.yaml")
    same = Baseline(Path("b"), "2026-11-02", (), "0" * 64, {"nodes": {}}, {}, None,
                    "base", spec.sha256, "complete")
    assert same.notes(spec) == []
    other = Baseline(Path("b"), "2026-11-02", (), "0" * 64, {"nodes": {}}, {}, None,
                     "other", "f" * 64, "partial")
    assert other.notes(spec) == [
        "it is of cluster other, this run of base",
        f"its spec differs from this run's (sha256 ffffffffffff vs {spec.sha256[:12]}): only "
        "the cases both have are compared",
        "it ran partial: figures it did not measure have nothing to compare with"]


def test_a_node_of_thousands_of_changes_names_twenty_and_counts_the_rest() -> None:
    """A baseline within its bounds (4,096 NICs a node) costs a run no more output than a
    fresh run's: its hardware case names MAX_NAMED changes and counts the rest (before,
    every change was named, in every report)."""
    many = {**NODE, "interfaces": [{"name": f"veth{i}", "address": "aa"} for i in range(4096)]}
    case = same_hardware(_baseline({"n1": many}), {"nodes": {"n1": NODE}})[0]
    assert not case.passed
    assert case.message.count("missing") == 20
    assert "; and 4077 more change(s) (run 2026-11-02)" in case.message
    assert len(case.message) < 2000
    assert len(case.props["changes"]) == 21


def test_a_baseline_is_bounded_by_what_the_spec_allows() -> None:
    from pytest_cluster.contract import parse_spec
    from pytest_cluster.evidence.baseline.accepted import limits
    exact = parse_spec("cluster: {name: c, nodes: 'n[1-6]', launcher: sim}\n"
                           "gpus: {count: 4}\nsim: {gpus_per_node: 4}\n", "s.yaml")
    assert (limits(exact).nodes, limits(exact).gpus_per_node) == (6, 4)
    assert limits(exact).gpus_from == "the spec's gpus.count (4)"
    sim = parse_spec("cluster: {name: c, nodes: [a, b], launcher: sim}\n"
                         "host: {cpu_cores: '>= 1'}\nsim: {gpus_per_node: 2}\n", "s.yaml")
    assert (limits(sim).nodes, limits(sim).gpus_per_node) == (2, 2)
    assert limits(sim).max_bytes("inventory.json") == 64 * 2**10 + 2 * 256 * 2**10
    real = parse_spec("cluster: {name: c, nodes: [a], launcher: ssh}\n"
                          "host: {cpu_cores: '>= 1'}\n", "s.yaml")
    assert limits(real).gpus_per_node == 64
