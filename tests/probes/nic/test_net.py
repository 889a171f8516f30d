"""probes/nic/net.py: the network interfaces but the loopback, `<sysfs>/class/net/IF`."""

from __future__ import annotations

from pathlib import Path

from pytest_cluster.probes.nic import net
from pytest_cluster.probes.nic.sysfs import Budget, Reader


class Tree(Reader):
    """A tree whose interfaces answer ethtool with what `drivers` says."""

    def __init__(self, root: Path, files: dict[str, str],
                 drivers: dict[str, dict[str, str]] | None = None) -> None:
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + "\n", encoding="utf-8")
        super().__init__(str(root))
        self.drivers = drivers or {}
        self.asked: list[str] = []

    def drvinfo(self, name: str) -> dict[str, str]:
        self.asked.append(name)
        return self.drivers.get(name, {"error": f"ethtool drvinfo of {name}: No such device"})


ETH0 = {"class/net/eth0/type": "1", "class/net/eth0/operstate": "up",
        "class/net/eth0/carrier": "1", "class/net/eth0/speed": "100000",
        "class/net/eth0/mtu": "9000", "class/net/eth0/carrier_changes": "4",
        "class/net/eth0/address": "0c:42:a1:00:00:01",
        "class/net/eth0/statistics/rx_errors": "1",
        "class/net/eth0/statistics/rx_crc_errors": str(2**70),
        "class/net/eth0/statistics/rx_bytes": "123456",
        "devices/pci/0000:3a:00.0/vendor": "0x15b3"}
DRIVER = {"driver": "mlx5_core", "driver_version": "24.04", "firmware": "28.39.1002",
          "bus": "0000:3a:00.0"}


def test_an_interface_is_read_as_the_abi_writes_it(tmp_path: Path) -> None:
    reader = Tree(tmp_path, ETH0, {"eth0": DRIVER})
    (tmp_path / "class/net/eth0/device").symlink_to("../../../devices/pci/0000:3a:00.0")
    port = net.net_port(reader, "eth0", ethtool=True)
    assert port is not None
    crc = str(tmp_path / "class/net/eth0/statistics/rx_crc_errors")
    assert port == {
        "name": "eth0", "device": "eth0", "port": None, "kind": "net", "state": "up",
        "phys_state": None, "active": True, "rate_gbit": 100.0, "link_layer": "Ethernet",
        "lid": None, "gid": None, "netdev": "eth0", "mtu": 9000, "firmware": "28.39.1002",
        "driver": "mlx5_core", "driver_version": "24.04", "bus": "0000:3a:00.0",
        "ethtool_error": None, "address": "0c:42:a1:00:00:01", "pci": "0000:3a:00.0",
        "pcie": None, "virtual": False, "counters": {"rx_errors": 1, "carrier_changes": 4},
        "unreadable": {crc: f"not a number: {str(2**70)!r} (expected a whole number of at "
                            "most 20 digits, or 0x and 16)"}}


def test_without_ethtool_no_driver_is_asked_for(tmp_path: Path) -> None:
    reader = Tree(tmp_path, ETH0, {"eth0": DRIVER})
    port = net.net_port(reader, "eth0", ethtool=False)
    assert port is not None and reader.asked == []
    assert (port["driver"], port["firmware"], port["ethtool_error"]) == (None, None, None)
    assert port["virtual"] is True  # no device/ link


def test_an_ethtool_that_fails_is_named(tmp_path: Path) -> None:
    port = net.net_port(Tree(tmp_path, ETH0), "eth0", ethtool=True)
    assert port is not None
    assert port["ethtool_error"] == "ethtool drvinfo of eth0: No such device"
    assert port["driver"] is None


def test_the_loopback_is_no_port(tmp_path: Path) -> None:
    reader = Tree(tmp_path, {"class/net/lo/type": "772", "class/net/lo/operstate": "unknown"})
    assert net.net_port(reader, "lo", ethtool=True) is None


def test_no_speed_and_an_unknown_state_are_said_as_they_are(tmp_path: Path) -> None:
    reader = Tree(tmp_path, {"class/net/veth1/type": "1", "class/net/veth1/operstate": "unknown",
                             "class/net/veth1/carrier": "1", "class/net/veth1/speed": "-1",
                             "class/net/ib0/type": "32", "class/net/ib0/operstate": "unknown",
                             "class/net/ib0/carrier": "0", "class/net/ib0/speed": "0",
                             "class/net/odd/type": "778", "class/net/odd/speed": "fast"})
    veth = net.net_port(reader, "veth1", ethtool=False)
    ib = net.net_port(reader, "ib0", ethtool=False)
    odd = net.net_port(reader, "odd", ethtool=False)
    assert veth is not None and ib is not None and odd is not None
    assert (veth["active"], veth["rate_gbit"], veth["link_layer"]) == (True, None, "Ethernet")
    assert veth["unreadable"][str(tmp_path / "class/net/veth1/speed")] == (
        "-1 (link down or a virtual interface)")
    assert (ib["active"], ib["rate_gbit"], ib["link_layer"]) == (False, None, "InfiniBand")
    assert ib["unreadable"][str(tmp_path / "class/net/ib0/speed")] == (
        "0 (link down or a virtual interface)")
    assert (odd["link_layer"], odd["state"], odd["rate_gbit"], odd["mtu"]) == (
        "arp type 778", None, None, None)
    assert odd["unreadable"][str(tmp_path / "class/net/odd/operstate")] == "not present"
    assert odd["unreadable"][str(tmp_path / "class/net/odd/speed")].startswith(
        "not a number: 'fast'")


def test_the_interfaces_are_read_in_order_within_the_budget(tmp_path: Path) -> None:
    files = {f"class/net/{name}/type": "1" for name in ("eth2", "eth0", "eth1")}
    reader = Tree(tmp_path, {**files, "class/net/lo/type": "772"})
    (tmp_path / "class/net/bad name").mkdir()
    budget = Budget(2)
    ports = net.net_ports(reader, ethtool=False, budget=budget)
    assert [port["name"] for port in ports] == ["eth0", "eth1"]
    assert (budget.left, budget.left_out) == (0, 1)  # eth2; the loopback is no port
    assert reader.skipped == {str(tmp_path / "class/net") + "/'bad name'":
                              "not an interface name"}
