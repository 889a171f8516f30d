"""Where one node stands in the ping-pong (measure/network/placement.py): its median to its peers
against the median between the other nodes, and its own latency without the far peers."""

from __future__ import annotations

import json

import pytest

from pytest_cluster.measure.network import latency
from pytest_cluster.measure.network.placement import placement


def test_each_node_is_placed_against_the_median_between_the_others() -> None:
    links = [("a", "b", 8, 10e-6), ("a", "c", 8, 11e-6), ("b", "c", 8, 9e-6),
             ("a", "d", 8, 40e-6), ("b", "d", 8, 30e-6), ("c", "d", 8, 35e-6)]
    run = latency.LatencyRun(("a", "b", "c", "d"), "gloo", (8,), (0, 1, 2), 3, tuple(links))
    assert latency.LatencyRun.from_json(json.loads(json.dumps(run.to_json()))) == run
    far = placement(run, "d", 8, 1.5)
    assert far is not None and far.median_s == far.own_s == 35e-6 and far.peers == 3
    assert far.others_median_s == 10e-6  # a-b 10, a-c 11, b-c 9
    assert far.nearest == ("b", 30e-6) and far.farthest == ("a", 40e-6)
    assert far.text() == ("median 35.0 us to its 3 peer(s), 3.50 x the median between the "
                          "other nodes 10.0 us; nearest b 30.0 us, farthest a 40.0 us")
    near = placement(run, "b", 8, 1.5)
    assert near is not None and near.ratio is not None and near.ratio < 1.5
    assert near.far_peers == ("d",) and near.own_s == pytest.approx(9.5e-6)  # a 10, c 9
    assert run.matrix(8)[0] == [None, 10.0, 11.0, 40.0]


def test_of_three_nodes_one_far_the_far_one_alone_stands_out() -> None:
    """Two near nodes and one far: each near node's median over its two peers (one near,
    one far) is their mean, 6 us, as high as the far node's is over the near ones' 3 us
    (2 x); against the pair without it the far node stands out (3 x), a near one does not
    (0.67 x), and a near node's own latency leaves the far peer out (3 us). Two nodes:
    nothing to compare with."""
    links = [("a", "b", 8, 3e-6), ("a", "c", 8, 9e-6), ("b", "c", 8, 9e-6)]
    run = latency.LatencyRun(("a", "b", "c"), "gloo", (8,), (0, 1, 2), 3, tuple(links))
    assert run.far(8, 1.5) == {"c": 3.0}
    near = placement(run, "a", 8, 1.5)
    assert near is not None and near.median_s == 6e-6 and near.own_s == 3e-6
    assert near.ratio == pytest.approx(6 / 9) and near.far_peers == ("c",)
    far = placement(run, "c", 8, 1.5)
    assert far is not None and far.own_s == 9e-6 and far.ratio == 3.0 and not far.far_peers
    two = latency.LatencyRun(("a", "b"), "gloo", (8,), (0,), 1, (("a", "b", 8, 9e-6),))
    only = placement(two, "a", 8, 1.5)
    assert only is not None and only.ratio is None and only.others_median_s is None
    assert two.far(8, 1.5) == {}
