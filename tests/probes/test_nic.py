"""The NIC probe against sysfs trees written as the kernel's ABI documents them
(Documentation/ABI/stable/sysfs-class-infiniband, testing/sysfs-class-net), run as it is
shipped: one file, its source on stdin, `--sysfs` the tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.probes import PROBES, nic, probe_source
from tests import shipped_probe


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")


def ib_port(device: str, port: int, state: str, phys: str, rate: str,
            **counters: int) -> dict[str, str]:
    base = f"class/infiniband/{device}/ports/{port}"
    files = {f"{base}/state": state, f"{base}/phys_state": phys, f"{base}/rate": rate,
             f"{base}/link_layer": "InfiniBand", f"{base}/lid": "0x1a",
             f"{base}/gids/0": "fe80:0000:0000:0000:a088:c203:0012:3456"}
    for name in ("link_downed", "symbol_error", "port_rcv_errors", "port_xmit_discards",
                 "port_xmit_data"):
        files[f"{base}/counters/{name}"] = str(counters.get(name, 0))
    return files


def tree(root: Path) -> Path:
    write(root, {
        "class/infiniband/mlx5_0/fw_ver": "28.39.1002",
        "class/infiniband/mlx5_0/board_id": "MT_0000000838",
        "class/infiniband/mlx5_0/hca_type": "MT4129",
        "class/infiniband/mlx5_0/node_guid": "a088:c203:0012:3456",
        "class/infiniband/mlx5_0/sys_image_guid": "a088:c203:0012:3456",
        **ib_port("mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", symbol_error=3),
        "class/infiniband/mlx5_0/ports/1/hw_counters/out_of_buffer": "5",
        "class/infiniband/mlx5_0/ports/1/hw_counters/lifespan": "10",
        # the device's PCIe link (a link to ../../../0000:3a:00.0 in a real tree)
        "class/infiniband/mlx5_0/device/current_link_speed": "32.0 GT/s PCIe",
        "class/infiniband/mlx5_0/device/max_link_speed": "32.0 GT/s PCIe",
        "class/infiniband/mlx5_0/device/current_link_width": "16",
        "class/infiniband/mlx5_0/device/max_link_width": "16",
        "class/infiniband/mlx5_1/fw_ver": "28.39.1002",
        **ib_port("mlx5_1", 1, "1: DOWN", "2: Polling", "10 Gb/sec (4X SDR)", link_downed=2),
        # no subnet manager has given it an address: GID 0 all zero
        "class/infiniband/mlx5_1/ports/1/gids/0": ":".join(["0000"] * 8),
        # RoCE: an Ethernet link layer, its interface in GID 0's attributes
        "class/infiniband/mlx5_2/fw_ver": "22.36.1010",
        "class/infiniband/mlx5_2/ports/1/state": "4: ACTIVE",
        "class/infiniband/mlx5_2/ports/1/phys_state": "5: LinkUp",
        "class/infiniband/mlx5_2/ports/1/rate": "200 Gb/sec (4X HDR)",
        "class/infiniband/mlx5_2/ports/1/link_layer": "Ethernet",
        "class/infiniband/mlx5_2/ports/1/lid": "0x0",
        "class/infiniband/mlx5_2/ports/1/gids/0": "fe80:0000:0000:0000:0ac0:ebff:fe12:3456",
        "class/infiniband/mlx5_2/ports/1/gid_attrs/ndevs/0": "eth2",
        "class/net/lo/type": "772", "class/net/lo/operstate": "unknown",
        "class/net/eth0/type": "1", "class/net/eth0/operstate": "up",
        "class/net/eth0/carrier": "1", "class/net/eth0/speed": "100000",
        "class/net/eth0/mtu": "9000", "class/net/eth0/carrier_changes": "4",
        "class/net/eth0/statistics/rx_errors": "1", "class/net/eth0/statistics/tx_errors": "0",
        "class/net/eth0/device/vendor": "0x15b3",
        # a Gen5 card in a Gen4 slot, at x8; its link's width garbage when read again
        "class/net/eth0/device/current_link_speed": "16.0 GT/s PCIe",
        "class/net/eth0/device/max_link_speed": "32.0 GT/s PCIe",
        "class/net/eth0/device/current_link_width": "8",
        "class/net/eth0/device/max_link_width": "16",
        "class/net/eth2/type": "1", "class/net/eth2/operstate": "up",
        "class/net/eth2/speed": "200000", "class/net/eth2/mtu": "4200",
        "class/net/eth2/device/vendor": "0x15b3",
        "class/net/veth1/type": "1", "class/net/veth1/operstate": "unknown",
        "class/net/veth1/carrier": "1", "class/net/veth1/speed": "-1",
        "class/net/veth1/mtu": "1500",
    })
    return root


def run(*args: str) -> dict[str, Any]:
    return parsed(printed(*args))


def printed(*args: str, timeout: float = 60) -> str:
    """The probe's stdout, run as it is shipped; TimeoutExpired past `timeout` seconds."""
    return shipped_probe.printed("nic", *args, timeout=timeout)


def parsed(stdout: str) -> dict[str, Any]:
    return shipped_probe.answer("nic", stdout)


def by_name(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {port["name"]: port for port in data["ports"]}


def test_nic_is_a_probe() -> None:
    assert "nic" in PROBES


def test_every_rdma_port_and_interface_is_read_as_the_abi_writes_it(tmp_path: Path) -> None:
    ports = by_name(run("--sysfs", str(tree(tmp_path))))
    assert list(ports) == ["mlx5_0/1", "mlx5_1/1", "mlx5_2/1", "eth0", "eth2", "veth1"]
    up = ports["mlx5_0/1"]
    assert (up["state"], up["phys_state"], up["active"], up["rate_gbit"], up["link_layer"],
            up["lid"], up["gid"], up["firmware"], up["kind"]) == (
        "ACTIVE", "LinkUp", True, 400.0, "InfiniBand", "0x1a", True, "28.39.1002", "rdma")
    assert (up["rate_text"], up["hca_type"], up["node_guid"]) == (
        "400 Gb/sec (4X NDR)", "MT4129", "a088:c203:0012:3456")
    assert up["counters"] == {"link_downed": 0, "symbol_error": 3, "port_rcv_errors": 0,
                              "port_xmit_discards": 0, "out_of_buffer": 5}
    down = ports["mlx5_1/1"]
    assert (down["state"], down["phys_state"], down["active"], down["rate_gbit"]) == (
        "DOWN", "Polling", False, 10.0)
    assert down["counters"]["link_downed"] == 2
    roce = ports["mlx5_2/1"]
    assert (roce["link_layer"], roce["netdev"], roce["mtu"], roce["gid"]) == (
        "Ethernet", "eth2", 4200, True)
    eth = ports["eth0"]
    assert (eth["kind"], eth["active"], eth["rate_gbit"], eth["mtu"], eth["virtual"]) == (
        "net", True, 100.0, 9000, False)
    assert eth["counters"] == {"rx_errors": 1, "tx_errors": 0, "carrier_changes": 4}
    assert up["pcie"] == {"gen": 5, "max_gen": 5, "width": 16, "max_width": 16,
                          "speed": "32.0 GT/s PCIe", "max_speed": "32.0 GT/s PCIe",
                          "virtual_function": False}
    assert eth["pcie"] == {"gen": 4, "max_gen": 5, "width": 8, "max_width": 16,
                           "speed": "16.0 GT/s PCIe", "max_speed": "32.0 GT/s PCIe",
                           "virtual_function": False}
    # no PCI device: none (mlx5_1 has no device/; veth1 is virtual; eth2's has no link)
    assert [ports[name]["pcie"] for name in ("mlx5_1/1", "veth1", "eth2")] == [None] * 3
    veth = ports["veth1"]
    assert (veth["active"], veth["rate_gbit"], veth["virtual"]) == (True, None, True)
    assert veth["unreadable"][
        str(tmp_path / "class/net/veth1/speed")] == "-1 (link down or a virtual interface)"


def test_a_file_the_tree_lacks_is_named_never_guessed(tmp_path: Path) -> None:
    root = tree(tmp_path)
    (root / "class/infiniband/mlx5_0/ports/1/rate").unlink()
    (root / "class/infiniband/mlx5_0/ports/1/state").write_text("garbage\n")
    port = by_name(run("--sysfs", str(root)))["mlx5_0/1"]
    assert port["rate_gbit"] is None and port["active"] is False
    assert port["unreadable"] == {str(root / "class/infiniband/mlx5_0/ports/1/rate"):
                                  "not present"}


def test_a_pcie_link_the_kernel_cannot_tell_is_named_on_every_port_of_it(
        tmp_path: Path) -> None:
    root = tree(tmp_path)
    device = root / "class/infiniband/mlx5_0/device"
    (device / "current_link_speed").write_text("Unknown\n")
    (device / "current_link_width").write_text("0\n")
    (device / "max_link_width").unlink()
    write(root, ib_port("mlx5_0", 2, "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)"))
    ports = by_name(run("--sysfs", str(root)))
    for name in ("mlx5_0/1", "mlx5_0/2"):  # one device, its link on each of its ports
        assert ports[name]["pcie"] == {"gen": None, "max_gen": 5, "width": None,
                                       "max_width": None, "speed": "Unknown",
                                       "max_speed": "32.0 GT/s PCIe",
                                       "virtual_function": False}
        unread = ports[name]["unreadable"]
        assert unread[str(device / "current_link_width")] == \
            "0 lanes: no link trained (or a virtual function's link)"
        assert unread[str(device / "max_link_width")] == "not present"
        assert unread[str(device / "current_link_speed")].startswith("'Unknown': ")


def test_no_sysfs_is_an_error_with_the_reason(tmp_path: Path) -> None:
    data = run("--sysfs", str(tmp_path / "nothing"))
    assert "ports" not in data
    assert data["error"] == f"{tmp_path / 'nothing' / 'class' / 'net'} is not present: no " \
                            "sysfs to read"


def test_this_machine(tmp_path: Path) -> None:
    """On this machine's own /sys: at least one interface, the loopback left out."""
    ports = run()["ports"]
    assert ports and all(port["name"] != "lo" for port in ports)
    assert all(port["kind"] in ("rdma", "net") for port in ports)


# -- a hostile tree: every file is untrusted ----------------------------------------------

def test_a_fifo_as_a_counter_or_operstate_is_unreadable_never_waited_on(
        tmp_path: Path) -> None:
    root = tree(tmp_path / "sys")
    counter = root / "class/infiniband/mlx5_0/ports/1/counters/symbol_error"
    operstate = root / "class/net/eth0/operstate"
    for path in (counter, operstate):
        path.unlink()
        os.mkfifo(path)
    ports = by_name(parsed(printed("--sysfs", str(root), timeout=10)))
    why = "a fifo, not a regular file: not read"
    assert ports["mlx5_0/1"]["unreadable"] == {str(counter): why}
    assert "symbol_error" not in ports["mlx5_0/1"]["counters"]
    assert ports["eth0"]["unreadable"] == {str(operstate): why}
    assert ports["eth0"]["state"] is None and ports["eth0"]["active"] is False


def test_a_link_out_of_the_tree_is_named_never_followed(tmp_path: Path) -> None:
    root = tree(tmp_path / "sys")
    outside = tmp_path / "outside"
    write(outside, {"secret": "SECRET-1234", "counters/symbol_error": "31337",
                    "counters/link_downed": "31337"})
    # sysfs's own links stay inside it, and are followed
    (root / "devices/pci0000:00").mkdir(parents=True)
    (root / "class/net/eth2").rename(root / "devices/pci0000:00/eth2")
    (root / "class/net/eth2").symlink_to("../../devices/pci0000:00/eth2")
    address, mtu = root / "class/net/eth0/address", root / "class/net/eth0/mtu"
    address.symlink_to(outside / "secret")
    mtu.unlink()
    mtu.symlink_to(outside / "counters/symbol_error")
    lid = root / "class/infiniband/mlx5_0/ports/1/lid"
    lid.unlink()
    lid.symlink_to("../../../../../../outside/secret")  # relative, out of the tree
    counters = root / "class/infiniband/mlx5_1/ports/1/counters"
    shutil.rmtree(counters)
    counters.symlink_to(outside / "counters")
    shutil.rmtree(root / "class/net/eth0/device")
    (root / "class/net/eth0/device").symlink_to(outside)
    (root / "class/infiniband/mlx5_2/device").mkdir()
    (root / "class/infiniband/mlx5_2/device/net").symlink_to(outside)
    stdout = printed("--sysfs", str(root), timeout=10)
    assert "SECRET" not in stdout and "31337" not in stdout and "outside" not in stdout
    ports = by_name(parsed(stdout))
    why = f"a link out of {root}: not followed"
    assert ports["eth0"]["unreadable"] == {
        str(mtu): why, str(root / "class/net/eth0/device"): f"{why} (its PCIe link not read)"}
    assert ports["eth0"]["address"] is None and ports["eth0"]["pci"] is None
    assert ports["eth0"]["pcie"] is None
    assert ports["eth0"]["mtu"] is None
    assert ports["eth0"]["virtual"] is True  # its device is not in the tree
    assert ports["mlx5_0/1"]["unreadable"] == {str(lid): why}
    assert ports["mlx5_1/1"]["counters"] == {}
    assert ports["mlx5_2/1"]["netdevs"] == []
    assert (ports["eth2"]["mtu"], ports["mlx5_2/1"]["mtu"]) == (4200, 4200)


@pytest.mark.slow
def test_a_hundred_thousand_ports_read_a_thousand_and_count_the_rest(tmp_path: Path) -> None:
    """400 devices of 250 ports: the first MAX_PORTS in order are read, in a few seconds,
    and the reading says how many it left out."""
    root = tmp_path / "sys"
    for device in range(400):
        for port in range(1, 251):
            (root / f"class/infiniband/d{device:03d}/ports/{port}").mkdir(parents=True)
    write(root, {"class/net/eth0/type": "1"})
    started = time.monotonic()
    stdout = printed("--sysfs", str(root), timeout=10)
    assert time.monotonic() - started < 8
    assert len(stdout) < nic.MAX_OUTPUT
    data = parsed(stdout)
    assert len(data["ports"]) == nic.MAX_PORTS == 1024
    assert data["ports_left_out"] == 100_000 + 1 - 1024
    names = [port["name"] for port in data["ports"]]
    assert names[0] == "d000/1" and len(set(names)) == 1024
    assert {name.split("/")[0] for name in names} == {"d000", "d001", "d002", "d003", "d004"}


def test_numbers_past_any_the_kernel_writes_are_named_not_a_number(tmp_path: Path) -> None:
    root = tree(tmp_path / "sys")
    nines, hex_digits = "9" * 400, "0x" + "f" * 4094
    write(root, {"class/net/eth0/speed": nines, "class/net/eth0/mtu": "1e400",
                 "class/net/eth0/statistics/tx_errors": "١٢",  # Arabic-Indic digits
                 "class/net/eth2/speed": "9" * 30, "class/net/eth2/mtu": "0x1_0",
                 "class/net/eth2/statistics/rx_errors": str(2**64),
                 "class/infiniband/mlx5_0/ports/1/rate": f"{nines[:200]} Gb/sec (4X NDR)",
                 "class/infiniband/mlx5_0/ports/1/counters/symbol_error": hex_digits[:4000]})
    (root / "class/net/eth0/statistics/rx_errors").write_text(hex_digits)  # 4,096 bytes
    ports = by_name(parsed(printed("--sysfs", str(root), timeout=10)))
    eth0, eth2, ib = ports["eth0"], ports["eth2"], ports["mlx5_0/1"]
    assert (eth0["rate_gbit"], eth0["mtu"], eth0["counters"]) == (None, None, {
        "carrier_changes": 4})
    assert (eth2["rate_gbit"], eth2["mtu"], ib["rate_gbit"]) == (None, None, None)
    assert "symbol_error" not in ib["counters"]
    net = str(root / "class/net")
    assert eth0["unreadable"][f"{net}/eth0/speed"] == (
        "400 characters: longer than any value of the sysfs ABI (at most 256 read)")
    assert eth2["unreadable"][f"{net}/eth2/speed"] == (
        f"not a number: {'9' * 30!r} (expected a whole number of at most 20 digits, or "
        "0x and 16)")
    assert eth0["unreadable"][f"{net}/eth0/statistics/rx_errors"].startswith(
        f"{len(hex_digits)} characters: longer than any value of the sysfs ABI")
    assert eth0["unreadable"][f"{net}/eth0/statistics/tx_errors"].startswith("not a number")
    assert eth2["unreadable"][f"{net}/eth2/statistics/rx_errors"].startswith(
        "not a number: '1844")
    assert eth2["unreadable"][f"{net}/eth2/mtu"].startswith("not a number: '0x1_0'")
    assert ib["unreadable"][str(root / "class/infiniband/mlx5_0/ports/1/rate")] == (
        f"not a rate: {nines[:40]!r}")
    assert nic.whole_number("0x" + "f" * 16) == 2**64 - 1
    assert nic.whole_number("-" + "9" * 18) == -(10**18 - 1)
    assert nic.whole_number("-" + "9" * 19) is None  # below an s64
    assert nic.whole_number("0x" + "f" * 17) is None and nic.whole_number("+5") is None


def test_a_file_larger_than_a_page_is_not_read(tmp_path: Path) -> None:
    root = tree(tmp_path / "sys")
    (root / "class/net/eth0/operstate").write_text("up" + " " * 10**6)
    port = by_name(parsed(printed("--sysfs", str(root), timeout=10)))["eth0"]
    assert port["state"] is None
    assert port["unreadable"] == {str(root / "class/net/eth0/operstate"): (
        "more than 4096 bytes (a sysfs attribute is at most a page): not read")}


def test_an_entry_that_is_no_port_or_device_is_named_not_a_crash(tmp_path: Path) -> None:
    root = tree(tmp_path / "sys")
    (root / "class/infiniband/mlx5_0/ports/²").mkdir()
    (root / "class/infiniband/mlx5_0/ports/1000").mkdir()
    (root / "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs").mkdir(parents=True)
    (root / "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0").write_text("../../etc\n")
    long_name = "x" * 200
    (root / "class/infiniband" / long_name / "ports/1").mkdir(parents=True)
    (root / "class/net/bad name").mkdir()
    data = parsed(printed("--sysfs", str(root), timeout=10))
    assert list(by_name(data)) == ["mlx5_0/1", "mlx5_1/1", "mlx5_2/1", "eth0", "eth2", "veth1"]
    ib = str(root / "class/infiniband")
    assert data["skipped"] == {
        f"{ib}/mlx5_0/ports/1000": "not a port number (1 to 3 digits)",
        f"{ib}/mlx5_0/ports/²": "not a port number (1 to 3 digits)",
        f"{ib}/'{'x' * nic.MAX_NAME}'": "not a device name",
        f"{root / 'class/net'}/'bad name'": "not an interface name"}
    port = by_name(data)["mlx5_0/1"]
    assert port["netdev"] is None
    assert port["unreadable"][f"{ib}/mlx5_0/ports/1/gid_attrs/ndevs/0"] == (
        "not an interface name: '../../etc'")
    assert data["ports_left_out"] == 0


def _in_namespace(*prefix: str) -> dict[str, Any]:
    done = subprocess.run([*prefix, sys.executable, "-"], input=probe_source("nic"),
                          capture_output=True, text=True, timeout=60, check=True)
    data: dict[str, Any] = json.loads(done.stdout)["data"]
    return data


@pytest.mark.realcomponents
def test_a_process_entering_only_the_net_namespace_reads_no_port() -> None:
    """`ip netns exec` remounts /sys for the namespace: the probe reads its ports. `nsenter
    --net` and `unshare --net` keep this machine's /sys: the probe says so, naming what
    /sys shows (this machine's interfaces) and what the namespace has, and reads none of
    them as the node's."""
    name = f"pcnic{os.getpid()}"
    host = sorted(entry.name for entry in Path("/sys/class/net").iterdir() if entry.is_dir())
    try:
        subprocess.run(["ip", "netns", "add", name], check=True, timeout=30,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"no network namespace here: {exc}")
    try:
        subprocess.run(["ip", "-n", name, "link", "add", "rail1", "type", "veth", "peer",
                        "name", "peer1"], check=True, timeout=30)
        own = _in_namespace("ip", "netns", "exec", name)
        assert sorted(port["name"] for port in own["ports"]) == ["peer1", "rail1"]
        ns = sorted(["lo", "peer1", "rail1"])
        for prefix in (("nsenter", f"--net=/run/netns/{name}"), ("unshare", "--net")):
            data = _in_namespace(*prefix)
            expected = ns if prefix[0] == "nsenter" else ["lo"]
            assert "ports" not in data, prefix
            shown = data["interfaces"]["sysfs"]
            now = sorted(e.name for e in Path("/sys/class/net").iterdir() if e.is_dir())
            assert shown in (host, now)  # other tests' namespaces come and go beside it
            assert data["interfaces"]["namespace"] == expected
            assert data["error"] == nic.namespace_mismatch(shown, expected)
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, timeout=30)
