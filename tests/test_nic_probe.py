"""The NIC probe against sysfs trees written as the kernel's ABI documents them
(Documentation/ABI/stable/sysfs-class-infiniband, testing/sysfs-class-net), run as it is
shipped: one file, its source on stdin, `--sysfs` the tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.probes import PROBES, nic, probe_source


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
        "class/net/eth2/type": "1", "class/net/eth2/operstate": "up",
        "class/net/eth2/speed": "200000", "class/net/eth2/mtu": "4200",
        "class/net/eth2/device/vendor": "0x15b3",
        "class/net/veth1/type": "1", "class/net/veth1/operstate": "unknown",
        "class/net/veth1/carrier": "1", "class/net/veth1/speed": "-1",
        "class/net/veth1/mtu": "1500",
    })
    return root


def run(*args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-", *args], input=probe_source("nic"),
                          capture_output=True, text=True, timeout=60, check=True)
    document = json.loads(done.stdout)
    assert document["probe"] == "nic" and document["schema"] == 1
    data: dict[str, Any] = document["data"]
    return data


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


def test_a_sysfs_of_another_namespace_is_said_naming_both_sides() -> None:
    assert nic.namespace_mismatch(["lo", "eth0"], ["eth0", "lo"]) == ""
    assert nic.namespace_mismatch(["eth0", "lo", "docker0"], ["lo", "rail1"]) == (
        "/sys/class/net belongs to another network namespace: it shows docker0, eth0, lo; "
        "this process's namespace has lo, rail1 (socket.if_nameindex()); no port read "
        "(nsenter --net or unshare keep the /sys of the namespace they left: ip netns exec "
        "remounts it)")
    many = [f"veth{i}" for i in range(nic.MAX_NAMED + 3)]
    assert nic.listed(set(many)) == ", ".join(sorted(many)[:nic.MAX_NAMED]) + " and 3 more"
    assert nic.listed(set()) == "none"


def test_only_the_directories_of_class_net_are_interfaces(tmp_path: Path) -> None:
    """bonding_masters is a file of /sys/class/net, not an interface."""
    root = tree(tmp_path)
    (root / "class/net/bonding_masters").write_text("\n")
    reader = nic.Reader(str(root))
    assert reader.directories(reader.path("class", "net")) == ["eth0", "eth2", "lo", "veth1"]
    own = ["eth0", "eth2", "lo", "veth1"]
    assert "ports" in nic.read_ports(reader, ethtool=False, namespace=lambda: own)
    other = nic.read_ports(reader, ethtool=False, namespace=lambda: ["lo"])
    assert "ports" not in other
    assert other["error"] == nic.namespace_mismatch(own, ["lo"])
    assert other["interfaces"] == {"sysfs": own, "namespace": ["lo"]}


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
