"""What NCCL says it used, from its `NCCL_DEBUG=INFO` lines (subsystems INIT,NET).

NCCL prints, per rank, the network it chose (`Using network IB`, `Socket`, or a plugin's
name such as `IBext_v8`), the devices of that network (`NET/IB : Using [0]mlx5_0:1/IB
[1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>`, `NET/Socket : Using [0]eth0:10.0.0.1<0>`), how each
channel connects to each peer (`Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA`,
`via P2P/IPC`, `via P2P/CUMEM/read`, `via SHM/direct/direct`), whether NVLink SHARP is
available (`NVLS multicast support is available on dev 0`) and, after connecting,
`Connected all rings, use ring PXN 0 GDR 1`. Older versions write `Channel 01 :` without the
`/0`. Pure functions over the text; each line is matched on its own, anything else is
ignored, and what is not said is None (never guessed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pytest_cluster.hostlist import spans_of

#: Only these lines of a rank's log are kept (at most MAX_LINES), by the collective probe
#: (probes/collective.py, a copy) for this module and the evidence.
KEEP = re.compile(r"NCCL INFO (Using network |NET/\S+ : Using |Channel \d+(?:/\d+)? : .* via |"
                  r"NVLS multicast support|Connected all rings|Connected NVLS|NET/Plugin)")
MAX_LINES = 400
_NETWORK = re.compile(r"NCCL INFO Using network (\S+)")
_DEVICES = re.compile(r"NCCL INFO NET/(\S+) : Using (.*?)(?: ; OOB (\S+))?\s*$")
_DEVICE = re.compile(r"\[\d+\](\S+)")
_VIA = re.compile(r"NCCL INFO Channel (\d+)(?:/\d+)? : .* via (\S+)")
_NVLS = re.compile(r"NCCL INFO NVLS multicast support is (available|not available)")
_RINGS = re.compile(r"NCCL INFO Connected all rings.*?GDR (\d)")
_PLUGIN = re.compile(r"NCCL INFO NET/Plugin\s*:\s*(.*)$")


@dataclass
class Transport:
    """What one rank's NCCL log says it used."""

    network: str | None = None  # "IB", "Socket", a plugin's ("IBext_v8")
    devices: list[str] = field(default_factory=list)  # "mlx5_0:1/IB", "eth0:10.0.0.1<0>"
    oob: str | None = None  # the interface of the out-of-band bootstrap
    channels: dict[str, int] = field(default_factory=dict)  # "NET/IB/GDRDMA": 16, "P2P": 8
    net_devices: list[int] = field(default_factory=list)  # NET/IB/<n>: the NICs in use
    gdr: bool | None = None  # every network channel GPUDirect RDMA (None: none seen)
    nvls: bool | None = None
    plugin: str | None = None


def _kind(via: str) -> tuple[str, int | None, bool]:
    """('NET/IB', 3, True) of 'NET/IB/3/GDRDMA'; ('P2P', None, False) of 'P2P/IPC'."""
    parts = via.split("/")
    if parts[0] == "NET" and len(parts) >= 2:
        index = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None
        return f"NET/{parts[1]}", index, "GDRDMA" in parts[3:]
    return parts[0], None, False


def parse(text: str) -> Transport:
    """One rank's transport from its NCCL log."""
    found = Transport()
    gdr_net = plain_net = 0
    nets: set[int] = set()
    by_net: dict[str, tuple[list[str], str | None]] = {}  # NET/<name> : Using ...
    for line in text.splitlines():
        if (match := _NETWORK.search(line)) is not None:
            found.network = match.group(1)
        elif (match := _DEVICES.search(line)) is not None:
            by_net[match.group(1)] = (_DEVICE.findall(match.group(2)), match.group(3))
        elif (match := _VIA.search(line)) is not None:
            kind, index, gdr = _kind(match.group(2))
            name = f"{kind}/GDRDMA" if gdr else kind
            found.channels[name] = found.channels.get(name, 0) + 1
            if kind.startswith("NET/"):
                if gdr:
                    gdr_net += 1
                else:
                    plain_net += 1
                if index is not None:
                    nets.add(index)
        elif (match := _NVLS.search(line)) is not None:
            found.nvls = match.group(1) == "available"
        elif (match := _RINGS.search(line)) is not None and gdr_net + plain_net == 0:
            found.gdr = match.group(1) == "1"
        elif (match := _PLUGIN.search(line)) is not None:
            found.plugin = match.group(1).strip()
    if gdr_net + plain_net:
        found.gdr = plain_net == 0
    found.net_devices = sorted(nets)
    chosen = found.network
    if chosen is not None and chosen not in by_net:  # a plugin's IB: NET/IB's devices
        chosen = next((name for name in by_net if chosen.lower().startswith(name.lower())),
                      None)
    if chosen is None and len(by_net) == 1:
        chosen = next(iter(by_net))
    if chosen is not None and chosen in by_net:
        found.devices, found.oob = by_net[chosen]
    return found


def inter_node(transport: Transport) -> str | None:
    """The network NCCL used between nodes, as a spec names it: 'ib', 'socket', or the
    plugin's name lowercased; None when the log does not say."""
    if transport.network is None:
        nets = [name.split("/")[1] for name in transport.channels if name.startswith("NET/")]
        if not nets:
            return None
        name = nets[0]
    else:
        name = transport.network
    lowered = name.lower()
    return "ib" if lowered.startswith("ib") else lowered


def rank_ranges(ranks: list[int]) -> str:
    """'0-7,9' of [0, 1, ..., 7, 9]."""
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans_of(ranks))


def _grouped(values: dict[int, str]) -> dict[str, str]:
    """value -> the ranks that had it, as ranges."""
    by: dict[str, list[int]] = {}
    for rank, value in values.items():
        by.setdefault(value, []).append(rank)
    return {value: rank_ranges(ranks) for value, ranks in sorted(by.items())}


def summary(ranks: list[dict[str, Any]]) -> dict[str, Any]:
    """What a job's ranks used, each answer with the ranks that gave it: from NCCL's lines
    (`nccl_log`: the inter-node network, GPUDirect RDMA, NVLS, the devices, the channels
    by kind), or gloo's interface and address (`gloo`). A rank whose log says nothing is
    listed as not said."""
    nccl: dict[int, Transport] = {}
    gloo: dict[int, str] = {}
    unsaid: list[int] = []
    for data in ranks:
        rank = data.get("rank")
        if not isinstance(rank, int) or isinstance(rank, bool):
            continue  # a rank's answer without its number says nothing of a rank
        if isinstance(data.get("gloo"), dict):
            where = data["gloo"]
            gloo[rank] = f"{where.get('interface') or 'default'} {where.get('address')}"
        elif isinstance(data.get("nccl_log"), list):
            nccl[rank] = parse("\n".join(map(str, data["nccl_log"][:MAX_LINES])))
        else:
            unsaid.append(rank)
    found: dict[str, Any] = {}
    if gloo:
        found["gloo"] = _grouped(gloo)
    if nccl:
        found["inter_node"] = _grouped({r: str(inter_node(t)) for r, t in nccl.items()})
        found["gdr"] = _grouped({r: str(t.gdr).lower() for r, t in nccl.items()})
        found["nvls"] = _grouped({r: str(t.nvls).lower() for r, t in nccl.items()})
        found["devices"] = _grouped({r: " ".join(t.devices) or "none" for r, t in nccl.items()})
        channels: dict[str, int] = {}
        for transport in nccl.values():
            for kind, count in transport.channels.items():
                channels[kind] = channels.get(kind, 0) + count
        found["channels"] = dict(sorted(channels.items()))
    if unsaid:
        found["not_said"] = rank_ranges(unsaid)
    return found


def describe(found: dict[str, Any], between_nodes: bool = True) -> str:
    """The summary in a line, as the report and JUnit show it: 'inter_node ib (ranks
    0-15); gdr true (ranks 0-15); nvls true (ranks 0-15)'; inside a node (not
    `between_nodes`), the channels by kind and NVLS: 'channels P2P 8; nvls true (...)'."""
    parts = []
    if not between_nodes and found.get("channels"):
        parts.append("channels " + ", ".join(f"{kind} {count}" for kind, count
                                             in found["channels"].items()))
    keys = ("gloo", "inter_node", "gdr", "nvls") if between_nodes else ("gloo", "nvls")
    for key in keys:
        values = found.get(key)
        if values:
            parts.append(f"{key} " + ", ".join(f"{value} (ranks {ranks})"
                                               for value, ranks in values.items()))
    if found.get("not_said"):
        parts.append(f"not said by ranks {found['not_said']}")
    return "; ".join(parts)
