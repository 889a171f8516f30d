"""NIC probe: every network port of this node, as the kernel's sysfs ABI shows it.

For each RDMA (InfiniBand or RoCE) device and port, `<sysfs>/class/infiniband/DEV/ports/N`
(Documentation/ABI/stable/sysfs-class-infiniband): state, phys_state, rate, link_layer,
LID, whether GID 0 is set, the network interface that carries it (RoCE, IPoIB) and its MTU,
the device's firmware, and the port's error counters (`counters/`, and `hw_counters/` where
the driver has them). For each network interface but the loopback, `<sysfs>/class/net/IF`
(Documentation/ABI/testing/sysfs-class-net): operstate, carrier, speed, mtu,
carrier_changes, the error statistics, whether it is a device (or virtual: a veth, a
bridge), and its driver and firmware (ETHTOOL_GDRVINFO, what `ethtool -i` prints).

Reading this machine's /sys, it first checks that /sys/class/net lists the interfaces of
its own network namespace (socket.if_nameindex()): a process that entered a namespace with
`nsenter --net` or `unshare` still sees another namespace's /sys; then it says so, naming
both, and reads no port. `--sysfs ROOT` reads another tree (a capture, a test's tree, a
simulated node's); `--when LABEL` names the reading (a run reads at its start and at its
end, to compare counters). A file that cannot be read is named with the reason in the
port's `unreadable`, never guessed.
Runs ON a node with only the standard library; shipped as a single file. Prints one JSON
document: {"probe": "nic", "schema": 1, "data": {"ports": [...], ...}}.
"""

from __future__ import annotations

import getopt
import json
import os
import re
import socket
import struct
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: The error counters of an InfiniBand port (its PortCounters attribute), as sysfs names
#: them; port_xmit_wait and the data counters are load, not errors.
IB_ERRORS = ("link_downed", "link_error_recovery", "symbol_error", "port_rcv_errors",
             "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
             "port_xmit_discards", "port_xmit_constraint_errors",
             "port_rcv_constraint_errors", "local_link_integrity_errors",
             "excessive_buffer_overrun_errors", "VL15_dropped")
#: Driver counters of an RDMA port (hw_counters/) that count trouble: RoCE's and mlx5's.
HW_ERRORS = ("out_of_buffer", "out_of_sequence", "packet_seq_err", "local_ack_timeout_err",
             "implied_nak_seq_err", "rnr_nak_retry_err", "duplicate_request",
             "np_ecn_marked_roce_packets", "rp_cnp_handled", "np_cnp_sent",
             "rx_icrc_encapsulated", "req_cqe_error", "resp_cqe_error",
             "req_remote_access_errors", "resp_local_length_error", "roce_slow_restart")
#: The error statistics of a network interface (statistics/).
NET_ERRORS = ("rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "rx_crc_errors",
              "rx_frame_errors", "rx_fifo_errors", "rx_missed_errors", "rx_over_errors",
              "tx_carrier_errors", "tx_aborted_errors", "tx_fifo_errors",
              "collisions")
#: /sys/class/net/IF/type (include/uapi/linux/if_arp.h)
LINK_LAYERS = {1: "Ethernet", 32: "InfiniBand", 772: "loopback", 65534: "none"}
#: "400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X SDR)" (drivers/infiniband/core/sysfs.c rate_show)
RATE = re.compile(r"^(\d+(?:\.\d+)?) Gb/sec\b")
#: "4: ACTIVE", "5: LinkUp" (state_show, phys_state_show)
NUMBERED = re.compile(r"^(\d+): (\S.*)$")
SIOCETHTOOL = 0x8946
ETHTOOL_GDRVINFO = 0x3
DRVINFO_BYTES = 196  # struct ethtool_drvinfo
IFREQ_BYTES = 40  # struct ifreq on 64-bit Linux
MAX_ENTRIES = 4096  # devices, ports or interfaces read of one directory


class Reader:
    """Reads files of one tree; what it cannot read is kept, by path, with why."""

    def __init__(self, root: str) -> None:
        self.root = root

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def text(self, path: str, missing: dict[str, str]) -> str | None:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read(4096).strip()
        except FileNotFoundError:
            missing[path] = "not present"
        except PermissionError:
            missing[path] = "permission denied (readable by root only)"
        except OSError as exc:
            # EINVAL: speed of a link that is down, or of a virtual interface
            missing[path] = exc.strerror or str(exc)
        return None

    def number(self, path: str, missing: dict[str, str]) -> int | None:
        raw = self.text(path, missing)
        if raw is None:
            return None
        try:
            return int(raw, 0)
        except ValueError:
            missing[path] = f"not a number: {raw[:40]!r}"
            return None

    def names(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(path))[:MAX_ENTRIES]
        except OSError:
            return []

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def directories(self, path: str) -> list[str]:
        """The names in `path` that are directories (an interface of class/net, not a
        file such as bonding_masters)."""
        return [name for name in self.names(path) if os.path.isdir(os.path.join(path, name))]

    def drvinfo(self, name: str) -> dict[str, str]:
        """Driver, its version, firmware and bus of interface `name` (`ethtool -i`)."""
        return drvinfo(name)

    def target(self, path: str) -> str | None:
        """The name a link points at (a device's PCI address), None if it is no link."""
        return os.path.basename(os.path.realpath(path)) if os.path.islink(path) else None

    def counters(self, directory: str, names: tuple[str, ...],
                 missing: dict[str, str]) -> dict[str, int]:
        """The counters of `names` the directory has (a driver need not have them all)."""
        present = set(self.names(directory))
        found = {}
        for name in names:
            if name in present:
                value = self.number(os.path.join(directory, name), missing)
                if value is not None:
                    found[name] = value
        return found


def numbered(raw: str | None) -> str | None:
    """'ACTIVE' of '4: ACTIVE'."""
    if raw is None:
        return None
    match = NUMBERED.match(raw)
    return match.group(2) if match else raw


def rate_gbit(raw: str | None, path: str, missing: dict[str, str]) -> float | None:
    if raw is None:
        return None
    match = RATE.match(raw)
    if match is None:
        missing[path] = f"not a rate: {raw[:40]!r}"
        return None
    return float(match.group(1))


def netdev_of(reader: Reader, device: str, port: str, missing: dict[str, str]) -> str | None:
    """The network interface of an RDMA port: GID 0's (RoCE), else the device's own
    interface whose dev_port is this port's (IPoIB, RoCE without a GID table entry)."""
    base = reader.path("class", "infiniband", device)
    ndev = reader.text(os.path.join(base, "ports", port, "gid_attrs", "ndevs", "0"), {})
    if ndev:
        return ndev
    net = os.path.join(base, "device", "net")
    for name in reader.names(net):
        dev_port = reader.number(os.path.join(net, name, "dev_port"), {})
        if dev_port is None or dev_port == int(port) - 1:
            return name
    return None


def rdma_port(reader: Reader, device: str, port: str,
              facts: dict[str, Any]) -> dict[str, Any]:
    missing: dict[str, str] = {}
    base = reader.path("class", "infiniband", device, "ports", port)
    state = numbered(reader.text(os.path.join(base, "state"), missing))
    phys = numbered(reader.text(os.path.join(base, "phys_state"), missing))
    rate_path = os.path.join(base, "rate")
    rate_text = reader.text(rate_path, missing)
    gid = reader.text(os.path.join(base, "gids", "0"), missing)
    netdev = netdev_of(reader, device, port, missing)
    mtu = reader.number(reader.path("class", "net", netdev, "mtu"), missing) if netdev else None
    counters = reader.counters(os.path.join(base, "counters"), IB_ERRORS, missing)
    hw = reader.counters(os.path.join(base, "hw_counters"), HW_ERRORS, missing)
    return {
        "name": f"{device}/{port}", "device": device, "port": int(port), "kind": "rdma",
        "state": state, "phys_state": phys,
        "active": state == "ACTIVE" and phys == "LinkUp",
        "rate_gbit": rate_gbit(rate_text, rate_path, missing), "rate_text": rate_text,
        "link_layer": reader.text(os.path.join(base, "link_layer"), missing),
        "lid": reader.text(os.path.join(base, "lid"), missing),
        "gid": gid is not None and gid.replace(":", "").strip("0") != "",
        "netdev": netdev, "mtu": mtu, **facts,
        "virtual": False, "counters": {**counters, **hw}, "unreadable": missing}


def rdma_ports(reader: Reader) -> list[dict[str, Any]]:
    found = []
    root = reader.path("class", "infiniband")
    for device in reader.names(root):
        # the device's: the same on each of its ports
        unread: dict[str, str] = {}
        facts: dict[str, Any] = {key: reader.text(os.path.join(root, device, name), unread)
                 for key, name in (("firmware", "fw_ver"), ("board_id", "board_id"),
                                   ("hca_type", "hca_type"), ("node_guid", "node_guid"),
                                   ("sys_image_guid", "sys_image_guid"))}
        facts["pci"] = reader.target(os.path.join(root, device, "device"))
        facts["netdevs"] = reader.names(os.path.join(root, device, "device", "net"))
        for port in reader.names(os.path.join(root, device, "ports")):
            if port.isdigit():
                entry = rdma_port(reader, device, port, facts)
                entry["unreadable"] = {**unread, **entry["unreadable"]}
                found.append(entry)
    return found


def drvinfo(name: str) -> dict[str, str]:
    """Driver, its version, firmware and bus of interface `name` (ETHTOOL_GDRVINFO, what
    `ethtool -i` prints); {"error": why} if not answered."""
    import array  # noqa: PLC0415 - only here
    import fcntl  # noqa: PLC0415

    buffer = array.array("B", struct.pack("I", ETHTOOL_GDRVINFO) + bytes(DRVINFO_BYTES - 4))
    address, _ = buffer.buffer_info()
    request = struct.pack("16sP", name.encode()[:15], address)
    request += bytes(IFREQ_BYTES - len(request))
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            fcntl.ioctl(sock.fileno(), SIOCETHTOOL, request)
    except OSError as exc:
        return {"error": f"ethtool drvinfo of {name}: {exc.strerror or exc}"}
    raw = buffer.tobytes()

    def string(index: int) -> str:
        return raw[4 + 32 * index: 4 + 32 * (index + 1)].split(b"\0", 1)[0].decode(
            errors="replace")

    return {"driver": string(0), "driver_version": string(1), "firmware": string(2),
            "bus": string(3)}


def net_port(reader: Reader, name: str, ethtool: bool) -> dict[str, Any] | None:
    missing: dict[str, str] = {}
    base = reader.path("class", "net", name)
    kind = reader.number(os.path.join(base, "type"), missing)
    layer = LINK_LAYERS.get(kind, f"arp type {kind}") if kind is not None else None
    if layer == "loopback":
        return None
    state = reader.text(os.path.join(base, "operstate"), missing)
    carrier = reader.number(os.path.join(base, "carrier"), {})
    speed_path = os.path.join(base, "speed")
    speed = reader.number(speed_path, missing)
    if speed is not None and speed <= 0:
        missing[speed_path] = f"{speed} (link down or a virtual interface)"
    elif missing.get(speed_path) == "Invalid argument":  # EINVAL: the kernel has none
        missing[speed_path] = "no speed (link down or virtual)"
    info = reader.drvinfo(name) if ethtool else {}
    counters = reader.counters(os.path.join(base, "statistics"), NET_ERRORS, missing)
    changes = reader.number(os.path.join(base, "carrier_changes"), missing)
    if changes is not None:
        counters["carrier_changes"] = changes
    return {
        "name": name, "device": name, "port": None, "kind": "net", "state": state,
        "phys_state": None,
        # `unknown`: a driver without operational state (veth, some virtual NICs); its
        # carrier says whether the link is up
        "active": state == "up" or (state == "unknown" and carrier == 1),
        "rate_gbit": speed / 1000 if speed is not None and speed > 0 else None,
        "link_layer": layer, "lid": None, "gid": None, "netdev": name,
        "mtu": reader.number(os.path.join(base, "mtu"), missing),
        "firmware": info.get("firmware") or None, "driver": info.get("driver") or None,
        "driver_version": info.get("driver_version") or None, "bus": info.get("bus") or None,
        "ethtool_error": info.get("error"),
        "address": reader.text(os.path.join(base, "address"), {}),
        "pci": reader.target(os.path.join(base, "device")),
        "virtual": not reader.exists(os.path.join(base, "device")),
        "counters": counters, "unreadable": missing}


def net_ports(reader: Reader, ethtool: bool) -> list[dict[str, Any]]:
    found = []
    for name in reader.names(reader.path("class", "net")):
        port = net_port(reader, name, ethtool)
        if port is not None:
            found.append(port)
    return found


#: The most interface names a namespace mismatch names of each side.
MAX_NAMED = 8


def listed(names: set[str]) -> str:
    """'eth0, lo, rail1' (at most MAX_NAMED, then how many more), 'none'."""
    shown = sorted(names)
    more = len(shown) - MAX_NAMED
    return ", ".join(shown[:MAX_NAMED]) + (f" and {more} more" if more > 0 else "") \
        if shown else "none"


#: The error kind of a reading of another namespace's /sys: the tool measured in the wrong
#: place, so it judges nothing (never the node; the verdict's TOOL_ERROR).
WRONG_NAMESPACE = "wrong_namespace"


def namespace_mismatch(sysfs: list[str], namespace: list[str]) -> str:
    """'' when the interfaces sysfs lists are those of this process's network namespace
    (socket.if_nameindex()); else why not, naming each side. A process that entered a
    namespace with `nsenter --net` or `unshare --net` still sees the /sys mounted for
    another one (`ip netns exec` remounts it): its ports are not this node's."""
    shown, own = set(sysfs), set(namespace)
    if shown == own:
        return ""
    return (f"/sys/class/net belongs to another network namespace: it shows "
            f"{listed(shown)}; this process's namespace has {listed(own)} "
            f"(socket.if_nameindex()); no port read (nsenter --net or unshare keep the "
            f"/sys of the namespace they left: ip netns exec remounts it)")


def own_interfaces() -> list[str]:
    """The interfaces of this process's network namespace, as the kernel names them."""
    return [name for _, name in socket.if_nameindex()][:MAX_ENTRIES]


def read_ports(reader: Reader, ethtool: bool,
               namespace: Callable[[], list[str]] | None = None) -> dict[str, Any]:
    """The probe's data: every port the tree of `reader` has. `namespace`: the interfaces
    of the namespace the tree must belong to (this machine's /sys: own_interfaces); when
    the tree's differ, an error naming both, and no port (never another host's)."""
    data: dict[str, Any] = {"sysfs": reader.root, "read_at": time.time()}
    net = reader.path("class", "net")
    if not reader.names(net):
        data["error"] = f"{net} is not present: no sysfs to read"
        return data
    if namespace is not None:
        try:
            why = ""
            for attempt in range(2):  # an interface added or removed between the reads
                if attempt:
                    time.sleep(0.2)
                sysfs, own = reader.directories(net), namespace()
                why = namespace_mismatch(sysfs, own)
                if not why:
                    break
        except OSError as exc:  # no if_nameindex: nothing to compare with, said
            data["namespace_unchecked"] = f"socket.if_nameindex(): {exc.strerror or exc}"
        else:
            if why:
                data["error"] = why
                data["error_kind"] = WRONG_NAMESPACE
                data["interfaces"] = {"sysfs": sysfs, "namespace": own}
                return data
    data["ports"] = rdma_ports(reader) + net_ports(reader, ethtool)
    return data


def main(argv: list[str] | None = None) -> int:
    opts, _ = getopt.getopt(sys.argv[1:] if argv is None else argv, "",
                            ["sysfs=", "no-ethtool", "when="])
    options = dict(opts)
    root = options.get("--sysfs", "/sys")
    # ethtool asks this machine's kernel: only when the tree read is this machine's; and
    # this machine's tree must be this process's network namespace's
    ethtool = "--no-ethtool" not in options and root == "/sys"
    data = read_ports(Reader(root), ethtool, own_interfaces if root == "/sys" else None)
    if "--when" in options:  # which reading of the run this is (start, end): a label
        data["when"] = options["--when"]
    print(json.dumps({"probe": "nic", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
