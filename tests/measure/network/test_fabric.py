"""measure/network/fabric.py: which ports a node's NIC answer counts, what grew or went down
between two readings, and the environment that binds a rail's jobs to one port."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import pytest

from pytest_cluster.measure.network import fabric

if TYPE_CHECKING:
    from pytest_cluster.probes.nic import Port


def port(name: str, kind: str = "rdma", **fields: Any) -> Port:
    return cast("Port", {"name": name, "device": name.split("/", maxsplit=1)[0], "kind": kind,
                         "virtual": False, "active": True, **fields})


def test_the_counted_ports_are_rdma_else_devices_else_the_glob() -> None:
    ib = [port("mlx5_0/1"), port("mlx5_1/1")]
    eth = [port("eno1", "net"), port("veth3", "net", virtual=True)]
    assert [p["name"] for p in fabric.counted(ib + eth, None)] == ["mlx5_0/1", "mlx5_1/1"]
    assert [p["name"] for p in fabric.counted(eth, None)] == ["eno1"]
    assert [p["name"] for p in fabric.counted(ib + eth, "veth*")] == ["veth3"]
    assert [p["name"] for p in fabric.counted(ib + eth, "mlx5_1")] == ["mlx5_1/1"]
    assert fabric.inactive([port("mlx5_3/1", active=False, state="DOWN",
                                 phys_state="Polling")]) == ["mlx5_3/1 (DOWN, Polling)"]
    assert fabric.grown([port("mlx5_0/1", counters={"link_downed": 1, "symbol_error": 3}),
                         port("eno1", "net", counters={"carrier_changes": 4})],
                        [port("mlx5_0/1", counters={"link_downed": 3, "symbol_error": 90}),
                         port("eno1", "net", counters={"carrier_changes": 2}),
                         port("mlx5_9/1", counters={"link_downed": 5})]) == [
        "mlx5_0/1: link_downed 1 -> 3"]  # symbol errors recorded; a reset or a new port
    assert fabric.symbol_rates(
        [port("a/1", counters={"symbol_error": 3}), port("b/1", counters={"symbol_error": 50}),
         port("c/1", counters={}), port("d/1", counters={"symbol_error": 1})],
        [port("a/1", counters={"symbol_error": 93}), port("b/1", counters={"symbol_error": 4}),
         port("c/1", counters={"symbol_error": 7}), port("e/1", counters={"symbol_error": 2})],
        60.0) == {"a/1": (90, 1.5), "b/1": (4, 4 / 60)}  # b/1 was reset: counts from 0
    assert fabric.firmware([port("mlx5_0/1", firmware="1.2"), port("mlx5_1/1", firmware="1.3"),
                            port("mlx5_2/1", firmware="1.3")]) == \
        "1.2 (mlx5_0), 1.3 (mlx5_[1-2])"


def test_a_rail_is_bound_by_the_environment_its_backend_reads() -> None:
    """NCCL over an HCA port: that port alone (exact match); NCCL over an interface: that
    socket interface with IB off; gloo: the port's interface, or why it has none."""
    hca = port("mlx5_3/1", port=1, netdev="ibp3s0")
    assert fabric.rail_env(hca, "nccl") == (("NCCL_IB_HCA", "=mlx5_3:1"),)
    assert fabric.rail_env(hca, "gloo") == (("GLOO_SOCKET_IFNAME", "ibp3s0"),)
    eth = port("rail2", "net", netdev="rail2")
    assert fabric.rail_env(eth, "nccl") == (("NCCL_SOCKET_IFNAME", "=rail2"),
                                            ("NCCL_IB_DISABLE", "1"))
    assert fabric.rail_env(eth, "gloo") == (("GLOO_SOCKET_IFNAME", "rail2"),)
    with pytest.raises(ValueError, match="mlx5_0/1 has no network interface for gloo"):
        fabric.rail_env(port("mlx5_0/1", port=1, netdev=None), "gloo")
    # every port name any node has, in the order first seen, with the first node's port
    found = fabric.rails({"a": [port("mlx5_1/1"), port("mlx5_0/1")],
                          "b": [port("mlx5_0/1", netdev="x"), port("mlx5_2/1")]})
    assert list(found) == ["mlx5_1/1", "mlx5_0/1", "mlx5_2/1"]
    assert "netdev" not in found["mlx5_0/1"]


def test_a_port_seen_down_is_named_with_its_node_and_who_saw_it() -> None:
    """The rail search's reason for running no job on a port down (fabric.down_on): per
    node whose port of that name is not active; a node without the port is not down."""
    ports = {"a": [port("mlx5_0/1"), port("mlx5_1/1", active=False, state="DOWN",
                                          phys_state="Disabled")],
             "b": [port("mlx5_1/1")], "c": [port("mlx5_0/1")],
             "d": [port("rail2", "net", active=False, state="down")]}
    assert fabric.down_on(ports, "mlx5_1/1") == {
        "a": "port mlx5_1/1 on a is down (DOWN, Disabled), seen by the NIC probe at the "
             "run's start (fabric.ports): not run on it"}
    assert fabric.down_on(ports, "rail2", fabric.AFTER_FAILURE) == {
        "d": "port rail2 on d is down (down), seen by the NIC probe after a job on it "
             "failed: not run on it again"}
    assert fabric.down_on(ports, "mlx5_0/1") == {}
    # the port that binds a rail's jobs: an active one, where a node has one
    assert fabric.rails(ports)["mlx5_1/1"] is ports["b"][0]


def link(gen: object, width: object, max_gen: object = 5, max_width: object = 16) -> Any:
    return {"gen": gen, "max_gen": max_gen, "width": width, "max_width": max_width,
            "speed": None, "max_speed": None}


def test_a_pcie_link_below_its_maximum_is_named_with_both_each_device_once() -> None:
    found = fabric.pcie_links([
        port("mlx5_0/1", pci="0000:1a:00.0", pcie=link(5, 16)),
        port("mlx5_0/2", pci="0000:1a:00.0", pcie=link(5, 16)),  # the same card
        port("mlx5_4/1", pci="0000:4a:00.0", pcie=link(5, 8)),
        port("mlx5_6/1", pci="0000:6a:00.0", pcie=link(4, 16)),
        port("mlx5_7/1", pcie=link(3, 4, 3, 4))])  # no address: a device of its own
    assert found.below == ("mlx5_4/1 PCIe Gen5 x8, can do Gen5 x16",
                           "mlx5_6/1 PCIe Gen4 x16, can do Gen5 x16")
    assert (found.unread, found.devices) == ((), 4)
    assert found.measured == ("Gen5 x16 of Gen5 x16 (mlx5_0), Gen5 x8 of Gen5 x16 (mlx5_4), "
                              "Gen4 x16 of Gen5 x16 (mlx5_6), Gen3 x4 of Gen3 x4 (mlx5_7)")
    assert fabric.pcie_links([port("mlx5_0/1", pcie=link(5, 16))]).below == ()


def test_a_pcie_link_not_read_is_said_with_why_never_at_its_maximum() -> None:
    speed = "/sys/class/infiniband/mlx5_1/device/current_link_speed"
    found = fabric.pcie_links([
        port("mlx5_0/1", pcie=None),  # no PCI Express device
        port("mlx5_1/1", pcie=link(None, 16), unreadable={
            speed: "'Unknown': the kernel cannot tell the link's speed"}),
        port("mlx5_2/1", pcie=link(5, 99)),  # no link has 99 lanes: the node's claim
        port("mlx5_3/1", pcie=link(True, 16)),  # a bool is no generation
        port("mlx5_4/1", pcie="Gen5"),  # not a link
        port("mlx5_5/1", pcie=link(None, 8))])  # narrow: below, whatever its speed
    assert found.unread == (
        "mlx5_0/1: no PCI Express device (a virtual port has none)",
        f"mlx5_1/1: no PCIe gen ({speed}: 'Unknown': the kernel cannot tell the link's "
        "speed)",
        "mlx5_2/1: no PCIe width", "mlx5_3/1: no PCIe gen",
        "mlx5_4/1: no PCIe link (the node reported 'Gen5')")
    assert found.below == ("mlx5_5/1 PCIe Gen? x8, can do Gen5 x16",)
    assert fabric.pcie_links([]).measured == "no PCIe link read"


def test_an_interface_with_no_pci_device_is_left_out_an_rdma_port_without_one_is_not_read(
        ) -> None:
    """A veth, a bond, a VLAN (a net port with no PCI device) has no PCIe link of its own:
    left out, neither passed nor failed, as a VF; an RDMA port with none is not read (every
    RDMA device is a card's: its tree is odd)."""
    veths = fabric.pcie_links([port(f"eth{i}", "net", pcie=None) for i in range(2)])
    assert (veths.below, veths.unread, veths.judged, veths.no_device) == (
        (), (), 0, ("eth0", "eth1"))
    assert veths.left_out == ("eth[0-1] have no PCI device (virtual interfaces: a veth, a "
                              "bond, a VLAN): no PCIe link of their own")
    mixed = fabric.pcie_links([port("eno1", "net", pcie=link(4, 16, 4, 16)),
                               port("bond0", "net", pcie=None),
                               port("mlx5_0/1", pcie=None)])
    assert mixed.judged == 2 and mixed.no_device == ("bond0",)  # eno1, and mlx5_0 unread
    assert mixed.unread == ("mlx5_0/1: no PCI Express device (a virtual port has none)",)


def test_a_virtual_functions_link_is_left_out_neither_passed_nor_failed() -> None:
    vf = {**link(None, None, None, None), "virtual_function": True}
    every = fabric.pcie_links([port(f"mlx5_ib{i}/1", pcie=vf) for i in range(8)])
    assert (every.below, every.unread, every.links, every.judged) == ((), (), {}, 0)
    assert every.left_out == ("mlx5_ib[0-7] are SR-IOV virtual functions: their PCIe link is "
                              "the host's, which a VM cannot read")
    # mixed: the physical ones judged, the VF said; a VF's narrow figures blame nothing
    mixed = fabric.pcie_links([
        port("mlx5_0/1", pcie=link(5, 8)), port("mlx5_1/1", pcie=link(5, 16)),
        port("mlx5_2/1", pcie={**link(5, 4), "virtual_function": True}),
        port("mlx5_3/1", pcie={**link(5, 16), "virtual_function": None})])  # physfn odd
    assert mixed.below == ("mlx5_0/1 PCIe Gen5 x8, can do Gen5 x16",)
    assert (mixed.virtual, mixed.judged, mixed.devices) == (("mlx5_2",), 3, 4)
    assert mixed.left_out == ("mlx5_2 is an SR-IOV virtual function: its PCIe link is the "
                              "host's, which a VM cannot read")
    assert fabric.pcie_links([port("mlx5_0/1", pcie=link(5, 16))]).left_out == ""
