"""A simulated node's network ports, as a sysfs tree in memory that the real NIC probe
reads (probes/nic/sysfs.py's reader over these files instead of /sys): the probe's own parsing
runs on every simulated answer.

Each node has NICS_PER_NODE InfiniBand HCAs (mlx5_0..7, one port each, 400 Gb/s NDR, its
IPoIB interface ibp<i>s0) and a management Ethernet interface eno1; the spec's
interconnect.inter_node (nics_per_node, rate_per_nic, kind roce/ethernet) changes them.
Faults: `nic: 3` with `nic_down`, `nic_rate`, `nic_firmware`, `nic_link_downed` or
`nic_symbol_errors` (from a soak round with `from_round`; the counters grow between a run's
first and last reading), `nic_pcie_gen` or `nic_pcie_width` (its card's PCIe link, Gen5
x16 at best, trained lower: a Gen4 slot, a x8 riser), `nic_virtual` (the node's NICs, or
with `nic:` that one, are SR-IOV virtual functions as a cloud VM sees them: a ConnectX VF's
PCI ID and a link the kernel calls 'Unknown' x0), and a node's `link_factor` slows
every port; a node that `lies: counters` gives its first port a receive error count of -5.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_cluster.contract.sections.sim_records import NIC_PCIE, NICS_PER_NODE
from pytest_cluster.probes.nic import MAX_ENTRIES, Reader, read_ports
from pytest_cluster.sim.cluster import IB_SPEEDS, faults_on, lies, link_factor

if TYPE_CHECKING:
    from pytest_cluster.contract.model import InterconnectSpec
    from pytest_cluster.contract.sections.sim_records import SimSpec
    from pytest_cluster.probes.job_node import RankEntry
    from pytest_cluster.probes.nic import NicData

ROOT = "/sim/sys"
FIRMWARE = "28.39.1002"
GBIT = 1e9 / 8


class Tree(Reader):
    """A Reader over files held in memory: path -> text."""

    def __init__(self, files: dict[str, str], links: dict[str, str] | None = None,
                 drivers: dict[str, dict[str, str]] | None = None) -> None:
        super().__init__(ROOT)
        self.files = files
        self.links = links or {}  # a link's path -> the name it points at
        self.drivers = drivers or {}  # an interface -> what `ethtool -i` says
        self.dirs: dict[str, set[str]] = {}
        for path in files:
            parent, name = os.path.split(path)
            while parent.startswith(ROOT):
                self.dirs.setdefault(parent, set()).add(name)
                parent, name = os.path.split(parent)

    def text(self, path: str, missing: dict[str, str]) -> str | None:
        if path not in self.files:
            missing[path] = "not present"
            return None
        return self.files[path]

    def names(self, path: str) -> list[str]:
        return sorted(self.dirs.get(path, ()))

    def listing(self, path: str, limit: int = MAX_ENTRIES) -> tuple[list[str], int]:
        names = self.names(path)
        return names[:limit], len(names)

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    def directories(self, path: str) -> list[str]:
        return [name for name in self.names(path) if os.path.join(path, name) in self.dirs]

    def target(self, path: str) -> str | None:
        return self.links.get(path)

    def drvinfo(self, name: str) -> dict[str, str]:
        return self.drivers.get(name, {"error": f"ethtool drvinfo of {name}: Operation not "
                                                "supported"})


def _layout(ic: InterconnectSpec | None) -> tuple[int, float, str]:
    """(NICs per node, Gb/s each, link layer) from the spec's inter_node link."""
    link = ic.inter_node if ic is not None else None
    if link is None:
        return NICS_PER_NODE, 400.0, "InfiniBand"
    layer = "InfiniBand" if link.kind.lower() in ("infiniband", "ib", "network") else "Ethernet"
    return link.count, link.rate_bytes_per_s / GBIT, layer


def port_gbit(sim: SimSpec, node: str, ic: InterconnectSpec | None,
              index: int) -> float | None:
    """The rate of the node's NIC `index` in Gb/s (its faults and the node's link_factor
    applied); None when it is down or the node has no such NIC."""
    count, rate, _ = _layout(ic)
    fault = next((f for f in faults_on(sim, node) if f.nic == index), None)
    if not 0 <= index < count or (fault is not None and fault.nic_down):
        return None
    if fault is not None and fault.nic_rate_gbit:
        return fault.nic_rate_gbit
    return rate * link_factor(sim, node)


def network_share(sim: SimSpec, ic: InterconnectSpec | None, node: str) -> float:
    """The share of its inter-node rate `node` has: its ports' rates (a port down adds
    nothing, one at a lower rate its rate, the node's link_factor applied) over its ports'
    healthy rate."""
    count, rate, _ = _layout(ic)
    return sum(port_gbit(sim, node, ic, i) or 0.0 for i in range(count)) / (count * rate)


def device(sim: SimSpec, index: int) -> str:
    """The RDMA device name of NIC `index` (sim.nic_prefix: mlx5_3, or mlx5_ib3 as Azure's
    ND VMs name theirs)."""
    return f"{sim.nic_prefix}{index}"


def device_index(sim: SimSpec, name: str) -> int | None:
    """The NIC index of an RDMA device name (`device`'s inverse); None: not one of ours."""
    found = re.match(rf"^{re.escape(sim.nic_prefix)}(\d+)$", name)
    return int(found.group(1)) if found else None


def rail_of(sim: SimSpec, env: Sequence[tuple[str, str]]) -> int | None:
    """The NIC index a job's environment binds its ranks to (NCCL_IB_HCA=mlx5_3..., or an
    interface of it: ibp3s0, enp3s0np0); None: no rail (every NIC)."""
    rail = re.compile(rf"^=?{re.escape(sim.nic_prefix)}(\d+)(?::\d+)?$"
                      r"|^=?(?:ibp|enp)(\d+)s0(?:np0)?$")
    for name, value in env:
        if name in ("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
            found = rail.match(value)
            if found:
                return int(found.group(1) or found.group(2))
    return None


def tree(sim: SimSpec, node: str, ic: InterconnectSpec | None,
         when: str | None = None) -> dict[str, str]:
    """The node's sysfs files of its NICs; read at the run's end (`when`), a port with a
    nic_link_downed fault has gone down that many times."""
    count, _, layer = _layout(ic)
    faults = {f.nic: f for f in faults_on(sim, node) if f.nic is not None}
    virtual = {f.nic for f in faults_on(sim, node) if f.nic_virtual}
    digest = hashlib.sha256(node.encode()).hexdigest()
    files: dict[str, str] = {}
    for index in range(count):
        fault = faults.get(index)
        name, netdev = device(sim, index), f"ibp{index}s0" if layer == "InfiniBand" \
            else f"enp{index}s0np0"
        base = f"{ROOT}/class/infiniband/{name}"
        port = f"{base}/ports/1"
        gbit = port_gbit(sim, node, ic, index)
        down = gbit is None
        gbit = gbit or _layout(ic)[1] * link_factor(sim, node)  # down: its last rate
        files.update({
            f"{base}/fw_ver": fault.nic_firmware if fault is not None and fault.nic_firmware
            else FIRMWARE,
            f"{base}/board_id": "MT_0000000838",
            f"{base}/hca_type": "MT4129",
            f"{base}/node_guid": guid(digest, index),
            f"{base}/sys_image_guid": guid(digest, index),
            f"{port}/state": "1: DOWN" if down else "4: ACTIVE",
            f"{port}/phys_state": "3: Disabled" if down else "5: LinkUp",
            f"{port}/rate": f"{gbit:g} Gb/sec (4X {IB_SPEEDS.get(round(gbit), 'NDR')})",
            f"{port}/link_layer": layer,
            f"{port}/lid": f"0x{index + 1:x}" if layer == "InfiniBand" else "0x0",
            f"{port}/gids/0": f"fe80:0000:0000:0000:{guid(digest, index)}",
            f"{base}/device/net/{netdev}/dev_port": "0",
            f"{ROOT}/class/net/{netdev}/type": "32" if layer == "InfiniBand" else "1",
            f"{ROOT}/class/net/{netdev}/operstate": "down" if down else "up",
            f"{ROOT}/class/net/{netdev}/mtu": "4092" if layer == "InfiniBand" else "9000",
            f"{ROOT}/class/net/{netdev}/device/vendor": "0x15b3",
        })
        gen = fault.nic_pcie_gen if fault is not None and fault.nic_pcie_gen else NIC_PCIE[0]
        lanes = fault.nic_pcie_width if fault is not None and fault.nic_pcie_width \
            else NIC_PCIE[1]
        vf = None in virtual or index in virtual
        for card in (f"{base}/device", f"{ROOT}/class/net/{netdev}/device"):  # one card
            files.update(vf_files(card) if vf else pcie_files(card, gen, lanes, NIC_PCIE))
            files.update({f"{card}/vendor": "0x15b3",
                          f"{card}/device": VF_DEVICE if vf else PF_DEVICE})
        for counter in ("link_downed", "link_error_recovery", "symbol_error",
                        "port_rcv_errors", "port_xmit_discards"):
            files[f"{port}/counters/{counter}"] = "0"
        if fault is not None and when == "end":
            files[f"{port}/counters/link_downed"] = str(fault.nic_link_downed)
            files[f"{port}/counters/symbol_error"] = str(fault.nic_symbol_errors)
        if index == 0 and "counters" in lies(sim, node):  # a liar's count below zero
            files[f"{port}/counters/port_rcv_errors"] = "-5"
    eno = f"{ROOT}/class/net/eno1"
    files.update({f"{eno}/address": ":".join(digest[i:i + 2] for i in range(0, 12, 2)),
                  f"{eno}/type": "1", f"{eno}/operstate": "up", f"{eno}/carrier": "1",
                  f"{eno}/speed": "25000", f"{eno}/mtu": "9000", f"{eno}/carrier_changes": "1",
                  f"{eno}/device/vendor": "0x15b3", f"{ROOT}/class/net/lo/type": "772",
                  **pcie_files(f"{eno}/device", 4, 16, (4, 16))})  # a Gen4 x16 card
    return files


#: A PCIe link's speed by generation, as the kernel writes it (pci_speed_string).
PCIE_SPEEDS = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe",
               4: "16.0 GT/s PCIe", 5: "32.0 GT/s PCIe", 6: "64.0 GT/s PCIe"}


def pcie_files(device: str, gen: int, width: int, best: tuple[int, int]) -> dict[str, str]:
    """A PCI device's link files: trained at `gen` x`width`, able to run at `best`."""
    return {f"{device}/current_link_speed": PCIE_SPEEDS[gen],
            f"{device}/max_link_speed": PCIE_SPEEDS[best[0]],
            f"{device}/current_link_width": str(width),
            f"{device}/max_link_width": str(best[1])}


#: The PCI device IDs of a ConnectX-7 and of its virtual function (the kernel's mlx5
#: driver's table: 0x1021 ConnectX-7, 0x101e ConnectX Family mlx5Gen Virtual Function).
PF_DEVICE, VF_DEVICE = "0x1021", "0x101e"


def vf_files(device: str) -> dict[str, str]:
    """A virtual function's PCI device as a VM sees it: a Mellanox VF whose link registers
    are reserved (the kernel writes 'Unknown' and 0 lanes)."""
    return {f"{device}/current_link_speed": "Unknown",
            f"{device}/max_link_speed": "Unknown", f"{device}/current_link_width": "0",
            f"{device}/max_link_width": "0"}


def guid(digest: str, index: int) -> str:
    """The simulated HCA's GUID: from the node's name, one per NIC."""
    return f"{digest[:4]}:{digest[4:8]}:{digest[8:10]}{index:02x}:{digest[12:16]}"


#: The management interface's PCI address and what `ethtool -i` says of it.
ENO_PCI = "0000:c1:00.0"
ENO_DRIVER = {"driver": "mlx5_core", "driver_version": "24.04", "firmware": "22.39.1002",
              "bus": ENO_PCI}


def nic_payload(sim: SimSpec, node: str, ic: InterconnectSpec | None,
                args: tuple[str, ...] = ()) -> NicData:
    """The NIC probe's answer for a simulated node (`args`: the probe's): the probe's
    reader over its tree, checked against its namespace's interfaces as on a node."""
    options = dict(zip(args[::2], args[1::2], strict=False))
    when = options.get("--when")
    reader = Tree(tree(sim, node, ic, when), {f"{ROOT}/class/net/eno1/device": ENO_PCI},
                  {"eno1": ENO_DRIVER})
    # a simulated node's tree is its own namespace's: the probe's check runs, and holds
    data = read_ports(reader, ethtool=True,
                      namespace=lambda: reader.directories(f"{ROOT}/class/net"))
    if when is not None:
        data["when"] = when
    return data


#: What ib_write_bw reaches of a port's rate (RDMA write, one QP, large messages).
WRITE_EFFICIENCY = 0.97
#: The rows perftest prints (src/perftest_parameters.h RESULT_FMT_G, REPORT_FMT).
_PERFTEST_HEAD = (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "
                  "MsgRate[Mpps]")


def perftest_ranks(sim: SimSpec, ic: InterconnectSpec | None, nodes: Sequence[str],
                   args: Sequence[str]) -> list[list[RankEntry]]:
    """The perftest rank program's answer on simulated nodes (probes/jobs/perftest.py): rank 0
    serves, every other rank's client prints what ib_write_bw would, at the slower of its
    port and rank 0's (a port down: the client cannot reach the server, as perftest
    says)."""
    options = dict(zip(args[::2], args[1::2], strict=False))
    base = [str(a) for a in json.loads(options.get("--argv", "[]"))]
    named = device_index(sim, base[base.index("-d") + 1]) if "-d" in base else None
    index = -1 if named is None else named
    size = int(base[base.index("-s") + 1]) if "-s" in base else 65536
    seconds = float(base[base.index("-D") + 1]) if "-D" in base else 5.0
    server = port_gbit(sim, nodes[0], ic, index)
    ranks: list[list[RankEntry]] = [[{
        "rank": 0, "local_rank": 0, "exit_code": 0, "ended_at": None, "stderr_tail": "",
        "data": {"rank": 0, "role": "server", "tool": base[0] if base else "",
                 "clients": len(nodes) - 1, "exit_code": 0}}]]
    for rank, node in enumerate(nodes[1:], 1):
        mine = port_gbit(sim, node, ic, index)
        line = [*base, "-p", f"{29500 + rank}", nodes[0]]
        if server is None or mine is None:
            data = {"rank": rank, "role": "client", "tool": base[0], "argv": line,
                    "exit_code": 1, "stdout": "",
                    "stderr_tail": f"Couldn't connect to {nodes[0]}:{29500 + rank}\n"}
        else:
            gbit = min(server, mine) * WRITE_EFFICIENCY
            iterations = int(gbit * 1e9 / 8 * seconds / size)
            rate = iterations / seconds / 1e6
            table = (f"{'-' * 87}\n{_PERFTEST_HEAD}\n {size:<7d}    {iterations:<10d}"
                     f"       {0.0:<7.2f}            {gbit:<7.2f}\t\t     {rate:<7.6f}\n"
                     f"{'-' * 87}\n")
            data = {"rank": rank, "role": "client", "tool": base[0], "argv": line,
                    "exit_code": 0, "stdout": " WARNING: BW peak won't be measured in this "
                                              "run.\n" + table, "stderr_tail": ""}
        ranks.append([{"rank": rank, "local_rank": 0, "exit_code": 0, "ended_at": None,
                       "stderr_tail": "", "data": {**data, "simulated": True}}])
    return ranks
