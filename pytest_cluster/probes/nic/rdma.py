"""The RDMA ports (InfiniBand, RoCE): `<sysfs>/class/infiniband/DEV/ports/N`."""

from __future__ import annotations

import os
import re

from .pcie import pcie_link
from .sysfs import MAX_PORTS, shown, valid_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import DeviceFacts, Port
    from .sysfs import Budget, Reader


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
#: "400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X SDR)" (drivers/infiniband/core/sysfs.c rate_show)
RATE = re.compile(r"([0-9]{1,6}(?:\.[0-9]{1,6})?) Gb/sec\b")
#: "4: ACTIVE", "5: LinkUp" (state_show, phys_state_show)
NUMBERED = re.compile(r"([0-9]{1,3}): (\S.*)")
#: An RDMA port's directory: its number (a u8 in the InfiniBand spec).
PORT_NAME = re.compile(r"[0-9]{1,3}")
MAX_NETDEVS = 16  # interfaces named of one RDMA device


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
        "pci": facts["pci"], "pcie": facts["pcie"], "netdevs": facts["netdevs"],
        "virtual": False, "counters": {**counters, **hw}, "unreadable": missing}


def device_facts(reader: Reader, where: str, unread: dict[str, str]) -> DeviceFacts:
    """What an RDMA device has once, the same on each of its ports."""
    def text(name: str) -> str | None:
        return reader.text(os.path.join(where, name), unread)

    facts: DeviceFacts = {"firmware": text("fw_ver"), "board_id": text("board_id"),
                          "hca_type": text("hca_type"), "node_guid": text("node_guid"),
                          "sys_image_guid": text("sys_image_guid"),
                          "pci": reader.target(os.path.join(where, "device")),
                          "pcie": pcie_link(reader, os.path.join(where, "device"), unread),
                          "netdevs": []}
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
