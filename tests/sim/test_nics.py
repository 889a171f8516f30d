"""sim/nics.py: a simulated node's NICs; a port fault is on its node's port and nowhere
else, a rail is read from the job's environment."""

from __future__ import annotations

import json

import pytest

from pytest_cluster.contract.sections.sim_records import NICS_PER_NODE, SimFault, SimSpec
from pytest_cluster.sim.nics import (
    guid,
    network_share,
    nic_payload,
    perftest_ranks,
    port_gbit,
    rail_of,
    tree,
)

NODES = ("n1", "n2", "n3")
SIM = SimSpec("H100-SXM-80GB", 8, faults=(
    SimFault("n2", None, 1, nic=3, nic_down=True),
    SimFault("n3", None, 2, nic=5, nic_rate_gbit=200.0),
))


def test_a_port_fault_is_on_that_port_of_that_node_alone() -> None:
    rates = {(node, index): port_gbit(SIM, node, None, index)
             for node in NODES for index in range(NICS_PER_NODE)}
    assert [key for key, rate in rates.items() if rate != 400.0] == [("n2", 3), ("n3", 5)]
    assert rates["n2", 3] is None and rates["n3", 5] == 200.0
    assert port_gbit(SIM, "n1", None, NICS_PER_NODE) is None  # no such NIC


def test_a_nodes_network_share_counts_its_ports() -> None:
    assert network_share(SIM, None, "n1") == 1.0
    assert network_share(SIM, None, "n2") == pytest.approx((NICS_PER_NODE - 1) / NICS_PER_NODE)
    assert network_share(SIM, None, "n3") == pytest.approx(
        (NICS_PER_NODE - 1 + 0.5) / NICS_PER_NODE)


def test_the_down_port_reads_down_in_its_nodes_tree_only() -> None:
    down = {node: sorted(path for path, text in tree(SIM, node, None).items()
                         if path.endswith("/ports/1/state") and "DOWN" in text)
            for node in NODES}
    assert down == {"n1": [], "n2": [path for path in tree(SIM, "n2", None)
                                      if path.endswith("mlx5_3/ports/1/state")], "n3": []}


def test_a_narrow_or_slow_pcie_link_is_on_that_card_of_that_node_alone() -> None:
    """A healthy card's link is Gen5 x16 on its RDMA port and its interface; a fault
    trains one card's link narrower or slower, read by the probe's own parser."""
    sim = SimSpec("H100-SXM-80GB", 8, faults=(
        SimFault("n2", None, 1, nic=4, nic_pcie_width=8),
        SimFault("n3", None, 2, nic=6, nic_pcie_gen=4)))
    links = {(node, port["name"]): port["pcie"] for node in NODES
             for port in nic_payload(sim, node, None).get("ports", [])}
    best = {"gen": 5, "max_gen": 5, "width": 16, "max_width": 16,
            "speed": "32.0 GT/s PCIe", "max_speed": "32.0 GT/s PCIe",
            "virtual_function": False}
    odd = {key: link for key, link in links.items() if link != best}
    assert odd == {
        **{(node, "eno1"): {"gen": 4, "max_gen": 4, "width": 16, "max_width": 16,
                            "speed": "16.0 GT/s PCIe", "max_speed": "16.0 GT/s PCIe",
                            "virtual_function": False}
           for node in NODES},
        **{("n2", name): {**best, "width": 8} for name in ("mlx5_4/1", "ibp4s0")},
        **{("n3", name): {**best, "gen": 4, "speed": "16.0 GT/s PCIe"}
           for name in ("mlx5_6/1", "ibp6s0")}}


@pytest.mark.parametrize(("env", "rail"), [
    ((("NCCL_IB_HCA", "=mlx5_3:1"),), 3), ((("NCCL_IB_HCA", "mlx5_12"),), 12),
    ((("NCCL_SOCKET_IFNAME", "ibp5s0"),), 5), ((("GLOO_SOCKET_IFNAME", "enp2s0np0"),), 2),
    ((("NCCL_IB_HCA", "mlx5_1,mlx5_2"),), None), ((("OTHER", "mlx5_3"),), None), ((), None)])
def test_a_rail_is_the_nic_the_environment_binds(env: tuple[tuple[str, str], ...],
                                                 rail: int | None) -> None:
    assert rail_of(SimSpec("H100-SXM-80GB", 8), env) == rail


def test_a_node_named_as_azure_names_its_devices_binds_and_lists_those_names() -> None:
    azure = SimSpec("H100-SXM-80GB", 8, nic_prefix="mlx5_ib")
    assert rail_of(azure, (("NCCL_IB_HCA", "=mlx5_ib3:1"),)) == 3
    assert rail_of(azure, (("NCCL_IB_HCA", "=mlx5_3:1"),)) is None
    devices = {path.split("/")[5] for path in tree(azure, "n1", None)
               if path.startswith("/sim/sys/class/infiniband/")}
    assert devices == {f"mlx5_ib{i}" for i in range(NICS_PER_NODE)}


def test_each_nic_of_a_node_has_its_own_guid() -> None:
    digest = "0123456789abcdef"
    guids = [guid(digest, index) for index in range(NICS_PER_NODE)]
    assert len(set(guids)) == NICS_PER_NODE
    assert guids[10 % NICS_PER_NODE] == "0123:4567:89" + f"{10 % NICS_PER_NODE:02x}" + ":cdef"


def test_a_client_whose_port_is_down_cannot_reach_the_server() -> None:
    args = ["--argv", json.dumps(["ib_write_bw", "-d", "mlx5_3", "-D", "1"])]
    ranks = perftest_ranks(SIM, None, NODES, args)
    failed = [NODES[index] for index, (entry,) in enumerate(ranks)
              if entry["data"] is not None and entry["data"].get("exit_code") == 1]
    assert failed == ["n2"]


def test_a_virtual_nic_is_a_vf_as_a_vm_sees_it_on_that_node_alone() -> None:
    """`nic_virtual` makes a node's NICs (with `nic`, that one) SR-IOV virtual functions as
    a VM sees them, read by the probe's own parser: a VF's PCI ID, a link 'Unknown' x0."""
    sim = SimSpec("H100-SXM-80GB", 8, faults=(
        SimFault("n1", None, 1, nic_virtual=True),
        SimFault("n2", None, 2, nic=3, nic_virtual=True)))
    vfs = {(node, port["name"]) for node in NODES
           for port in nic_payload(sim, node, None).get("ports", [])
           if port["pcie"] is not None and port["pcie"]["virtual_function"]}
    every = {("n1", f"mlx5_{i}/1") for i in range(NICS_PER_NODE)} | {
        ("n1", f"ibp{i}s0") for i in range(NICS_PER_NODE)}
    assert vfs == every | {("n2", "mlx5_3/1"), ("n2", "ibp3s0")}
    port = next(p for p in nic_payload(sim, "n1", None).get("ports", [])
                if p["name"] == "mlx5_0/1")
    assert port["pcie"] == {"gen": None, "max_gen": None, "width": None, "max_width": None,
                            "speed": "Unknown", "max_speed": "Unknown",
                            "virtual_function": True}
