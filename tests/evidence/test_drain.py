"""The drain and taint lines: one shell command each, a comment where the node is no real
one, the reason cut at a clause."""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from typing import Any

import pytest

from pytest_cluster.evidence.drain import cut_reason, drain_command, drain_line, taint_line
from pytest_cluster.evidence.verdict import node_verdicts
from tests.evidence.test_verdict import PLAN, result


def test_drain_lines_of_a_simulated_cluster_are_comments() -> None:
    verdict = node_verdicts(["n1"], PLAN, [result("a::t[n1]", "n1", "failed",
                                                  message="Failed: [SIMULATED] n1 count")])[0]
    assert verdict.failures[0]["message"] == "[SIMULATED] n1 count"
    assert drain_line(verdict, "SIMULATED, not a real node").startswith(
        "# SIMULATED, not a real node: scontrol update NodeName=n1 State=DRAIN")


@pytest.mark.parametrize("mark", ["\n", "\r", "\u2028", "\x1b", "\u202e"])
def test_a_drain_line_is_one_line_whatever_its_reason_holds(mark: str) -> None:
    """A reason with a line break (a clause name, a node's message) made the line a shell
    reads two, the second no comment: `sh` ran it from a simulated run's verdict.json."""
    verdict = node_verdicts(["n1"], PLAN, [result("a::t[n1]", "n1", "failed",
                                                  message="Failed: x")])[0]
    verdict = replace(verdict, reason=f"1 clause(s) failed: storage[/x{mark}touch /tmp/p #]")
    for why in ("SIMULATED, not a real node", None):
        line = drain_line(verdict, why)
        assert line.isprintable() and "touch /tmp/p" in line
        assert shlex.split(line, comments=True) == ([] if why else drain_command(verdict))


def test_drain_lines_of_this_machine_standing_for_the_nodes_are_comments() -> None:
    """In a local run every node is this machine: its drain line is no command to run."""
    from pytest_cluster.contract import parse_spec
    from pytest_cluster.evidence.tally import not_a_node

    local = parse_spec("cluster: {name: c, nodes: [localhost], launcher: local}\n"
                       "host: {cpu_cores: 1}\n", "t.yaml")
    ssh = parse_spec("cluster: {name: c, nodes: [n1], launcher: ssh}\nhost: {cpu_cores: 1}\n",
                     "t.yaml")
    verdict = node_verdicts(["n1"], PLAN, [result("a::t[n1]", "n1", "failed",
                                                  message="Failed: x")])[0]
    assert drain_line(verdict, not_a_node(local)).startswith(
        "# this machine stands for every node here, not a SLURM node: scontrol update "
        "NodeName=n1 State=DRAIN")
    assert not_a_node(ssh) is None
    # a prolog's run of its own node: the local launcher reaches it, but it is a real node
    from pytest_cluster.contract.narrow import narrow

    here = narrow(ssh, ["n1"], here=True)
    assert here.cluster.launcher == "local" and not_a_node(here) is None
    assert taint_line(verdict) == ("kubectl taint nodes n1 "
                                   "pytest-cluster/verdict=rejected:NoSchedule --overwrite")
    assert taint_line(verdict, not_a_node(local)).startswith("# this machine stands for ")


def test_a_drain_reason_of_many_clauses_is_cut_joining_one_list() -> None:
    """Issue 48: cutting tried every count of clauses, joining each (10,000 clauses took
    4.7 s, 150,000 hung, the run's drain lines too); it now joins the one list it keeps,
    counted here by the joins it makes (a profile hook: no clock)."""
    clauses = [f"storage[/s{i}].capacity" for i in range(20_000)]
    reason = f"{len(clauses)} clause(s) failed: {', '.join(clauses)}"
    joins = []

    def count(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call" and getattr(arg, "__name__", "") == "join":
            joins.append(arg)

    sys.setprofile(count)
    try:
        cut = cut_reason(reason, 180)
    finally:
        sys.setprofile(None)
    assert len(joins) <= 1
    kept = cut.removeprefix("20000 clause(s) failed: ").split(", and ")[0].split(", ")
    assert kept == clauses[:len(kept)] and cut.endswith(f", and {20_000 - len(kept)} more")
    assert len(cut) <= 180 < len(cut) + len(clauses[len(kept)]) + 2


def test_a_drain_reason_is_cut_at_a_clause_saying_how_many_more() -> None:
    clauses = [f"gpus.clause_number_{i}" for i in range(20)]
    reason = f"{len(clauses)} clause(s) failed: {', '.join(clauses)}"
    cut = cut_reason(reason, 120)
    assert len(cut) <= 120 and cut.startswith("20 clause(s) failed: gpus.clause_number_0,")
    kept = cut.removeprefix("20 clause(s) failed: ").split(", and ")[0].split(", ")
    assert kept == clauses[:len(kept)] and cut.endswith(f", and {20 - len(kept)} more")
    assert cut_reason(reason, 1000) == reason
    words = "the host probe did not answer in time " * 10
    assert cut_reason(words, 50).endswith("...") and len(cut_reason(words, 50)) <= 50
    assert not cut_reason(words, 50).removesuffix("...").endswith(("th", "ho"))
    verdict = node_verdicts(["n1"], PLAN, [result("a::t[n1]", "n1", "failed")])[0]
    verdict.reason = reason
    line = drain_line(verdict)
    assert "Reason=pytest-cluster rejected: 20 clause(s) failed:" in line
    assert line.rstrip("'").endswith(" more") and len(line.split("Reason=")[1]) <= 201
