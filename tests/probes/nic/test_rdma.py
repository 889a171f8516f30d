"""probes/nic/rdma.py: the RDMA ports (InfiniBand, RoCE), `<sysfs>/class/infiniband/DEV/ports/N`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_cluster.probes.nic import rdma
from pytest_cluster.probes.nic.sysfs import Budget, Reader

if TYPE_CHECKING:
    from pytest_cluster.probes.nic.payload import DeviceFacts

DEVICE = "class/infiniband/mlx5_0"
PORT = f"{DEVICE}/ports/1"


def reader_of(root: Path, files: dict[str, str]) -> Reader:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    return Reader(str(root))


def test_a_numbered_state_is_its_name() -> None:
    assert rdma.numbered("4: ACTIVE") == "ACTIVE"
    assert rdma.numbered("5: LinkUp") == "LinkUp"
    assert rdma.numbered("ACTIVE") == "ACTIVE"  # as it is, when not numbered
    assert rdma.numbered("1234: X") == "1234: X"
    assert rdma.numbered(None) is None


@pytest.mark.parametrize(("raw", "rate"), [
    ("400 Gb/sec (4X NDR)", 400.0), ("2.5 Gb/sec (1X SDR)", 2.5),
    ("53.125 Gb/sec (1X HDR)", 53.125)])
def test_a_rate_is_the_gbit_the_kernel_wrote(raw: str, rate: float) -> None:
    missing: dict[str, str] = {}
    assert rdma.rate_gbit(raw, "/r", missing) == rate
    assert missing == {}


@pytest.mark.parametrize("raw", ["fast", "400 Mb/sec", "Gb/sec", "1234567 Gb/sec",
                                 "-400 Gb/sec", "9" * 200])
def test_a_rate_that_is_none_is_named_never_guessed(raw: str) -> None:
    missing: dict[str, str] = {}
    assert rdma.rate_gbit(raw, "/r", missing) is None
    assert missing == {"/r": f"not a rate: {raw[:40]!r}"}
    assert rdma.rate_gbit(None, "/r", {}) is None


def test_a_port_is_read_as_the_abi_writes_it(tmp_path: Path) -> None:
    reader = reader_of(tmp_path, {
        f"{PORT}/state": "4: ACTIVE", f"{PORT}/phys_state": "5: LinkUp",
        f"{PORT}/rate": "400 Gb/sec (4X NDR)", f"{PORT}/link_layer": "InfiniBand",
        f"{PORT}/lid": "0x1a", f"{PORT}/gids/0": "fe80:0000:0000:0000:a088:c203:0012:3456",
        f"{PORT}/counters/symbol_error": "3", f"{PORT}/counters/link_downed": str(2**70),
        f"{PORT}/counters/port_xmit_data": "999", f"{PORT}/hw_counters/out_of_buffer": "5",
        f"{PORT}/hw_counters/lifespan": "10"})
    facts: DeviceFacts = {
        "firmware": "28.39.1002", "board_id": "MT_0000000838", "hca_type": "MT4129",
        "node_guid": "a088:c203:0012:3456", "sys_image_guid": None, "pci": "0000:3a:00.0",
        "pcie": {"gen": 5, "max_gen": 5, "width": 16, "max_width": 16,
                 "speed": "32.0 GT/s PCIe", "max_speed": "32.0 GT/s PCIe",
                 "virtual_function": False},
        "netdevs": ["ib0"]}
    port = rdma.rdma_port(reader, "mlx5_0", "1", facts)
    assert port == {
        "name": "mlx5_0/1", "device": "mlx5_0", "port": 1, "kind": "rdma", "state": "ACTIVE",
        "phys_state": "LinkUp", "active": True, "rate_gbit": 400.0,
        "rate_text": "400 Gb/sec (4X NDR)", "link_layer": "InfiniBand", "lid": "0x1a",
        "gid": True, "netdev": None, "mtu": None, **facts, "virtual": False,
        "counters": {"symbol_error": 3, "out_of_buffer": 5},
        "unreadable": {str(tmp_path / f"{PORT}/counters/link_downed"): (
            f"not a number: {str(2**70)!r} (expected a whole number of at most 20 digits, "
            "or 0x and 16)")}}


def test_a_port_down_with_no_address_is_neither_active_nor_addressed(tmp_path: Path) -> None:
    reader = reader_of(tmp_path, {f"{PORT}/state": "1: DOWN", f"{PORT}/phys_state": "2: Polling",
                                  f"{PORT}/gids/0": ":".join(["0000"] * 8)})
    facts = rdma.device_facts(reader, reader.path(DEVICE), {})
    port = rdma.rdma_port(reader, "mlx5_0", "1", facts)
    assert (port["active"], port["gid"], port["rate_gbit"]) == (False, False, None)
    assert port["unreadable"][str(tmp_path / f"{PORT}/rate")] == "not present"


def test_a_ports_interface_is_gid_0s_else_the_devices_of_its_dev_port(tmp_path: Path) -> None:
    reader = reader_of(tmp_path, {
        f"{PORT}/gid_attrs/ndevs/0": "eth2",
        f"{DEVICE}/ports/2/state": "4: ACTIVE",
        f"{DEVICE}/device/net/ib0/dev_port": "0", f"{DEVICE}/device/net/ib1/dev_port": "1",
        "class/net/eth2/mtu": "4200"})
    missing: dict[str, str] = {}
    assert rdma.netdev_of(reader, "mlx5_0", "1", missing) == "eth2"
    assert rdma.netdev_of(reader, "mlx5_0", "2", missing) == "ib1"
    assert rdma.netdev_of(reader, "mlx5_0", "3", missing) is None
    assert missing == {}
    assert rdma.rdma_port(reader, "mlx5_0", "1",
                          rdma.device_facts(reader, reader.path(DEVICE), {}))["mtu"] == 4200


def test_an_interface_named_out_of_the_tree_is_refused(tmp_path: Path) -> None:
    reader = reader_of(tmp_path, {f"{PORT}/gid_attrs/ndevs/0": "../../etc"})
    missing: dict[str, str] = {}
    assert rdma.netdev_of(reader, "mlx5_0", "1", missing) is None
    assert missing == {str(tmp_path / f"{PORT}/gid_attrs/ndevs/0"):
                       "not an interface name: '../../etc'"}


def test_a_devices_facts_are_read_once_and_named_when_missing(tmp_path: Path) -> None:
    reader = reader_of(tmp_path, {f"{DEVICE}/fw_ver": "28.39.1002",
                                  f"{DEVICE}/hca_type": "MT4129"})
    for index in range(rdma.MAX_NETDEVS + 2):
        (tmp_path / f"{DEVICE}/device/net/ib{index:02d}").mkdir(parents=True)
    (tmp_path / f"{DEVICE}/device/net/bad name").mkdir()
    unread: dict[str, str] = {}
    facts = rdma.device_facts(reader, reader.path(DEVICE), unread)
    assert (facts["firmware"], facts["hca_type"], facts["board_id"]) == (
        "28.39.1002", "MT4129", None)
    assert facts["netdevs"] == [f"ib{index:02d}" for index in range(rdma.MAX_NETDEVS)]
    assert sorted(unread) == sorted(str(tmp_path / DEVICE / name) for name in (
        "board_id", "node_guid", "sys_image_guid"))


def test_the_ports_read_are_numbered_ones_within_the_budget(tmp_path: Path) -> None:
    for name in ("1", "2", "3", "x", "1000"):
        (tmp_path / f"{DEVICE}/ports/{name}").mkdir(parents=True)
    reader = Reader(str(tmp_path))
    budget = Budget(2)
    assert rdma.port_names(reader, reader.path(DEVICE), budget) == ["1", "2"]
    assert (budget.left, budget.left_out) == (0, 1)
    ports = str(tmp_path / f"{DEVICE}/ports")
    assert reader.skipped == {f"{ports}/1000": "not a port number (1 to 3 digits)",
                              f"{ports}/x": "not a port number (1 to 3 digits)"}


def test_every_devices_ports_are_read_with_the_devices_unread_facts(tmp_path: Path) -> None:
    reader = reader_of(tmp_path, {
        f"{PORT}/state": "4: ACTIVE", "class/infiniband/mlx5_1/ports/1/state": "1: DOWN",
        "class/infiniband/mlx5_1/ports/2/state": "1: DOWN"})
    (tmp_path / "class/infiniband/noports").mkdir()
    (tmp_path / "class/infiniband/bad name/ports/1").mkdir(parents=True)
    found = rdma.rdma_ports(reader, Budget())
    assert [port["name"] for port in found] == ["mlx5_0/1", "mlx5_1/1", "mlx5_1/2"]
    fw = str(tmp_path / "class/infiniband/mlx5_1/fw_ver")
    assert found[2]["unreadable"][fw] == "not present"
    assert reader.skipped == {str(tmp_path / "class/infiniband") + "/'bad name'":
                              "not a device name"}
