"""Reading the GPU probes' payloads: one GPU's NVML entry, its torch measurements (joined
by UUID), its XID events and its GPU-to-GPU copies. Pure functions, no pytest."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: XIDs that Azure's node health checks treat as faults (shared/GUIDE.md).
CRITICAL_XIDS = frozenset({48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92,
                           119, 120})


def bare_uuid(uuid: object) -> str:
    """NVML says 'GPU-1a2b...', torch says '1a2b...'."""
    return str(uuid or "").removeprefix("GPU-").lower()


def nvml_gpu(payload: Mapping[str, object], index: int) -> dict[str, Any] | None:
    """The gpu probe's entry for GPU `index`, None if the node has no such GPU."""
    listed = payload.get("gpus")
    for entry in listed if isinstance(listed, list) else ():
        if isinstance(entry, dict) and _index(entry) == index:
            found: dict[str, Any] = entry
            return found
    return None


def _index(entry: Mapping[str, object]) -> int | None:
    """An entry's GPU index as the node gave it: an int, never a bool (true == 1)."""
    index = entry.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) else None


def perf_gpu(perf: Mapping[str, object], nvml: Mapping[str, object] | None,
             index: int) -> dict[str, Any] | None:
    """The gpu_perf entry of the same GPU: by UUID when both probes report one, else by
    index (the perf probe orders GPUs by PCI bus, as NVML does)."""
    listed = perf.get("gpus")
    entries: list[dict[str, Any]] = [e for e in listed if isinstance(e, dict)] \
        if isinstance(listed, list) else []
    uuid = bare_uuid(nvml.get("uuid")) if nvml else ""
    if uuid:
        for entry in entries:
            if bare_uuid(entry.get("uuid")) == uuid:
                return entry
    for entry in entries:
        if _index(entry) == index and not (uuid and entry.get("uuid")):
            return entry
    return None


def _bus(pci: object) -> str:
    """'00000000:18:00.0' and '0000:18:00' both become '18:00'."""
    parts = str(pci).lower().split(":")
    return ":".join(part.split(".")[0].lstrip("0") or "0" for part in parts[-2:])


@dataclass(frozen=True)
class Xid:
    xid: int
    source: str

    @property
    def critical(self) -> bool:
        return self.xid in CRITICAL_XIDS


def xids_for(payload: Mapping[str, object],
             nvml: Mapping[str, object]) -> tuple[list[Xid], list[str]]:
    """XID errors of one GPU from NVML events and the kernel log; and the sources that
    could not be read, with why."""
    found: list[Xid] = []
    unreadable: list[str] = []
    said = payload.get("xid")
    xid = said if isinstance(said, dict) else {}
    if "error" in xid:
        unreadable.append(f"NVML events: {xid['error']}")
    for event in xid.get("events", ()):
        gpu = event.get("gpu")
        if gpu == nvml.get("index"):
            found.append(Xid(int(event["xid"]), f"NVML events ({xid.get('window_s')} s)"))
        elif gpu is None:  # NVML could not say which GPU: it counts against each of them
            found.append(Xid(int(event["xid"]), f"NVML events ({xid.get('window_s')} s, "
                                                "GPU not identified)"))
    log = xid.get("kernel_log")
    if isinstance(log, dict):
        if "error" in log:
            unreadable.append(f"kernel log: {log['error']}")
        bus = _bus(nvml.get("pci_bus_id", ""))
        for event in log.get("events", ()):
            if _bus(event.get("pci", "")) == bus:
                found.append(Xid(int(event["xid"]), str(log.get("source", "kernel log"))))
    return found, unreadable


@dataclass(frozen=True)
class PeerCopies:
    median_bytes_per_s: float
    slowest_bytes_per_s: float
    slowest_peer: int
    pairs: int


def p2p_for(perf: Mapping[str, object], index: int) -> PeerCopies | None:
    """Copies to and from GPU `index`: the median over its pairs (one bad partner does not
    fail a healthy GPU; a GPU whose own links are slow is slow with every partner)."""
    said = perf.get("p2p")
    section = said if isinstance(said, dict) else {}
    mine = [p for p in section.get("pairs", ()) if index in (p.get("src"), p.get("dst"))]
    if not mine:
        return None
    slowest = min(mine, key=lambda p: float(p["bytes_per_s"]))
    peer = slowest["dst"] if slowest["src"] == index else slowest["src"]
    return PeerCopies(statistics.median(float(p["bytes_per_s"]) for p in mine),
                      float(slowest["bytes_per_s"]), int(peer), len(mine))


def gib(value: float) -> str:
    return f"{value / 2**30:.1f} GiB"
