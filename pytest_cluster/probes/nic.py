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

The tree is not trusted: a file is read only if it is a regular file (never a fifo, which
would block), its real path inside the tree (sysfs's own links stay inside it; a link out
of it is named, not followed), at most a page of it; a number is a whole number of at most
20 digits; at most MAX_PORTS ports are read (`ports_left_out` counts the rest), and an
entry that is no device or port (a port directory named `x`) is named in the reading's
`skipped`. The document printed is at most MAX_OUTPUT bytes.
Runs ON a node with only the standard library; shipped as a single file. Prints one JSON
document: {"probe": "nic", "schema": 1, "data": {"ports": [...], ...}}.
"""

from __future__ import annotations

import errno
import getopt
import heapq
import json
import os
import re
import socket
import stat
import struct
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # not imported when it runs: its start-up stays short
    from collections.abc import Callable, Iterator
    from typing import TypedDict

    # -- the payload: what this probe prints as its `data` -------------------------------

    class DeviceFacts(TypedDict):
        """What an RDMA device has once, the same on each of its ports."""

        firmware: str | None
        board_id: str | None
        hca_type: str | None
        node_guid: str | None
        sys_image_guid: str | None
        pci: str | None
        netdevs: list[str]

    class Port(TypedDict, total=False):
        """An RDMA port (kind "rdma": a device's facts too) or a network interface (kind
        "net": its driver's, from ethtool); named as the kernel does (mlx5_3/1, eth0)."""

        name: str
        device: str
        port: int | None
        kind: str
        state: str | None
        phys_state: str | None
        active: bool
        rate_gbit: float | None
        rate_text: str | None
        link_layer: str | None
        lid: str | None
        gid: bool | None
        netdev: str | None
        mtu: int | None
        firmware: str | None
        board_id: str | None
        hca_type: str | None
        node_guid: str | None
        sys_image_guid: str | None
        netdevs: list[str]
        driver: str | None
        driver_version: str | None
        bus: str | None
        ethtool_error: str | None
        address: str | None
        pci: str | None
        virtual: bool
        counters: dict[str, int]  # error counters by the kernel's name
        unreadable: dict[str, str]  # why, by the file not read

    class Interfaces(TypedDict):
        sysfs: list[str]
        namespace: list[str]

    class NicData(TypedDict, total=False):
        """The probe's payload."""

        sysfs: str
        read_at: float
        error: str
        error_kind: str
        namespace_unchecked: str
        interfaces: Interfaces
        ports: list[Port]
        ports_left_out: int
        skipped: dict[str, str]
        skipped_more: int
        output_cut: str
        when: str

    class Document(TypedDict):
        probe: str
        schema: int
        data: NicData

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
RATE = re.compile(r"([0-9]{1,6}(?:\.[0-9]{1,6})?) Gb/sec\b")
#: "4: ACTIVE", "5: LinkUp" (state_show, phys_state_show)
NUMBERED = re.compile(r"([0-9]{1,3}): (\S.*)")
#: A number sysfs writes: decimal (a counter is a u64: 20 digits) or hex (0x1a).
DECIMAL = re.compile(r"-?[0-9]{1,20}")
HEX = re.compile(r"0[xX][0-9a-fA-F]{1,16}")
LOWEST, HIGHEST = -(2**63), 2**64 - 1  # an s64's least, a u64's most
#: An RDMA port's directory: its number (a u8 in the InfiniBand spec).
PORT_NAME = re.compile(r"[0-9]{1,3}")
SIOCETHTOOL = 0x8946
ETHTOOL_GDRVINFO = 0x3
DRVINFO_BYTES = 196  # struct ethtool_drvinfo
IFREQ_BYTES = 40  # struct ifreq on 64-bit Linux
MAX_ENTRIES = 4096  # names read of one directory
MAX_PORTS = 1024  # RDMA ports and interfaces read of one node: the rest are counted
MAX_FILE_BYTES = 4096  # a sysfs attribute is at most a page
MAX_TEXT = 256  # characters of a value kept (a GID is 39, an IPoIB address 59)
MAX_NAME = 64  # characters of a device's name (IB_DEVICE_NAME_MAX; an interface's: 15)
MAX_NETDEVS = 16  # interfaces named of one RDMA device
MAX_SKIPPED = 32  # entries named that are no device or port; the rest counted
MAX_OUTPUT = 2 * 2**20  # bytes of the JSON document printed: ports past it are left out
#: Open a file without blocking on a fifo, without following a last link (checked first),
#: without taking a terminal.
OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC


class Refused(Exception):
    """A file the probe will not read, and why (not a regular file, a link out of the
    tree, larger than a sysfs attribute)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    for test, word in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a fifo"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a link")):
        if test(mode):
            return word
    return "not a file"


def shown(name: str) -> str:
    """A name found in the tree as it can be printed: itself when it is a plain name,
    else its escaped first MAX_NAME characters."""
    return name if valid_name(name) else ascii(name[:MAX_NAME])


def valid_name(name: str) -> bool:
    """A device's or interface's name as the kernel allows one (dev_valid_name): at most
    MAX_NAME printable characters, no space, no '/', not '.' or '..'."""
    return (0 < len(name) <= MAX_NAME and name.isprintable() and name not in (".", "..")
            and not any(char.isspace() or char == "/" for char in name))


def whole_number(raw: str) -> int | None:
    """The number sysfs wrote (decimal or 0x hex, within a u64 or an s64), else None."""
    if DECIMAL.fullmatch(raw):
        value = int(raw)
    elif HEX.fullmatch(raw):
        value = int(raw, 16)
    else:
        return None
    return value if LOWEST <= value <= HIGHEST else None


class Reader:
    """Reads files of one tree; what it cannot read is kept, by path, with why. A file is
    read only when it is a regular file whose real path is inside the tree (sysfs's own
    links, /sys/class/net/eth0 -> ../../devices/..., stay inside), opened without blocking,
    at most MAX_FILE_BYTES of it."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self._folders: dict[str, str | Refused] = {}
        #: Entries of the tree that are no device or port, with why (at most MAX_SKIPPED)
        self.skipped: dict[str, str] = {}
        self.skipped_more = 0

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def inside(self, path: str) -> str:
        """The real path of `path`, which must be inside the tree; Refused if a link
        leads out of it."""
        real = os.path.realpath(path)
        top = self.real_root.rstrip("/") + "/"
        if real != self.real_root and not real.startswith(top):
            raise Refused(f"a link out of {self.root}: not followed")
        return real

    def folder(self, path: str) -> str:
        """The real path of directory `path` (each resolved once)."""
        found = self._folders.get(path)
        if found is None:
            try:
                found = self.inside(path)
            except Refused as exc:
                found = exc
            self._folders[path] = found
        if isinstance(found, Refused):
            raise found
        return found

    def raw(self, path: str) -> bytes:
        """The bytes of file `path`; Refused or OSError when it is not read."""
        real = os.path.join(self.folder(os.path.dirname(path)), os.path.basename(path))
        try:
            fd = os.open(real, OPEN_FLAGS)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            fd = os.open(self.inside(real), OPEN_FLAGS)  # a link: where it leads
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise Refused(f"{kind_of(mode)}, not a regular file: not read")
            data = b""
            while len(data) <= MAX_FILE_BYTES:
                chunk = os.read(fd, MAX_FILE_BYTES + 1 - len(data))
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
        if len(data) > MAX_FILE_BYTES:
            raise Refused(f"more than {MAX_FILE_BYTES} bytes (a sysfs attribute is at most "
                          "a page): not read")
        return data

    def text(self, path: str, missing: dict[str, str]) -> str | None:
        try:
            value = self.raw(path).decode("utf-8", errors="replace").strip()
        except Refused as exc:
            missing[path] = exc.why
            return None
        except FileNotFoundError:
            missing[path] = "not present"
            return None
        except PermissionError:
            missing[path] = "permission denied (readable by root only)"
            return None
        except OSError as exc:
            # EINVAL: speed of a link that is down, or of a virtual interface
            missing[path] = exc.strerror or str(exc)
            return None
        if len(value) > MAX_TEXT:
            missing[path] = f"{len(value)} characters: longer than any value of the sysfs " \
                            f"ABI (at most {MAX_TEXT} read)"
            return None
        return value

    def number(self, path: str, missing: dict[str, str]) -> int | None:
        raw = self.text(path, missing)
        if raw is None:
            return None
        value = whole_number(raw)
        if value is None:
            missing[path] = f"not a number: {raw[:40]!r} (expected a whole number of at " \
                            "most 20 digits, or 0x and 16)"
        return value

    def listing(self, path: str, limit: int = MAX_ENTRIES) -> tuple[list[str], int]:
        """The first `limit` names of directory `path` in order, and how many it has in
        all; none when it cannot be listed or is out of the tree."""
        total = 0

        def counted(entries: Iterator[os.DirEntry[str]]) -> Iterator[str]:
            nonlocal total
            for entry in entries:
                total += 1
                yield entry.name

        try:
            with os.scandir(self.folder(path)) as entries:
                return heapq.nsmallest(limit, counted(entries)), total
        except (OSError, Refused):
            return [], 0

    def names(self, path: str) -> list[str]:
        return self.listing(path)[0]

    def skip(self, path: str, why: str) -> None:
        """An entry of the tree that is no device or port, kept with why."""
        if len(self.skipped) < MAX_SKIPPED:
            self.skipped[path] = why
        else:
            self.skipped_more += 1

    def exists(self, path: str) -> bool:
        """Whether `path` is there, inside the tree."""
        try:
            return os.path.lexists(path) and bool(self.inside(path))
        except Refused:
            return False

    def directories(self, path: str) -> list[str]:
        """The names in `path` that are directories (an interface of class/net, not a
        file such as bonding_masters)."""
        return [name for name in self.names(path) if os.path.isdir(os.path.join(path, name))]

    def drvinfo(self, name: str) -> dict[str, str]:
        """Driver, its version, firmware and bus of interface `name` (`ethtool -i`)."""
        return drvinfo(name)

    def target(self, path: str) -> str | None:
        """The name a link points at (a device's PCI address), None if it is no link or
        leads out of the tree."""
        if not os.path.islink(path):
            return None
        try:
            name = os.path.basename(self.inside(path))
        except Refused:
            return None
        return name if valid_name(name) else None

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
    match = NUMBERED.fullmatch(raw)
    return match.group(2) if match else raw


def rate_gbit(raw: str | None, path: str, missing: dict[str, str]) -> float | None:
    if raw is None:
        return None
    match = RATE.match(raw)
    if match is None:
        missing[path] = f"not a rate: {raw[:40]!r}"
        return None
    return float(match.group(1))


class Budget:
    """How many more ports a reading may hold (MAX_PORTS), and how many it left out."""

    def __init__(self, limit: int = MAX_PORTS) -> None:
        self.left = limit
        self.left_out = 0

    def take(self) -> bool:
        """Whether one more port is read; if not, it is counted as left out."""
        if self.left > 0:
            self.left -= 1
            return True
        self.left_out += 1
        return False


def interface_name(reader: Reader, path: str, missing: dict[str, str]) -> str | None:
    """The interface named by the file at `path` (a GID's ndev), if it names one."""
    name = reader.text(path, {})
    if name and not valid_name(name):
        missing[path] = f"not an interface name: {name[:40]!a}"
        return None
    return name or None


def netdev_of(reader: Reader, device: str, port: str, missing: dict[str, str]) -> str | None:
    """The network interface of an RDMA port: GID 0's (RoCE), else the device's own
    interface whose dev_port is this port's (IPoIB, RoCE without a GID table entry)."""
    base = reader.path("class", "infiniband", device)
    ndev = interface_name(
        reader, os.path.join(base, "ports", port, "gid_attrs", "ndevs", "0"), missing)
    if ndev:
        return ndev
    net = os.path.join(base, "device", "net")
    for name in reader.names(net)[:MAX_NETDEVS]:
        if not valid_name(name):
            continue
        dev_port = reader.number(os.path.join(net, name, "dev_port"), {})
        if dev_port is None or dev_port == int(port) - 1:
            return name
    return None


def rdma_port(reader: Reader, device: str, port: str,
              facts: DeviceFacts) -> Port:
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
        "netdev": netdev, "mtu": mtu, "firmware": facts["firmware"],
        "board_id": facts["board_id"], "hca_type": facts["hca_type"],
        "node_guid": facts["node_guid"], "sys_image_guid": facts["sys_image_guid"],
        "pci": facts["pci"], "netdevs": facts["netdevs"],
        "virtual": False, "counters": {**counters, **hw}, "unreadable": missing}


def device_facts(reader: Reader, where: str, unread: dict[str, str]) -> DeviceFacts:
    """What an RDMA device has once, the same on each of its ports."""
    def text(name: str) -> str | None:
        return reader.text(os.path.join(where, name), unread)

    facts: DeviceFacts = {"firmware": text("fw_ver"), "board_id": text("board_id"),
                          "hca_type": text("hca_type"), "node_guid": text("node_guid"),
                          "sys_image_guid": text("sys_image_guid"),
                          "pci": reader.target(os.path.join(where, "device")), "netdevs": []}
    netdevs = [name for name in reader.names(os.path.join(where, "device", "net"))
               if valid_name(name)]
    facts["netdevs"] = netdevs[:MAX_NETDEVS]
    return facts


def port_names(reader: Reader, where: str, budget: Budget) -> list[str]:
    """The ports of the RDMA device at `where` that the budget lets read."""
    folder = os.path.join(where, "ports")
    names, total = reader.listing(folder, MAX_PORTS)
    budget.left_out += total - len(names)
    wanted = []
    for port in names:
        if not PORT_NAME.fullmatch(port):
            reader.skip(os.path.join(folder, shown(port)), "not a port number (1 to 3 digits)")
        elif budget.take():
            wanted.append(port)
    return wanted


def rdma_ports(reader: Reader, budget: Budget) -> list[Port]:
    found: list[Port] = []
    root = reader.path("class", "infiniband")
    devices, total = reader.listing(root, MAX_PORTS)
    budget.left_out += total - len(devices)  # a device not listed: at least one port
    for device in devices:
        where = os.path.join(root, device)
        if not valid_name(device):
            reader.skip(os.path.join(root, shown(device)), "not a device name")
            continue
        ports = port_names(reader, where, budget)
        if not ports:
            continue
        unread: dict[str, str] = {}
        facts = device_facts(reader, where, unread)
        for port in ports:
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


def net_port(reader: Reader, name: str, ethtool: bool) -> Port | None:
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


def net_ports(reader: Reader, ethtool: bool, budget: Budget) -> list[Port]:
    found: list[Port] = []
    root = reader.path("class", "net")
    names, total = reader.listing(root, MAX_PORTS + 1)  # and the loopback
    budget.left_out += total - len(names)
    for name in names:
        if not valid_name(name):
            reader.skip(os.path.join(root, shown(name)), "not an interface name")
        elif budget.left <= 0:
            if name != "lo":  # the loopback is no port, read or not
                budget.left_out += 1
        else:
            port = net_port(reader, name, ethtool)
            if port is not None:
                budget.take()
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
               namespace: Callable[[], list[str]] | None = None) -> NicData:
    """The probe's data: every port the tree of `reader` has. `namespace`: the interfaces
    of the namespace the tree must belong to (this machine's /sys: own_interfaces); when
    the tree's differ, an error naming both, and no port (never another host's)."""
    data: NicData = {"sysfs": reader.root, "read_at": time.time()}
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
    budget = Budget()
    data["ports"] = rdma_ports(reader, budget) + net_ports(reader, ethtool, budget)
    data["ports_left_out"] = budget.left_out
    # not `unreadable`: a payload with that key reads as {"unreadable": why}, no reading
    data["skipped"] = reader.skipped
    if reader.skipped_more:
        data["skipped_more"] = reader.skipped_more
    return data


def bounded(document: Document) -> str:
    """`document` as JSON of at most MAX_OUTPUT bytes: the ports that do not fit are left
    out, and counted."""
    text = json.dumps(document)
    data = document["data"]
    ports = data.get("ports")
    if len(text) <= MAX_OUTPUT or not ports:
        return text
    room = MAX_OUTPUT - (len(text) - len(json.dumps(ports))) - 256  # the count's digits
    kept = 0
    for port in ports:
        room -= len(json.dumps(port)) + 2
        if room < 0:
            break
        kept += 1
    data["ports_left_out"] += len(ports) - kept
    data["ports"] = ports[:kept]
    data["output_cut"] = f"{len(ports) - kept} port(s) left out: more than {MAX_OUTPUT} " \
                         "bytes of output"
    return json.dumps(document)


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
    print(bounded({"probe": "nic", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
