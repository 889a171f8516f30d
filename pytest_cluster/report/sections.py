"""The report's account of the evidence itself: what was tested (the inventory), how the
files are sealed and signed, and how this run compares with its baseline. Renders
records only; every value is escaped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape as esc
from typing import TYPE_CHECKING, Any

from pytest_cluster.measure.inventory_file import is_unreadable
from pytest_cluster.units import format_size

if TYPE_CHECKING:
    from pytest_cluster.evidence.baseline.accepted import Baseline
    from pytest_cluster.evidence.derived_cases import Case
    from pytest_cluster.measure.inventory_file import InventoryDocument, NodeRecord

MAX_FAILED_SHOWN = 200  # baseline failures listed in full; JUnit and results.jsonl have all


def _v(value: Any) -> str:
    """A field as shown: an unreadable one says why, on hover."""
    if is_unreadable(value):
        return f'<span class="unreadable" title="{esc(str(value["unreadable"]))}">' \
               "unreadable</span>"
    return esc("" if value is None else str(value))


def _gpus(gpus: Any) -> str:
    if not isinstance(gpus, list):
        return _v(gpus)
    names = sorted({str(g.get("name")) for g in gpus})
    rows = "<br>".join(f"gpu{g.get('index')}: {_v(g.get('serial'))} {_v(g.get('uuid'))} "
                       f"VBIOS {_v(g.get('vbios'))} {_v(g.get('pci_bus_id'))}" for g in gpus)
    return (f"<details><summary>{len(gpus)} x {esc(', '.join(names))}</summary>"
            f'<span class="small">{rows}</span></details>')


def _nics(record: NodeRecord) -> str:
    parts = []
    hcas = record.get("infiniband")
    if isinstance(hcas, list):
        for hca in hcas:
            rates = ", ".join(str(p.get("rate")) for p in hca.get("ports", []))
            parts.append(f"{_v(hca.get('name'))} {_v(hca.get('node_guid'))} fw "
                         f"{_v(hca.get('firmware'))} {esc(rates)}")
    interfaces = record.get("interfaces")
    if isinstance(interfaces, list):
        for nic in interfaces:
            rate = nic.get("rate_gbps")
            shown = f"{rate:g} Gb/s" if isinstance(rate, (int, float)) else _v(rate)
            parts.append(f"{_v(nic.get('name'))} {_v(nic.get('address'))} "
                         f"{_v(nic.get('driver'))} fw {_v(nic.get('firmware'))} {shown}")
    elif is_unreadable(interfaces):
        parts.append(_v(interfaces))
    return (f"<details><summary>{len(parts)} NIC(s)</summary><span class=\"small\">"
            + "<br>".join(parts) + "</span></details>") if parts else ""


def _disks(record: NodeRecord) -> str:
    filesystems = record.get("filesystems")
    if not isinstance(filesystems, list):
        return _v(filesystems)
    found = []
    for fs in filesystems:
        devices = fs.get("block_devices")
        shown = ", ".join(f"{_v(d.get('name'))} {_v(d.get('model'))} {_v(d.get('serial'))}"
                          for d in devices) if isinstance(devices, list) else _v(
                              devices or fs.get("unreadable"))
        found.append(f"{esc(str(fs.get('path')))}: {shown}")
    return "<br>".join(found)


def inventory_html(document: InventoryDocument | None, error: str = "") -> str:
    """One row per node: what exactly was tested."""
    if document is None:
        return (f"<h2>Inventory</h2><p>Not taken: {esc(error)}</p>" if error else "")
    rows = []
    for node, record in document["nodes"].items():
        if is_unreadable(record):
            rows.append(f"<tr><td>{esc(node)}</td><td colspan=\"8\">{_v(record)} "
                        f"{esc(record['unreadable'])}</td></tr>")
            continue
        dmi = record.get("dmi")
        serial = dmi.get("product_serial") if isinstance(dmi, dict) else dmi
        cpu: Mapping[str, object] = record.get("cpu") or {}
        memory = record.get("memory_bytes")
        software = record.get("software") or {}
        stack = " / ".join(f"{name} {software.get(name)}" if not is_unreadable(
            software.get(name)) else f"{name} ?" for name in ("driver", "cuda", "nccl")
            if software.get(name) is not None)
        sim = ' <span class="simulated">SIMULATED</span>' if record.get("simulated") else ""
        rows.append(
            f"<tr><td>{esc(node)}{sim}</td><td>{_v(serial)}<br><span class=\"small\">"
            f"machine-id {_v(record.get('machine_id'))}</span></td>"
            f"<td>{_v(cpu.get('model'))} ({_v(cpu.get('cores'))} cores)</td>"
            f"<td>{esc(format_size(memory)) if isinstance(memory, int) else _v(memory)}</td>"
            f"<td>{_v(record.get('os'))}<br>{_v(record.get('kernel'))}</td>"
            f"<td>{esc(stack)}</td><td>{_gpus(record.get('gpus'))}</td>"
            f"<td>{_nics(record)}</td><td>{_disks(record)}</td></tr>")
    note = "" if document.get("complete", True) else (
        "<p>The run was interrupted: nodes not probed before it are marked.</p>")
    return ("<h2>Inventory</h2><p>What was tested, node by node (inventory.json has every "
            "field; an unreadable one says why on hover).</p>" + note
            + "<details><summary>" + f"{len(rows)} node(s)</summary><table id=\"inventory\">"
            "<tr><th>Node</th><th>System serial</th><th>CPU</th><th>RAM</th><th>OS</th>"
            "<th>Driver / CUDA / NCCL</th><th>GPUs</th><th>NICs</th><th>Disks</th></tr>"
            + "".join(rows) + "</table></details>")


def sealing_html(keyids: Sequence[str], run_dir: str) -> str:
    """How the files of this run are sealed. The manifest's digest cannot be written here:
    this report is one of the files it lists."""
    signed = (f"signed with {esc(', '.join(keyids))}; check it with <code>pytest-cluster "
              f"verify {esc(run_dir)} --key PUBKEY</code>" if keyids else
              "UNSIGNED (no --cluster-sign-key or --cluster-ssh-sign-key given); check its "
              f"files with <code>pytest-cluster verify {esc(run_dir)}</code>")
    return ("<h2>Evidence</h2><p>When the run ends, manifest.intoto.json (an in-toto "
            "statement in a DSSE envelope) lists every file of this run's directory, this "
            f"report included, with its SHA-256; it is {signed}. The manifest's own SHA-256 "
            "is printed at the end of the run and by verify (it cannot be in this report, "
            "which it lists).</p>")


def baseline_html(baseline: Baseline | None, cases: Sequence[Case], tolerance: float,
                  notes: Sequence[str] = ()) -> str:
    if baseline is None:
        return ""
    failed = [c for c in cases if not c.passed]
    by_clause: dict[str, list[Case]] = {}
    for case in cases:
        by_clause.setdefault(case.clause, []).append(case)
    counts = "; ".join(f"{clause}: {sum(c.passed for c in found)} of {len(found)} as at "
                       "baseline" for clause, found in by_clause.items())
    signed = (f"signed by {', '.join(baseline.signed_by)}" if baseline.signed_by
              else "unsigned") + (f", the signature checked against {baseline.checked_key}"
                                  if baseline.checked_key else "")
    rows = "".join(f"<tr><td>{esc(c.clause)}</td><td>{esc(c.param)}</td>"
                   f"<td>{esc(c.message)}</td></tr>" for c in failed[:MAX_FAILED_SHOWN])
    more = (f"<p>and {len(failed) - MAX_FAILED_SHOWN} more (JUnit and results.jsonl list "
            "all)</p>") if len(failed) > MAX_FAILED_SHOWN else ""
    table = ("<table id=\"baseline\"><tr><th>Clause</th><th>Case</th><th>Change</th></tr>"
             f"{rows}</table>{more}") if failed else "<p>Nothing differs.</p>"
    noted = "".join(f'<p class="banner incomplete">Note: {esc(n)}</p>' for n in notes)
    return (f"<h2>Against the baseline</h2>{noted}<p>Baseline {esc(str(baseline.path))} "
            f"({esc(baseline.label)}; manifest sha256 {esc(baseline.manifest_sha256)}, "
            f"verified; {esc(signed)}). Tolerance {tolerance * 100:g} % "
            f"(spec baseline.tolerance). {esc(counts)}.</p>{table}")
