"""What NCCL says it used, from its `NCCL_DEBUG=INFO` lines (subsystems INIT,NET).

NCCL prints, per rank, the network it chose (`Using network IB`, `Socket`, or a plugin's
name such as `IBext_v8`), the devices of that network (`NET/IB : Using [0]mlx5_0:1/IB
[1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>`, `NET/Socket : Using [0]eth0:10.0.0.1<0>`), how each
channel connects to each peer (`Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA`,
`via P2P/IPC`, `via P2P/CUMEM/read`, `via SHM/direct/direct`), whether NVLink SHARP is
available (`NVLS multicast support is available on dev 0`) and, after connecting,
`Connected all rings, use ring PXN 0 GDR 1`. Older versions write `Channel 01 :` without the
`/0`; newer ones `[RO]; OOB ib0:...` after the devices, and a PXN channel `via
NET/IB/0(1)/GDRDMA` (NIC 0, through rank 1's proxy). Pure functions over the text
(a node's: untrusted); each line is read on its own, at most MAX_LINE characters of it,
with string scans and anchored patterns of bounded repeats (linear in the line, never a
backtracking `.*`); anything else is ignored, and what is not said is None (never
guessed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from pytest_cluster.hostlist import spans_of

#: Only these lines of a rank's log are kept (at most MAX_LINES, each cut to MAX_LINE
#: characters), by the collective probe (probes/jobs/collective.py, a copy of KEEP, MAX_LINES,
#: MAX_LINE and `kept`) for this module and the evidence: what follows a line's first
#: `NCCL INFO ` opens with one of these (a channel's line has ` via ` after).
KEEP = re.compile(r"Using network |NET/\S{1,64} : Using |(Channel) \d{1,6}(?:/\d{1,6})? : |"
                  r"NVLS multicast support|Connected all rings|Connected NVLS|NET/Plugin")
MAX_LINES = 400
#: The most characters of a line looked at: NCCL's longest (a list of 16 NICs) is about 400;
#: a longer line, a node's doing, is cut first, so no line costs more than this to read.
MAX_LINE = 2048
_MARK = "NCCL INFO "
_CHANNEL = re.compile(r"Channel \d{1,6}(?:/\d{1,6})? : ")
_DEVICE = re.compile(r"\[\d{1,6}\](\S+)")
_GDR = re.compile(r"GDR (\d)")
#: What a line says of the OOB interface, after its devices: ` ; OOB `, or `[RO]; OOB `
#: where the NICs use relaxed ordering.
_OOB = "; OOB "


def kept(line: str) -> bool:
    """Whether `line` of NCCL's log is one this module reads (KEEP, in its first MAX_LINE
    characters): a scan for `NCCL INFO `, an anchored pattern of bounded repeats and a
    scan for ` via `, each linear in the line."""
    cut = line[:MAX_LINE]
    at = cut.find("NCCL INFO ")
    if at < 0:
        return False
    rest = cut[at + len("NCCL INFO "):]
    found = KEEP.match(rest)
    return found is not None and (found.group(1) is None or " via " in rest[found.end():])


def _said(line: str) -> str | None:
    """What a line says after its first `NCCL INFO `, in its first MAX_LINE characters;
    None for a line that is not NCCL's."""
    cut = line[:MAX_LINE]
    at = cut.find(_MARK)
    return None if at < 0 else cut[at + len(_MARK):]


def _word(text: str) -> str | None:
    """The word `text` starts with (None where it starts with a blank, or is empty)."""
    return text.split(maxsplit=1)[0] if text and not text[0].isspace() else None


def _devices(said: str) -> tuple[str, list[str], str | None] | None:
    """(network, devices, OOB interface) of `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB
    [RO]; OOB ib0:10.0.0.1<0>`; None for another line."""
    if not said.startswith("NET/"):
        return None
    head, using, listed = said.partition(" : Using ")
    name = head[len("NET/"):]
    if not using or _word(name) != name:
        return None
    devices, oob, interface = listed.partition(_OOB)
    return name, _DEVICE.findall(devices), _word(interface) if oob else None


def _via(said: str) -> str | None:
    """`NET/IB/0/GDRDMA` of `Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA` (the
    last ` via `); None for another line."""
    head = _CHANNEL.match(said)
    if head is None:
        return None
    _, via, used = said[head.end():].rpartition(" via ")
    return _word(used) if via else None


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
    """('NET/IB', 3, True) of 'NET/IB/3/GDRDMA'; ('NET/IB', 0, True) of PXN's
    'NET/IB/0(1)/GDRDMA' (NIC 0, through rank 1's proxy); ('P2P', None, False) of
    'P2P/IPC'."""
    parts = via.split("/")
    if parts[0] == "NET" and len(parts) >= 2:
        nic = parts[2].partition("(")[0] if len(parts) > 2 else ""
        index = int(nic) if nic.isascii() and nic.isdigit() and len(nic) <= 6 else None
        return f"NET/{parts[1]}", index, "GDRDMA" in parts[3:]
    return parts[0], None, False


def parse(text: str) -> Transport:
    """One rank's transport from its NCCL log."""
    found = Transport()
    gdr_net = plain_net = 0
    nets: set[int] = set()
    by_net: dict[str, tuple[list[str], str | None]] = {}  # NET/<name> : Using ...
    for line in text.splitlines():
        said = _said(line)
        if said is None:
            continue
        if said.startswith("Using network "):
            found.network = _word(said[len("Using network "):]) or found.network
        elif (devices := _devices(said)) is not None:
            by_net[devices[0]] = devices[1:]
        elif (via := _via(said)) is not None:
            kind, index, gdr = _kind(via)
            name = f"{kind}/GDRDMA" if gdr else kind
            found.channels[name] = found.channels.get(name, 0) + 1
            if kind.startswith("NET/"):
                if gdr:
                    gdr_net += 1
                else:
                    plain_net += 1
                if index is not None:
                    nets.add(index)
        elif said.startswith("NVLS multicast support is "):
            state = said[len("NVLS multicast support is "):]
            found.nvls = True if state.startswith("available") else \
                False if state.startswith("not available") else found.nvls
        elif said.startswith("Connected all rings"):
            if (match := _GDR.search(said)) is not None and gdr_net + plain_net == 0:
                found.gdr = match.group(1) == "1"
        elif said.startswith("NET/Plugin"):
            colon = said[len("NET/Plugin"):].lstrip()
            if colon.startswith(":"):
                found.plugin = colon[1:].strip()
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


class Summary(TypedDict, total=False):
    """What a job's ranks used (`summary`): each answer -> the ranks that gave it."""

    gloo: dict[str, str]  # interface and address
    inter_node: dict[str, str]
    gdr: dict[str, str]
    nvls: dict[str, str]
    devices: dict[str, str]
    channels: dict[str, int]  # by kind, summed over the ranks
    not_said: str  # the ranks whose log said nothing


def summary(ranks: Sequence[Mapping[str, object]]) -> Summary:
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
        where, log = data.get("gloo"), data.get("nccl_log")
        if isinstance(where, dict):
            gloo[rank] = f"{where.get('interface') or 'default'} {where.get('address')}"
        elif isinstance(log, list):
            nccl[rank] = parse("\n".join(line[:MAX_LINE] if isinstance(line, str) else ""
                                          for line in log[:MAX_LINES]))
        else:
            unsaid.append(rank)
    found: Summary = {}
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


def describe(found: Mapping[str, Any], between_nodes: bool = True) -> str:
    """The summary in a line, as the report and JUnit show it: 'inter_node ib (ranks
    0-15); gdr true (ranks 0-15); nvls true (ranks 0-15)'; inside a node (not
    `between_nodes`), the channels by kind and NVLS: 'channels P2P 8; nvls true (...)'.
    A Summary, or one as a run's details hold it once read back (plain JSON)."""
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
