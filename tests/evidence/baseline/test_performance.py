"""Each figure against its baseline's: worse by more than the tolerance, in the clause's
direction, on one basis, or not comparable."""

from __future__ import annotations

import re
from typing import Any, cast

import pytest

from pytest_cluster.contract.sections.storage import BASES
from pytest_cluster.evidence.baseline.accepted import figures
from pytest_cluster.evidence.baseline.performance import SHARED_BY, compared
from pytest_cluster.evidence.sinks.results import ResultLine
from pytest_cluster.evidence.verdict.blame import NO_CULPRIT, NOT_COMPARABLE
from tests.evidence.baseline.test_compare import figure


def aggregate(measured: float, basis: str, **counts: int) -> ResultLine:
    """The checkpoint burst's figure of 4 nodes x 8 GPUs on `basis`, in GB/s."""
    return cast("ResultLine", {
        "case": "acceptance/test_storage.py::test_storage_checkpoint_write[/shared]",
        "clause": "storage[/shared].checkpoint.write", "node": "all", "measured": measured,
        "measured_base": measured * 1e9, "unit": "GB/s", "comparison": ">=", "basis": basis,
        **counts})


COUNTS = {"basis_nodes": 4, "basis_gpus": 32}


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
