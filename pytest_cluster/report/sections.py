"""The report's account of the evidence itself: what was tested (the inventory), how the
files are sealed and signed, and how this run compares with its baseline. Renders
records only, through templates (inventory.html.j2, sealing.html.j2,
baseline.html.j2), which escape every value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_cluster.evidence.baseline import replacements
from pytest_cluster.measure.inventory_file import is_unreadable
from pytest_cluster.report.templates import render
from pytest_cluster.units import format_size

if TYPE_CHECKING:
    from pytest_cluster.evidence.baseline.accepted import Baseline
    from pytest_cluster.evidence.record.derived_cases import Case
    from pytest_cluster.measure.inventory_file import InventoryDocument, NodeRecord

MAX_FAILED_SHOWN = 200  # baseline failures listed in full; JUnit and results.jsonl have all


@dataclass(frozen=True)
class Shown:
    """A piece of a field as shown: its text, or (`unreadable`: why) the word unreadable,
    saying why on hover."""

    text: str = ""
    unreadable: str = ""


Line = tuple[Shown, ...]  # pieces shown one after the other


@dataclass(frozen=True)
class Listing:
    """A collapsed list: its summary, then a line each ("" summary: the lines as they
    are, not collapsed)."""

    summary: str
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class InventoryRow:
    node: str
    unreadable: Line = ()  # the whole record unreadable: the word, then why
    simulated: bool = False
    serial: Line = ()
    machine_id: Line = ()
    cpu: Line = ()
    memory: Line = ()
    os: Line = ()
    kernel: Line = ()
    stack: str = ""  # driver / CUDA / NCCL
    gpus: Listing = Listing("", ())
    nics: Listing | None = None
    disks: tuple[Line, ...] = ()


def _v(value: Any) -> Shown:
    """A field as shown: an unreadable one says why, on hover."""
    if is_unreadable(value):
        return Shown(unreadable=str(value["unreadable"]))
    return Shown("" if value is None else str(value))


def _line(*pieces: Shown | str) -> Line:
    return tuple(Shown(p) if isinstance(p, str) else p for p in pieces)


def _joined(lines: Sequence[Line], separator: str) -> Line:
    """`lines` one after the other, `separator` between them."""
    found: list[Shown] = []
    for index, line in enumerate(lines):
        if index:
            found.append(Shown(separator))
        found.extend(line)
    return tuple(found)


def _gpus(gpus: Any) -> Listing:
    if not isinstance(gpus, list):
        return Listing("", (_line(_v(gpus)),))
    names = sorted({str(g.get("name")) for g in gpus})
    return Listing(f"{len(gpus)} x {', '.join(names)}", tuple(
        _line(f"gpu{g.get('index')}: ", _v(g.get("serial")), " ", _v(g.get("uuid")),
              " VBIOS ", _v(g.get("vbios")), " ", _v(g.get("pci_bus_id")))
        for g in gpus))


def _nics(record: NodeRecord) -> Listing | None:
    lines: list[Line] = []
    hcas = record.get("infiniband")
    if isinstance(hcas, list):
        for hca in hcas:
            rates = ", ".join(str(p.get("rate")) for p in hca.get("ports", []))
            lines.append(_line(_v(hca.get("name")), " ", _v(hca.get("node_guid")), " fw ",
                               _v(hca.get("firmware")), f" {rates}"))
    interfaces = record.get("interfaces")
    if isinstance(interfaces, list):
        for nic in interfaces:
            rate = nic.get("rate_gbps")
            shown = Shown(f"{rate:g} Gb/s") if isinstance(rate, (int, float)) else _v(rate)
            lines.append(_line(_v(nic.get("name")), " ", _v(nic.get("address")), " ",
                               _v(nic.get("driver")), " fw ", _v(nic.get("firmware")), " ",
                               shown))
    elif is_unreadable(interfaces):
        lines.append(_line(_v(interfaces)))
    return Listing(f"{len(lines)} NIC(s)", tuple(lines)) if lines else None


def _disks(record: NodeRecord) -> tuple[Line, ...]:
    filesystems = record.get("filesystems")
    if not isinstance(filesystems, list):
        return (_line(_v(filesystems)),)
    found = []
    for fs in filesystems:
        devices = fs.get("block_devices")
        shown = _joined([_line(_v(d.get("name")), " ", _v(d.get("model")), " ",
                               _v(d.get("serial"))) for d in devices], ", ") \
            if isinstance(devices, list) else _line(_v(devices or fs.get("unreadable")))
        found.append(_line(f"{fs.get('path')}: ", *shown))
    return tuple(found)


def _row(node: str, record: NodeRecord) -> InventoryRow:
    if is_unreadable(record):
        return InventoryRow(node, unreadable=_line(_v(record), f" {record['unreadable']}"))
    dmi = record.get("dmi")
    serial = dmi.get("product_serial") if isinstance(dmi, dict) else dmi
    cpu: Mapping[str, object] = record.get("cpu") or {}
    memory = record.get("memory_bytes")
    software = record.get("software") or {}
    stack = " / ".join(f"{name} {software.get(name)}" if not is_unreadable(
        software.get(name)) else f"{name} ?" for name in ("driver", "cuda", "nccl")
        if software.get(name) is not None)
    return InventoryRow(
        node, simulated=bool(record.get("simulated")), serial=_line(_v(serial)),
        machine_id=_line(_v(record.get("machine_id"))),
        cpu=_line(_v(cpu.get("model")), " (", _v(cpu.get("cores")), " cores)"),
        memory=_line(format_size(memory) if isinstance(memory, int) else _v(memory)),
        os=_line(_v(record.get("os"))), kernel=_line(_v(record.get("kernel"))), stack=stack,
        gpus=_gpus(record.get("gpus")), nics=_nics(record), disks=_disks(record))


def inventory_html(document: InventoryDocument | None, error: str = "") -> str:
    """One row per node: what exactly was tested (or, `error`, why it was not taken)."""
    if document is None:
        return render("inventory.html.j2", rows=None, error=error) if error else ""
    return render("inventory.html.j2", rows=[_row(node, record) for node, record
                                            in document["nodes"].items()],
                  complete=document.get("complete", True))


def sealing_html(keyids: Sequence[str], run_dir: str) -> str:
    """How the files of this run are sealed. The manifest's digest cannot be written here:
    this report is one of the files it lists."""
    return render("sealing.html.j2", keyids=keyids, run_dir=run_dir)


def baseline_html(baseline: Baseline | None, cases: Sequence[Case], tolerance: float,
                  notes: Sequence[str] = ()) -> str:
    if baseline is None:
        return ""
    failed = [c for c in cases if not c.passed]
    by_clause: dict[str, list[Case]] = {}
    for case in cases:
        by_clause.setdefault(case.clause, []).append(case)
    signed = (f"signed by {', '.join(baseline.signed_by)}" if baseline.signed_by
              else "unsigned") + (f", the signature checked against {baseline.checked_key}"
                                  if baseline.checked_key else "")
    return render(
        "baseline.html.j2", notes=notes, path=str(baseline.path), label=baseline.label,
        manifest_sha256=baseline.manifest_sha256, signed=signed,
        tolerance_percent=tolerance * 100,
        counts=[f"{clause}: {sum(c.passed for c in found)} of {len(found)} as at baseline"
                for clause, found in by_clause.items()],
        failed=failed[:MAX_FAILED_SHOWN], more=max(len(failed) - MAX_FAILED_SHOWN, 0),
        accepted=[(each["said"], bool(each["seen"])) for each in
                  replacements.summary(baseline.accept, cases)])
