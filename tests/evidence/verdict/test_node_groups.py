"""node_groups.py: what nodes reported grouped by value, in one line for a person and as
hostlists for the evidence; the odd ones out of a "the same on every node" check."""

from __future__ import annotations

from pytest_cluster.evidence.verdict import node_groups


def test_version_summaries_stay_short_on_big_clusters() -> None:
    many = [f"n{i:02d}" for i in range(64)]
    assert node_groups.summary({"2.4.0": many}) == "2.4.0 on all 64 node(s)"
    assert node_groups.summary({"2.4.0": ["a", "b"]}) == "2.4.0 on a, b"
    assert node_groups.summary({"2.4.0": many[:63], "2.3.1": ["n63"]}) == (
        "2.4.0 on n[00-62]; 2.3.1 on n63")
    scattered = [f"gpu-{i:04d}" for i in range(0, 1024, 2)]
    odd = [f"gpu-{i:04d}" for i in range(1, 1024, 2)]
    assert node_groups.summary({"6.8": scattered, "6.9": odd}) == (
        "6.8 on 512 nodes (gpu-0000, gpu-0002, ...); 6.9 on 512 nodes (gpu-0001, gpu-0003, "
        "...)")
    each = {f"6.{i}": [f"gpu-{i:04d}"] for i in range(1024)}
    assert node_groups.summary(each) == (
        "6.0 on gpu-0000; 6.1 on gpu-0001; 6.2 on gpu-0002; 6.3 on gpu-0003; 6.4 on gpu-0004; "
        "6.5 on gpu-0005; and 1018 more values")


def test_same_on_all_nodes_evidence_names_nodes_as_hostlists() -> None:
    nodes = [f"gpu-{i:04d}" for i in range(1, 1025)]
    groups = {"2.21.5": [n for n in nodes if n not in ("gpu-0128", "gpu-0500")],
              "2.19.3": ["gpu-0500"]}
    raw = node_groups.evidence(groups, {"gpu-0128": "gpu-0128: host probe unreachable: down",
                                        "gpu-0129": "gpu-0129: host probe timeout"})
    assert raw == {"values": {"2.21.5": "gpu-[0001-0127,0129-0499,0501-1024]",
                              "2.19.3": "gpu-0500"},
                   "unanswered": {"host probe unreachable: down": "gpu-0128",
                                  "host probe timeout": "gpu-0129"}}
    dead = {n: f"{n}: host probe unreachable: down" for n in nodes[:512]}
    assert node_groups.evidence({}, dead) == {
        "values": {}, "unanswered": {"host probe unreachable: down": "gpu-[0001-0512]"}}


def test_the_odd_ones_are_the_nodes_outside_the_one_largest_group() -> None:
    assert node_groups.odd_ones({"2.4": ["n1", "n2", "n3"], "2.3": ["n4"], "2.2": ["n5"]}) == [
        "n4", "n5"]
    assert node_groups.odd_ones({"2.4": ["n1", "n2"], "2.3": ["n3", "n4"]}) == []  # no majority
    assert node_groups.odd_ones({"2.4": ["n1", "n2"]}) == []


def test_few_nodes_are_named_one_by_one() -> None:
    assert node_groups.nodes_text(["a", "b", "c", "d"]) == "a, b, c, d"
    assert node_groups.nodes_text(["n1", "n2", "n3", "n4", "n5"]) == "n[1-5]"
