"""What a result line's error kind says of whom to blame."""

from __future__ import annotations

from pytest_cluster.evidence.blame import CONTROLLER_SIDE, NOT_BLAMING, culprits, judged
from pytest_cluster.evidence.sinks.results import ResultLine
from pytest_cluster.launchers.result import ErrorKind, ProbeResult


def test_the_verdicts_controller_side_kinds_are_the_launchers() -> None:
    assert {kind.value for kind in ErrorKind if kind.controller_side} == CONTROLLER_SIDE
    assert ProbeResult("n1", "host", None, ErrorKind.CONTROLLER).controller_side
    assert not ProbeResult("n1", "host", None, ErrorKind.UNREACHABLE).controller_side


def test_a_failure_of_a_kind_that_blames_no_node_is_not_judged() -> None:
    for kind in sorted(NOT_BLAMING):
        failed: ResultLine = {"outcome": "failed", "error_kind": kind}
        assert not judged(failed) and judged({**failed, "outcome": "passed"})
    assert judged({"outcome": "failed", "error_kind": "below_requirement"})


def test_the_culprits_are_the_nodes_the_hostlist_names_and_none_where_it_is_unreadable(
        ) -> None:
    assert culprits({"culprits": "n[1-3]"}) == ["n1", "n2", "n3"]
    assert culprits({"culprits": "n[3-"}) == [] and culprits({}) == []
