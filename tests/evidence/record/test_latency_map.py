"""latency_map.py: the latency cases' figures gathered one line at a time: the matrix and
its size, each node's median, the farthest node; a malformed matrix, a figure that is no
finite number or a line of another clause taken as nothing."""

from __future__ import annotations

from typing import Any

from pytest_cluster.evidence.record.latency_map import Farthest, LatencyMap, farthest_of
from tests.report.test_heatmap import gathered, latency_records


def test_the_matrix_the_medians_and_the_farthest_node_are_the_cases() -> None:
    records = latency_records(4, "n03", size=8)
    found = gathered(records)
    raw = records[0]["raw"]
    assert (found.size, found.run_file) == (8, "probes/interconnect-1.json")
    assert (found.matrix_nodes, found.one_way) == (
        tuple(raw["matrix_us"]["nodes"]), raw["matrix_us"]["one_way"])
    assert found.node_count == 4
    assert found.medians == {r["node"]: r["raw"]["median_us"] for r in records}
    far = next(r["raw"] for r in records if r["node"] == "n03")
    assert found.farthest() == Farthest("n03", far["median_us"], far["others_median_us"],
                                        far["ratio"])


def test_without_a_matrix_the_nodes_are_counted_from_the_runs_hostlist() -> None:
    records = latency_records(40, "n07", matrix=False)
    found = gathered(records)
    assert found.one_way is None and found.matrix_nodes == ()
    assert found.node_count == 40
    far = found.farthest()
    assert far is not None and far.node == "n07"


def test_a_hostlist_that_does_not_expand_counts_the_nodes_with_a_median() -> None:
    found = LatencyMap()
    for node in ("a", "b"):
        found.add({"spec_key": "interconnect.latency", "node": node,
                   "raw": {"run": {"nodes": "n[3-1]"}, "median_us": 2.0}})
    assert found.node_count == 2


def _one(raw: Any, spec_key: str = "interconnect.latency") -> LatencyMap:
    found = LatencyMap()
    found.add({"spec_key": spec_key, "node": "n1", "raw": raw})
    return found


def test_what_is_not_the_expected_shape_is_taken_as_nothing() -> None:
    for raw in ("text", None, [1], {"matrix_us": {"nodes": ["a", "b"], "one_way": [[None]],
                                                  "size": 8}},
                {"matrix_us": {"nodes": ["a"], "one_way": [[1.0]], "size": "8"}},
                {"median_us": float("nan")}, {"median_us": "2"}):
        found = _one(raw)
        assert (found.one_way, found.medians, found.farthest()) == (None, {}, None), raw
    assert _one({"median_us": 2.0}, "gpus.count").medians == {}


def test_a_matrix_figure_that_is_no_finite_number_is_not_measured() -> None:
    found = _one({"matrix_us": {"nodes": ["a", "b"], "size": 8,
                                "one_way": [[None, float("inf")], ["x", 1.5]]}})
    assert found.one_way == [[None, None], [None, 1.5]]
    assert found.size == 8  # the matrix's, where the case gave none


def test_of_equal_medians_the_first_by_name_is_the_farthest() -> None:
    assert farthest_of({"n2": 5.0, "n1": 5.0, "n3": 4.0}) == "n1"
    assert farthest_of({}) is None
