"""The network interfaces but the loopback: `<sysfs>/class/net/IF`."""

from __future__ import annotations

import os

from .pcie import pcie_link
from .sysfs import MAX_PORTS, shown, valid_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import Port
    from .sysfs import Budget, Reader


#: The error statistics of a network interface (statistics/).
NET_ERRORS = ("rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "rx_crc_errors",
              "rx_frame_errors", "rx_fifo_errors", "rx_missed_errors", "rx_over_errors",
              "tx_carrier_errors", "tx_aborted_errors", "tx_fifo_errors",
              "collisions")
#: /sys/class/net/IF/type (include/uapi/linux/if_arp.h)
LINK_LAYERS = {1: "Ethernet", 32: "InfiniBand", 772: "loopback", 65534: "none"}


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
        "pcie": pcie_link(reader, os.path.join(base, "device"), missing),
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
