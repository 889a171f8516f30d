"""The cluster's verdict: the checks of several nodes that failed, each saying where, and
those that reject the cluster."""

from __future__ import annotations

from typing import Any, cast

from pytest_cluster.evidence.cluster_verdict import cluster_failures, cluster_verdict, decisive
from pytest_cluster.evidence.sinks.results import ResultLine
from pytest_cluster.evidence.verdict import node_verdicts
from tests.evidence.test_verdict import PLAN, result


def test_a_check_not_established_rejects_only_through_the_silent_node() -> None:
    """'The same on every node' with a busy node is not established: listed with its kind,
    but the cluster is INCOMPLETE (the busy node is NOT CHECKED), not REJECTED."""
    records = [result("a::t[n1]", "n1"), result("a::u[n1]", "n1"),
               result("a::t[n2]", "n2", "failed", message="Failed: n2: gpu probe busy",
                      error_kind="busy", probe="gpu"),
               result("a::all", None, "failed", error_kind="not_all_nodes",
                      message="Failed: kernel: 6.8 on n1; 1 of 2 node(s) did not answer (n2)")]
    verdicts = node_verdicts(["n1", "n2"], PLAN, records)
    failures = cluster_failures(records, ["n1", "n2"])
    assert [f["kind"] for f in failures] == ["not_all_nodes"] and decisive(failures) == []
    end = {"status": "complete"}
    assert cluster_verdict(end["status"], verdicts, len(decisive(failures))) == "INCOMPLETE"
    unreachable: list[ResultLine] = [*records[:2], {**records[2], "error_kind": "unreachable"},
                                     records[3]]
    verdicts = node_verdicts(["n1", "n2"], PLAN, unreachable)
    assert cluster_verdict(end["status"], verdicts, 0) == "REJECTED"


def test_each_cluster_failure_says_where_and_which_check_it_is() -> None:
    """A check across nodes names its collective and payload, its rail and round where the
    record has them; two that would still read alike name their cases' parameters."""
    def failed(case: str, **more: Any) -> ResultLine:
        return cast("ResultLine", {"type": "result", "case": case,
                                   "clause": "interconnect.busbw[inter_node]",
                                   "node": "4 nodes (n1..n4)", "outcome": "failed",
                                   "message": "Failed: slow", **more})

    records = [failed("a::t[all_reduce-4GiB-4nodes]", collective="all_reduce",
                      payload=4 * 2**30),
               failed("a::t[all_reduce-16GiB-4nodes]", collective="all_reduce",
                      payload=16 * 2**30, rail="mlx5_3", round=2),
               failed("a::t[x-4nodes]"), failed("a::t[y-4nodes]")]
    assert [f["where"] for f in cluster_failures(records, ["n1"])] == [
        "4 nodes (n1..n4), all_reduce 4 GiB",
        "4 nodes (n1..n4), all_reduce 16 GiB, rail mlx5_3, round 2",
        "4 nodes (n1..n4) [x-4nodes]", "4 nodes (n1..n4) [y-4nodes]"]
