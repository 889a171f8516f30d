"""Which ports of a NIC probe's answer a fabric clause counts, and what is wrong with them.

The spec's `fabric.devices` (a glob of port or device names) chooses; without it the RDMA
ports count when the node has any, else the network interfaces that are devices (not a
veth, a bridge or a tunnel). Every function takes the probe's `ports` list and names each
port as the kernel does (`mlx5_3/1`, `eth0`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, cast

from pytest_cluster.hostlist import compress_hostlist
from pytest_cluster.measure import plausible
from pytest_cluster.measure.plausible import COUNTER
from pytest_cluster.probes import ProbeCall

if TYPE_CHECKING:
    from pytest_cluster.probes.nic import Port

GBIT = 1e9 / 8  # bytes/s in a Gb/s

#: The NIC probe at the run's start (every fabric check reads it; taken before the first
#: case) and at its end (after every other case, with no load running: its error counters
#: compared with the start's).
NIC_START = ProbeCall("nic", ("--when", "start"))
NIC_END = ProbeCall("nic", ("--when", "end"))
#: A fresh reading of the nodes of a rail's job that failed: is its port down now?
NIC_RECHECK = ProbeCall("nic", ("--when", "rail_recheck"))


#: The most ports one node's answer may list (a node's answer is not trusted blindly).
MAX_PORTS = 4096


def ports_of(payload: Any) -> list[Port]:
    """The ports of a NIC probe's payload, each a map with a text `name`; ValueError
    saying what is wrong when the answer is not one (a node's output is untrusted). Only
    that much is checked: every other field of a port is read as untrusted still."""
    ports = payload.get("ports") if isinstance(payload, dict) else None
    if not isinstance(ports, list):
        raise ValueError("the NIC probe's answer has no list of ports")
    if len(ports) > MAX_PORTS:
        raise ValueError(f"the NIC probe's answer lists {len(ports)} ports (at most "
                         f"{MAX_PORTS})")
    left_out = payload.get("ports_left_out")
    if isinstance(left_out, int) and not isinstance(left_out, bool) and left_out > 0:
        # judged on some of its ports only, a node would pass on the ones read
        raise ValueError(f"the NIC probe read {len(ports)} ports and left out {left_out} "
                         "more (more than a node has: at most 1,024 are read)")
    for index, port in enumerate(ports):
        if not isinstance(port, dict) or not isinstance(port.get("name"), str) \
                or not isinstance(port.get("counters", {}), dict):
            raise ValueError(f"the NIC probe's port {index} is not a map with a name")
        wrong = _implausible(port)
        if wrong:
            raise ValueError(f"the NIC probe's port {port['name'][:60]!r}: {wrong}")
    return cast("list[Port]", ports)


def _implausible(port: Mapping[str, object]) -> str | None:
    """Why a port's numbers are none a real port has (plausible.PORT_FIELDS, COUNTER: a
    rate, an MTU, an error counter of -5), or None."""
    for limit in plausible.PORT_FIELDS:
        if port.get(limit.field) is not None and not limit.holds(port[limit.field]):
            return limit.refused(port[limit.field])
    counters = port.get("counters")  # a map or none (ports_of checked)
    for name, value in counters.items() if isinstance(counters, dict) else ():
        if value is not None and not COUNTER.holds(value):
            return replace(COUNTER, field=f"counters.{str(name)[:60]}").refused(value)
    return None


def counted(ports: list[Port], devices: str | None) -> list[Port]:
    """The ports the fabric clauses count, in the probe's order."""
    if devices is not None:
        return [p for p in ports
                if fnmatchcase(str(p.get("name")), devices)
                or fnmatchcase(str(p.get("device")), devices)]
    rdma = [p for p in ports if p.get("kind") == "rdma"]
    return rdma or [p for p in ports if p.get("kind") == "net" and not p.get("virtual")]


def which(devices: str | None) -> str:
    """The counted ports in words, for a method and a message."""
    if devices is not None:
        return f"the ports matching {devices!r}"
    return "the RDMA ports (else the network interfaces that are devices)"


def state(port: Port) -> str:
    """'DOWN, Polling' of an RDMA port, 'down' of an interface."""
    return ", ".join(str(part) for part in (port.get("state"), port.get("phys_state"))
                     if part is not None) or "state unreadable"


def inactive(ports: list[Port]) -> list[str]:
    """'mlx5_3/1 (DOWN, Polling)' for each port that is not active."""
    return [f"{p['name']} ({state(p)})" for p in ports if not p.get("active")]


#: Why a rail's search runs no job on a node's port seen down (each job on it would wait
#: out interconnect.timeout and measure nothing); `seen`: AT_START or AFTER_FAILURE.
DOWN_WHY = "port {port} on {node} is down ({state}), seen by {seen}"
AT_START = "the NIC probe at the run's start (fabric.ports): not run on it"
AFTER_FAILURE = "the NIC probe after a job on it failed: not run on it again"


def down_on(ports_by_node: dict[str, list[Port]], name: str,
            seen: str = AT_START) -> dict[str, str]:
    """The nodes whose port `name` is not active, each with why the rail search leaves it
    out of that rail (DOWN_WHY); a node without that port is not among them."""
    return {node: DOWN_WHY.format(port=name, node=node, state=state(port), seen=seen)
            for node, ports in ports_by_node.items() for port in ports
            if str(port.get("name")) == name and not port.get("active")}


def rate_bytes(port: Port) -> float | None:
    """The port's rate in bytes/s (the kernel gives Gb/s), None when unreadable."""
    gbit = port.get("rate_gbit")
    return None if gbit is None else float(gbit) * GBIT


def unreadable(port: Port, field: str, files: tuple[str, ...], name: str = "") -> str:
    """Why a port's field could not be read: what the probe says of `files`, the sysfs
    files the field is read from; `name`: the port's, or its device's ports'."""
    reasons = {path: why for path, why in (port.get("unreadable") or {}).items()
               if path.rsplit("/", 1)[-1] in files}
    shown = "; ".join(f"{path}: {why}" for path, why in list(reasons.items())[:2])
    return f"{name or port['name']}: no {field}" + (f" ({shown})" if shown else "")


#: A port's PCIe link (the NIC probe's `pcie`): each figure, the sysfs file it is read
#: from, and the values a PCIe link can have (Gen1 to Gen6, x1 to x32).
PCIE_FIELDS = {"gen": ("current_link_speed", range(1, 7)),
               "max_gen": ("max_link_speed", range(1, 7)),
               "width": ("current_link_width", range(1, 33)),
               "max_width": ("max_link_width", range(1, 33))}


@dataclass(frozen=True)
class PcieLinks:
    """The PCIe links of a node's counted ports, one per PCI device (its ports named
    together): those below their maximum ('mlx5_4/1 PCIe Gen5 x8, can do Gen5 x16'),
    those not read (why), every device's link read ('Gen5 x16 of Gen5 x16') by its
    name, how many devices there are, and the devices that are SR-IOV virtual functions
    (`virtual`, by name: left out, neither passed nor failed)."""

    below: tuple[str, ...]
    unread: tuple[str, ...]
    links: dict[str, str]
    devices: int
    virtual: tuple[str, ...] = ()
    #: the interfaces with no PCI device (a veth, a bond, a VLAN: no link of their own)
    no_device: tuple[str, ...] = ()

    @property
    def judged(self) -> int:
        """How many devices were judged: those that are no virtual function, and have a PCI
        device."""
        return self.devices - len(self.virtual) - len(self.no_device)

    @property
    def left_out(self) -> str:
        """Why some links were not judged, '' when all were: 'mlx5_ib[0-7] are SR-IOV
        virtual functions: ...', 'eth0 has no PCI device: ...'."""
        said = []
        if self.virtual:
            names = compress_hostlist(self.virtual)
            verb = "is an SR-IOV virtual function: its" if len(self.virtual) == 1 \
                else "are SR-IOV virtual functions: their"
            said.append(f"{names} {verb} PCIe link is the host's, which a VM cannot read")
        if self.no_device:
            names = compress_hostlist(self.no_device)
            verb = "has no PCI device (a virtual interface" if len(self.no_device) == 1 \
                else "have no PCI device (virtual interfaces"
            said.append(f"{names} {verb}: a veth, a bond, a VLAN): no PCIe link of "
                        f"{'its' if len(self.no_device) == 1 else 'their'} own")
        return "; ".join(said)

    @property
    def measured(self) -> str:
        """Each link and the devices that have it: 'Gen5 x16 of Gen5 x16 (mlx5_[0-7])'."""
        devices: dict[str, list[str]] = {}
        for names, link in self.links.items():
            devices.setdefault(link, []).append(names)
        return ", ".join(f"{link} ({compress_hostlist(names)})"
                         for link, names in devices.items()) or "no PCIe link read"


def _figure(link: Mapping[str, object], key: str) -> int | None:
    value = link.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) \
        and value in PCIE_FIELDS[key][1] else None


def pcie_links(ports: list[Port]) -> PcieLinks:
    """The counted ports' PCIe links, each PCI device's once (the ports of one device share
    its link): a link below its maximum generation or width is `below`; a device whose
    link, or part of it, was not read (no PCI Express device, 'Unknown', a figure no
    link has) is `unread`, never at its maximum; an SR-IOV virtual function's
    (`virtual_function`: its link registers are reserved, the link is its host's) is
    `virtual`, neither; so is an interface with no PCI device (`no_device`: a veth, a bond,
    a VLAN). An RDMA port with no PCI device is `unread`: every RDMA device is a card's."""
    devices: dict[str, list[Port]] = {}
    for port in ports:
        devices.setdefault(str(port.get("pci") or port["name"]), []).append(port)
    below: list[str] = []
    unread: list[str] = []
    links: dict[str, str] = {}
    virtual: list[str] = []
    no_device: list[str] = []
    for group in devices.values():
        port = group[0]
        names = ", ".join(str(p["name"]) for p in group)
        link = port.get("pcie")
        if isinstance(link, dict) and link.get("virtual_function") is True:
            virtual.append(str(port.get("device") or names))  # its figures: the host's
            continue
        if link is None and port.get("kind") == "net":
            no_device.append(names)
            continue
        if not isinstance(link, dict):
            what = "PCI Express device (a virtual port has none)" if link is None \
                else f"PCIe link (the node reported {str(link)[:40]!r})"
            unread.append(unreadable(port, what, ("device",), names))
            continue
        found = {key: _figure(link, key) for key in PCIE_FIELDS}
        gen, best_gen, width, best_width = found.values()
        now = f"Gen{gen or '?'} x{width or '?'}"
        best = f"Gen{best_gen or '?'} x{best_width or '?'}"
        links[str(port.get("device") or names)] = f"{now} of {best}"
        if (gen and best_gen and gen < best_gen) or (width and best_width and width < best_width):
            below.append(f"{names} PCIe {now}, can do {best}")
        elif None in found.values():
            gone = [key for key, value in found.items() if value is None]
            unread.append(unreadable(port, f"PCIe {', '.join(gone)}",
                                     tuple(PCIE_FIELDS[key][0] for key in gone), names))
    return PcieLinks(tuple(below), tuple(unread), links, len(devices), tuple(virtual),
                     tuple(no_device))


#: The counters that must not grow during a run: a link that went down or retrained,
#: packets received in error, integrity and buffer-overrun errors; an interface's errors
#: and carrier changes. Symbol errors and discards are recorded, not judged: a healthy link
#: sees a few symbol errors, and congestion discards.
MUST_NOT_GROW = ("link_downed", "link_error_recovery", "port_rcv_errors",
                 "port_rcv_remote_physical_errors", "local_link_integrity_errors",
                 "excessive_buffer_overrun_errors", "carrier_changes", "rx_errors",
                 "tx_errors", "rx_crc_errors", "rx_frame_errors", "tx_carrier_errors")


def grown(before: list[Port], after: list[Port]) -> list[str]:
    """'mlx5_3/1: link_downed 0 -> 2' for each counter of MUST_NOT_GROW that grew on a
    port between two readings (a port only one of them has, or a counter reset by a
    driver reload, is not growth)."""
    was = {str(p.get("name")): p.get("counters") or {} for p in before}
    found = []
    for port in after:
        old = was.get(str(port.get("name")))
        if old is None:
            continue
        now = port.get("counters") or {}
        for name in MUST_NOT_GROW:
            first, last = old.get(name), now.get(name)
            if isinstance(first, int) and isinstance(last, int) and last > first:
                found.append(f"{port['name']}: {name} {first} -> {last}")
    return found


def symbol_rates(before: list[Port], after: list[Port],
                 seconds: float) -> dict[str, tuple[int, float]]:
    """Per port in both readings whose symbol_error counter was read in both: how many
    symbol errors it took over `seconds` and their rate per second (a counter that went
    back, a driver reload, counts from 0)."""
    was = {str(p.get("name")): (p.get("counters") or {}).get("symbol_error") for p in before}
    found = {}
    for port in after:
        first = was.get(str(port.get("name")))
        last = (port.get("counters") or {}).get("symbol_error")
        if isinstance(first, int) and isinstance(last, int):
            taken = last - first if last >= first else last
            found[str(port["name"])] = (taken, taken / seconds)
    return found


def firmware(ports: list[Port]) -> str:
    """The firmware of the counted ports' devices, one text per node that names the
    devices of each version: '28.36.1010 (mlx5_0), 28.39.1002 (mlx5_[1-7])'; '' if none
    says."""
    devices: dict[str, set[str]] = {}
    for port in ports:
        if port.get("firmware"):
            devices.setdefault(str(port["firmware"]), set()).add(str(port.get("device")))
    return ", ".join(f"{version} ({compress_hostlist(sorted(names))})"
                     for version, names in sorted(devices.items()))


#: The most rails (counted ports) a node's rails are measured on, one after another.
MAX_RAILS = 64


def rails(ports_by_node: dict[str, list[Port]]) -> dict[str, Port]:
    """The rails to measure one at a time: every counted port name any node has, in the
    order first seen, each with the first node's active port of that name, else its first
    (what binds a job to it: rail_env)."""
    found: dict[str, Port] = {}
    for ports in ports_by_node.values():
        for port in ports:
            first = found.get(str(port["name"]))
            if first is None or (not first.get("active") and port.get("active")):
                found[str(port["name"])] = port  # an active one binds, where one is
    return dict(list(found.items())[:MAX_RAILS])


def rail_env(port: Port, backend: str) -> tuple[tuple[str, str], ...]:
    """The environment that binds a job's ranks to one port, so the job measures that
    rail alone: NCCL over an RDMA port uses that HCA port only (`NCCL_IB_HCA==mlx5_3:1`,
    exact match); NCCL over an interface uses that socket interface with IB off; gloo uses
    the port's interface (an RDMA port's IPoIB or RoCE netdev). ValueError saying why
    when the port cannot carry the backend (an RDMA port without an interface, for
    gloo)."""
    name = str(port.get("name"))
    if backend == "nccl":
        if port.get("kind") == "rdma":
            return (("NCCL_IB_HCA", f"={port.get('device')}:{port.get('port')}"),)
        return (("NCCL_SOCKET_IFNAME", f"={name}"), ("NCCL_IB_DISABLE", "1"))
    netdev = port.get("netdev")
    if not isinstance(netdev, str) or not netdev:
        raise ValueError(f"{name} has no network interface for gloo to bind to")
    return (("GLOO_SOCKET_IFNAME", netdev),)
