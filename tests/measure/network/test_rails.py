"""measure/network/rails.py: each rail alone, its ceiling, and the search over the simulated
cluster's rails (a slow port named with its node, a port down never run on)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.errors import ClusterError
from pytest_cluster.measure import plausible
from pytest_cluster.measure.cluster import Cluster
from pytest_cluster.measure.network import fabric, perftest, rails
from pytest_cluster.measure.network.node_search import NOT_SEARCHED, SLOW
from tests.contract.sections.test_fabric import RAILS as SIM_RAILS
from tests.measure.network.test_fabric import port
from tests.measure.test_plausible import RAILS

#: ib_write_bw on each HCA port, its buffer in that rail's GPU; n3's mlx5_5 at half rate.
WRITE_BW = ("cluster: {name: rails, nodes: 'n[1-4]', launcher: sim}\n"
            "fabric: {rail_busbw: 350 Gb/s, rail_tool: ib_write_bw, rail_cuda: true}\n"
            "gpus: {model: H100-SXM-80GB, count: 8}\n"
            "sim:\n  gpus_per_node: 8\n  faults:\n    - {node: n3, nic: 5, nic_rate: 200 Gb/s}\n")


def test_a_rails_ceiling_is_its_wire_the_larger_rate_said_and_none_for_a_virtual_port() -> None:
    """A rail is bounded by the larger of the spec's rate per NIC and its port's own; a
    virtual port (veth, bridge: its kernel's speed is made up, its traffic may be a copy
    in memory) bounds nothing, nor does the spec's rate of other NICs (a real 4-node
    cluster over unshaped veth rails measured 2.3 Gb/s on a '10 Gb/s' veth beside NICs
    declared at 1 Gb/s: its healthy nodes were left undecided)."""
    spec = parse_spec(RAILS, "t.yaml")  # 400 Gb/s a NIC
    wire = 400e9 / 8
    device: Any = {"name": "mlx5_0", "virtual": False, "rate_gbit": 200}
    assert rails.rail_ceiling(spec, device) == plausible.CEILING_FACTOR * wire
    faster: Any = {**device, "rate_gbit": 800}
    assert rails.rail_ceiling(spec, faster) == plausible.CEILING_FACTOR * 800e9 / 8
    veth: Any = {"name": "rail1", "virtual": True, "rate_gbit": 10}
    assert rails.rail_ceiling(spec, veth) == math.inf
    bare = parse_spec(RAILS.replace("  inter_node: {kind: infiniband, nics_per_node: 8, "
                                    "rate_per_nic: 400 Gb/s}\n", "").replace(
        '">= 80%"', '">= 1 GB/s"'), "t.yaml")
    unread: Any = {**device, "rate_gbit": None}
    assert rails.rail_ceiling(bare, unread) == math.inf
    assert rails.rail_ceiling(bare, device) == plausible.CEILING_FACTOR * 200e9 / 8


def named(found: rails.RailSearches, status: str) -> dict[str, list[str]]:
    """Per rail, the nodes its search gave `status` (only the rails with some)."""
    return {rail: search.named(status) for rail, search in found.searches.items()
            if search.named(status)}


def test_each_rail_alone_names_the_slow_port_with_its_node(tmp_path: Path) -> None:
    """SIM_RAILS: n3's mlx5_5 at half rate, n2's mlx5_1 down. Every port name is searched
    alone, its all_reduce bound to that port; n3 is slow on mlx5_5 only, and n2 runs no
    job on mlx5_1 (seen down at the run's start), named with why."""
    cluster = Cluster(parse_spec(SIM_RAILS, "t.yaml"), tmp_path)
    interconnect = cluster.spec.interconnect
    assert interconnect is not None and interconnect.inter_node is not None
    found = rails.search(cluster)
    nics = interconnect.inter_node.count
    assert list(found.searches) == [f"mlx5_{i}/1" for i in range(nics)]
    assert (found.errors, found.unread, found.tool) == ({}, {}, "all_reduce")
    assert named(found, SLOW) == {"mlx5_5/1": ["n3"]}
    assert named(found, NOT_SEARCHED) == {"mlx5_1/1": ["n2"]}
    assert found.searches["mlx5_1/1"].not_searched == {"n2": fabric.DOWN_WHY.format(
        port="mlx5_1/1", node="n2", state="DOWN, Disabled", seen=fabric.AT_START)}
    assert found.bound["mlx5_5/1"] == {"env": [["GLOO_SOCKET_IFNAME", "ibp5s0"]]}
    assert found.searches["mlx5_5/1"].simulated
    assert rails.searches(cluster) is rails.searches(cluster)  # once per process


def test_each_rail_by_ib_write_bw_runs_perftest_on_its_port_and_gpu(tmp_path: Path) -> None:
    cluster = Cluster(parse_spec(WRITE_BW, "t.yaml"), tmp_path)
    found = rails.search(cluster)
    assert named(found, SLOW) == {"mlx5_5/1": ["n3"]}
    assert found.tool == "ib_write_bw" and found.payload == perftest.MESSAGE
    assert found.bound["mlx5_5/1"] == {"command": perftest.command("ib_write_bw", "mlx5_5", 1,
                                                                   cuda=5)}
    assert found.method.startswith("ib_write_bw -s 1 MiB -D 5 s on one HCA port at a time")
    with pytest.raises(ValueError, match="eno1 is not an RDMA port: ib_write_bw needs one"):
        rails.runner(cluster, port("eno1", "net"), 0, perftest.MESSAGE)


def test_a_port_read_down_after_a_failed_job_is_run_on_no_more(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rails.recheck reads the NIC afresh: n2's mlx5_1 is down, said as seen after a
    failure; a port that is up, or a launcher that fails, names nobody."""
    cluster = Cluster(parse_spec(SIM_RAILS, "t.yaml"), tmp_path)
    assert rails.recheck(cluster, "mlx5_1/1", ["n1", "n2"]) == {"n2": fabric.DOWN_WHY.format(
        port="mlx5_1/1", node="n2", state="DOWN, Disabled", seen=fabric.AFTER_FAILURE)}
    assert rails.recheck(cluster, "mlx5_0/1", ["n1", "n2"]) == {}

    def refuses(*args: object) -> object:
        raise ClusterError("ssh: connection refused")

    monkeypatch.setattr(cluster.launcher, "run", refuses)
    assert rails.recheck(cluster, "mlx5_1/1", ["n1", "n2"]) == {}


def test_why_a_groups_job_failed_is_kept_by_its_sorted_nodes() -> None:
    found = rails.RailSearches({}, {}, {}, {}, 2**30, 1.0,
                               failed={"mlx5_0/1": {"n1,n2": "n2 rank 1 exited with code 1"}})
    assert found.why_failed("mlx5_0/1", ["n2", "n1"]) == "n2 rank 1 exited with code 1"
    assert found.why_failed("mlx5_0/1", ["n1", "n3"]) == found.why_failed("mlx5_9/1",
                                                                           ["n1", "n2"]) == ""
