"""sim/pingpong.py: what the ping-pong's ranks print on simulated nodes; a far node's pairs
are slow, and only its pairs."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.sections.sim_records import SimFault, SimSpec
from pytest_cluster.sim.pingpong import BASE_S, one_way, pingpong_ranks, read_args

NODES = ("n1", "n2", "n3", "n4")
FAR = SimSpec("H100-SXM-80GB", 8, faults=(SimFault("n3", None, 1, latency_factor=10.0),))


@pytest.mark.parametrize("args", [["--sizes"], ["--rounds", "1"], ["--size", "8"],
                                  ["--sizes", "8", "--colour", "red"]])
def test_what_is_not_the_ping_pongs_arguments_is_refused(args: list[str]) -> None:
    with pytest.raises(ValueError, match=r"^not the ping-pong's arguments: "):
        read_args(args)


def test_only_the_pairs_with_the_far_node_take_longer() -> None:
    healthy = SimSpec("H100-SXM-80GB", 8)
    slower = {(a, b) for a in NODES for b in NODES if a < b
              and one_way(FAR, None, "nccl", a, b, 8) > 2 * one_way(healthy, None, "nccl", a, b, 8)}
    assert slower == {(a, b) for a in NODES for b in NODES if a < b and "n3" in (a, b)}


def test_the_backend_sets_the_start_up_cost() -> None:
    healthy = SimSpec("H100-SXM-80GB", 8)
    ratio = one_way(healthy, None, "gloo", "n1", "n2", 8) / one_way(healthy, None, "nccl",
                                                                     "n1", "n2", 8)
    assert ratio == pytest.approx(BASE_S["gloo"] / BASE_S["nccl"], rel=0.01)


def test_every_pair_is_measured_once_by_its_lower_rank() -> None:
    ranks = pingpong_ranks(FAR, None, NODES, ["--sizes", "8,1024", "--iterations", "7"])
    assert [entry["rank"] for (entry,) in ranks] == list(range(len(NODES)))
    pairs = [(index, pair["peer"]) for index, (entry,) in enumerate(ranks)
             for pair in (entry["data"] or {}).get("pairs", [])]
    assert sorted(pairs) == [(a, b) for a in range(len(NODES)) for b in range(a + 1, len(NODES))]
    first = ranks[0][0]["data"]
    assert first is not None
    assert first["pairs"][0]["sizes"]["1024"]["count"] == 7
