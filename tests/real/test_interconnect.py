"""Real components (network namespaces with sshd, SLURM) for
tests/contract/sections/test_interconnect.py:
the same checks on real parts; its unit tests stay there."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.conftest import has_torch
from tests.contract.sections.test_interconnect import (
    LATENCY_ON_NETNS,
    _latency_cases,
    jsonl,
    node_down,
)
from tests.netns_cluster import NetnsCluster, shaped_interconnect_spec


@pytest.mark.realcomponents
@pytest.mark.parametrize("kind", ["ssh", "slurm"])
def test_shaped_links_pass_and_a_slow_node_is_named(pytester: pytest.Pytester,
                                                    slurm: NetnsCluster, kind: str) -> None:
    netns = slurm
    if not has_torch():
        pytest.skip("needs torch on the nodes")
    (pytester.path / "t.yaml").write_text(shaped_interconnect_spec(netns, kind))
    try:
        for node in netns.nodes:
            netns.shape(node, "1gbit")
        result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
        result.assert_outcomes(passed=2 + 4)
        for record in jsonl(pytester):
            if "inter_node" in record["nodeid"]:  # >= 0.85 x 0.125 GB/s, the bar
                assert record["measured_base"] >= 0.85 * 0.125e9, record
                # gloo's interface and address, per rank: each node's eth0
                assert record["transport"].startswith("gloo eth0 10."), record["transport"]
                gloo = record["raw"]["details"]["transport"]["gloo"]
                assert len(gloo) == record["node_count"]  # a rank per node, each its own
        netns.shape("node3", "250mbit")
        result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
    finally:
        for node in netns.nodes:
            netns.shape(node, None)
    # node1 + node2 keep their 1 Gbit/s; the 4-node ring runs at node3's pace; the
    # search names node3 alone
    result.assert_outcomes(passed=1 + 3, failed=2)
    failed = {r["nodeid"].split("::")[1]: r["message"] for r in jsonl(pytester)
              if r["outcome"] == "failed"}
    assert sorted(failed) == ["test_collective_inter_node[all_reduce-16MiB-4nodes]",
                              "test_node_network[node3]"]
    message = failed["test_node_network[node3]"]
    assert message.startswith("Failed: node3 busbw[node_network]: measured ")
    assert "so this node is the slow one" in message


@pytest.mark.realcomponents
def test_a_dead_node_fails_its_own_cases_and_the_rest_go_on(pytester: pytest.Pytester,
                                                            netns: NetnsCluster) -> None:
    """node4's sshd stopped: the jobs that need it leave it out at once, saying why (not
    after the other ranks' rendezvous timeout), and the all-reduce of four nodes is
    measured over the other three, never a pass; node3, paired with it first, is cleared
    by the search with a known-good partner."""
    if not has_torch():
        pytest.skip("needs torch on the nodes")
    (pytester.path / "t.yaml").write_text(shaped_interconnect_spec(netns, "ssh"))
    try:  # the spec's 1 Gb/s links: unshaped veth carries more than its ceiling of twice it
        for node in netns.nodes:
            netns.shape(node, "1gbit")
        with netns.sshd_stopped("node4"):
            result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
    finally:
        for node in netns.nodes:
            netns.shape(node, None)
    result.assert_outcomes(passed=1 + 3, failed=2)
    failed = {r["nodeid"].split("::")[1]: r["message"] for r in jsonl(pytester)
              if r["outcome"] == "failed"}
    assert sorted(failed) == ["test_collective_inter_node[all_reduce-16MiB-4nodes]",
                              "test_node_network[node4]"]
    # measured over the three that answer, node4 named: never a pass of four nodes
    four = failed["test_collective_inter_node[all_reduce-16MiB-4nodes]"]
    assert four.startswith("Failed: 4 nodes (node1..node4) busbw[inter_node]: "), four
    assert "measured over 3 of 4 nodes (node4 did not answer: " in four, four
    assert "ssh: connection refused (no sshd?)" in four, four
    assert failed["test_node_network[node4]"].startswith(
        "Failed: node4: host probe unreachable: ssh: connection refused (no sshd?)")


@pytest.mark.realcomponents
@pytest.mark.parametrize("fault", ["sshd", "link"])
def test_a_dead_node_never_makes_a_healthy_node_the_slow_one(
        pytester: pytest.Pytester, netns: NetnsCluster, fault: str) -> None:
    """The tester's case: node1 dead (sshd stopped, or its link down) and node3 slow.
    node1 is left out of the search (its host probe failed) and fails alone; node3 is
    named against a known-good partner; node2 and node4 pass."""
    if not has_torch():
        pytest.skip("needs torch on the nodes")
    (pytester.path / "t.yaml").write_text(shaped_interconnect_spec(netns, "ssh"))
    try:
        for node in netns.nodes:
            netns.shape(node, "250mbit" if node == "node3" else "1gbit")
        with node_down(netns, "node1", fault):
            result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider",
                                        "-k", "node_network")
    finally:
        for node in netns.nodes:
            netns.shape(node, None)
    outcomes = {r["nodeid"].split("::")[1]: r for r in jsonl(pytester)}
    assert {case: r["outcome"] for case, r in outcomes.items()} == {
        "test_node_network[node1]": "failed", "test_node_network[node2]": "passed",
        "test_node_network[node3]": "failed", "test_node_network[node4]": "passed"}
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert outcomes["test_node_network[node1]"]["message"].startswith(
        "Failed: node1: host probe unreachable: ssh: ")
    message = outcomes["test_node_network[node3]"]["message"]
    assert message.startswith("Failed: node3 busbw[node_network]: measured ")
    assert ("reached the bar with other nodes, so this node is the slow one; left out of "
            "the search: node1 (probes failed)") in message
    found = outcomes["test_node_network[node2]"]["raw"]["search"]  # recorded once, by id
    search = json.loads((pytester.path / "reports" / "latest" / found["file"]).read_text())
    assert search["not_searched"]["node1"].startswith("host probe unreachable: ssh: ")
    assert all("node1" not in group for round_ in search["rounds"] for group, _ in round_)


@pytest.mark.realcomponents
def test_a_node_behind_a_delay_is_named_by_colocation(pytester: pytest.Pytester,
                                                      netns: NetnsCluster) -> None:
    """The ping-pong between the namespace nodes over gloo, every link delayed 2 ms each
    way (tc netem, or where the kernel has none a delay line: NetnsCluster.delay), as a
    cluster's nodes are equally far from their switch: a pair's one-way time is its two
    links', 4 ms, not what this machine's 2 busy CPUs give each exchange (undelayed,
    healthy medians of 61 and 269 us in one CI run, a pair at 774 us, and two healthy
    nodes blamed). The healthy run passes; with node4's link delayed 8 ms, node4 alone is
    farther from its peers than the rest (10 ms, 2.5 x), and alone over the latency
    bound."""
    if not has_torch():
        pytest.skip("needs torch on the nodes")
    (pytester.path / "t.yaml").write_text(LATENCY_ON_NETNS.format(
        python=sys.executable, section=netns.launcher_section("ssh"), bound="6 ms"))
    selected = ("-k", "test_latency or test_colocation")

    def played(far: float) -> tuple[pytest.RunResult, dict[str, dict[str, Any]]]:
        try:
            for node in netns.nodes:
                netns.delay(node, far if node == "node4" else 2)
            result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider",
                                        *selected)
        finally:
            for node in netns.nodes:
                netns.delay(node, None)
        cases = _latency_cases(pytester)
        print({name: (r["raw"]["median_us"], r["raw"]["others_median_us"])
               for name, r in cases.items() if name.startswith("test_latency")})
        return result, cases

    result, healthy = played(2)
    result.assert_outcomes(passed=8)
    record = healthy["test_latency[node1]"]
    assert record["unit"] == "ms" and len(record["raw"]["peers_us"]["8"]) == 3
    assert 4000 <= record["raw"]["median_us"] < 6000  # the two links' 2 ms, each way
    matrix = record["raw"]["matrix_us"]
    assert matrix["nodes"] == ["node1", "node2", "node3", "node4"]
    assert all(matrix["one_way"][i][i] is None for i in range(4))
    assert record["raw"]["run"]["rounds"] == 3  # every pair, in rounds of disjoint pairs
    result, delayed = played(8)
    result.assert_outcomes(passed=6, failed=2)
    failed = sorted(name for name, r in delayed.items() if r["outcome"] == "failed")
    assert failed == ["test_colocation[node4]", "test_latency[node4]"]
    message = delayed["test_colocation[node4]"]["message"]
    assert message.startswith("Failed: node4 colocation: farther from its peers than the "
                              "rest (another spine or switch?): 8 B: median "), message
    assert delayed["test_colocation[node4]"]["raw"]["median_us"] > 10000 * 0.9

