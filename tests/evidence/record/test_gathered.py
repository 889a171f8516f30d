"""gathered.py: the matrix's cells coloured by margin, the worst of a node's cases kept,
a passed check's row, a clause's reference named once, a benchmark's record told apart."""

from __future__ import annotations

from typing import cast

import pytest

from pytest_cluster.evidence.record.gathered import (
    PassedRow,
    cell_of,
    is_benchmark,
    matrix,
    passed_row,
    reference_named,
)
from pytest_cluster.evidence.sinks.results import ResultLine


def test_matrix_cells_colour_by_margin() -> None:
    near: ResultLine = {"node": "n1", "outcome": "failed", "measured": 341.2, "required": 360,
                        "comparison": ">=", "message": "Failed: slow"}
    assert (cell_of(near).css, cell_of(near).text) == ("m-short", "-5")
    far: ResultLine = {**near, "measured": 100}
    assert cell_of(far).css == "m-fail"
    broken: ResultLine = {**near, "measured": None, "error_kind": "unreachable"}
    assert cell_of(broken).css == "m-error"
    assert cell_of({**near, "outcome": "passed", "measured": 400}).css == "m-pass"
    assert cell_of({**near, "outcome": "passed", "measured": 370}).css == "m-near"
    assert cell_of({**near, "outcome": "not_run"}).css == "m-notrun"
    # a miss by less than half a percent never reads "0", a pass's text for the same
    close: ResultLine = {**near, "measured": 358.4}  # -0.44 %
    assert (cell_of(close).css, cell_of(close).text) == ("m-short", "-0.44")
    assert cell_of({**close, "outcome": "passed", "measured": 360.5}).text == "0"


@pytest.mark.parametrize("order", [(0, 1), (1, 0)], ids=["worst last", "worst first"])
def test_the_matrix_hover_names_the_worst_case_when_rounded_margins_tie(
        order: tuple[int, int]) -> None:
    """Two GPUs of a node at +3.4 % and +2.6 % both read "+3": the cell's hover names the
    one with the lower exact margin, in whichever order they came (it named the first)."""
    cases: list[ResultLine] = [
        {"node": "n1", "gpu": gpu, "clause": "gpus.matmul.bf16", "outcome": "passed",
         "measured": measured, "required": 100.0, "comparison": ">="}
        for gpu, measured in ((0, 103.4), (1, 102.6))]
    found = matrix(["n1"], [cases[i] for i in order])
    cell = found.cells[("n1", "gpus.matmul.bf16")]
    assert cell.text == "+3" and cell.title.startswith("n1 gpu1: ")
    # a tie on the exact margin keeps the first, as before
    same = matrix(["n1"], [cases[0], {**cases[0], "gpu": 2}])
    assert same.cells[("n1", "gpus.matmul.bf16")].title.startswith("n1 gpu0: ")


def test_a_passed_row_is_the_case_the_figure_the_requirement_and_the_margin() -> None:
    record: ResultLine = {"case": "acceptance/test_gpus.py::test_d2h[n1-gpu0]",
                          "measured": 44.0, "unit": "GB/s", "required": 40.0,
                          "comparison": ">=", "requirement": ">= 40 GB/s",
                          "reference_ratio": 0.8}
    assert passed_row(record) == PassedRow("test_d2h[n1-gpu0]", "44 GB/s", ">= 40 GB/s",
                                           "+10.0 % above required", "80 %")
    assert passed_row({"nodeid": "a.py::t", "measured": "2.4.0"}) == PassedRow(
        "t", "2.4.0", "", "", "")


def test_a_reference_is_named_without_the_cases_ratio() -> None:
    assert reference_named({"reference": "93 % of the 794.5 TFLOPS measured by mamf-finder; "
                                         "80 % of the 989 TFLOPS dense peak"}) == (
        "794.5 TFLOPS measured by mamf-finder; 989 TFLOPS dense peak")
    assert reference_named({}) == ""


def test_a_benchmark_record_has_a_sweep_and_a_node_count() -> None:
    bench: ResultLine = {"spec_key": "interconnect.busbw[node_network]", "node_count": 4,
                         "raw": {"sweep": []}}
    assert is_benchmark(bench)
    assert not is_benchmark({**bench, "node_count": True})
    assert not is_benchmark({**bench, "raw": {"slowest": "n3"}})
    assert not is_benchmark({**bench, "spec_key": "interconnect.latency"})


@pytest.mark.parametrize("outcome", ["failed", "passed"])
def test_a_cell_without_a_node_is_not_in_the_matrix(outcome: str) -> None:
    found = matrix(["n1"], [{"node": None, "clause": "host.same_software.kernel",
                             "outcome": outcome}])
    assert found.cells == {}


def test_a_skipped_cell_says_why_as_its_case_does() -> None:
    """A case the kill switch skipped (--cluster-disable) is grey, its title why and until
    when; a skip that says nothing is 'skipped'."""
    disabled = cell_of(cast("ResultLine", {
        "node": "n1", "gpu": 0, "outcome": "skipped", "disabled": "gpus.row_remap",
        "message": "Skipped: disabled: misfires (OPS-1), until 2099-12-31"}))
    assert (disabled.css, disabled.text, disabled.title) == (
        "m-notrun", "s", "n1 gpu0: disabled: misfires (OPS-1), until 2099-12-31")
    assert cell_of(cast("ResultLine", {"node": "n1", "outcome": "skipped"})).title == \
        "n1: skipped"
