"""Golden-config drift (host.golden): each node's configuration as named fields, and the
golden values each field is compared with.

A node's fields are what the run's probes read of it: the host probe's kernel, driver,
CUDA and NCCL versions; each GPU's VBIOS (and InfoROM, where NVML reads it) and PCIe link
(its maximum generation and width from NVML; its current one only as the GPU checks read
it under load, gpus.pcie: an idle GPU lowers its link to save power, and no load is added
for this); each counted NIC port's firmware and PCIe link (current and maximum, from sysfs,
where the NIC probe reads it). A field that could not be read says why (`Unread`), never a
value.

The golden value of a field is the cluster's strict majority of the nodes that read it
(none when no value has more than half: nothing is singled out), a golden node's, or a
file's. Comparing a node's fields with them names every field that differs with its value
and the golden one ("GPU 3 vbios 96.00.89.00.01, golden 96.00.99.00.01 (majority 5 of
6)").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_cluster.errors import printable
from pytest_cluster.hostlist import compress_hostlist
from pytest_cluster.measure.calls import gpu_call, gpu_perf_call
from pytest_cluster.measure.gpu_facts import perf_gpu
from pytest_cluster.measure.network import fabric
from pytest_cluster.measure.network.fabric import NIC_START
from pytest_cluster.probes import ProbeCall

if TYPE_CHECKING:
    from pytest_cluster.launchers import ProbeResult
    from pytest_cluster.measure.prober import Prober

HOST_CALL = ProbeCall("host")
#: The host probe's versions compared, in this order.
SOFTWARE = ("driver", "cuda", "nccl", "kernel")
#: The groups of fields: the host's, each GPU's, each NIC port's.
HOST, GPU, NIC = "host", "gpu", "nic"
#: What a node that lacks a GPU or port the golden has shows for each of its fields.
ABSENT = "absent"
#: A clause the GPU load is run for; the GPUs' current PCIe link is read only under it.
UNDER_LOAD_CLAUSE = "gpus.pcie"


@dataclass(frozen=True, order=True)
class Field:
    """One thing compared: `what` ('vbios') of `where` ('GPU 3', 'mlx5_0/1'; '' for the
    host), in `group` (HOST, GPU, NIC)."""

    group: str
    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where} {self.what}" if self.where else self.what


@dataclass(frozen=True)
class Unread:
    """A field that could not be read, and why."""

    why: str


@dataclass
class Config:
    """A node's fields, in the order read; `unread`: the groups it could not read at all
    (its GPU probe failed), each with why."""

    values: dict[Field, str | Unread] = field(default_factory=dict)
    unread: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Reference:
    """The golden value of a field (None: none to compare with, `why`), and where it
    comes from ('majority 5 of 6', 'golden node gpu-001'). `undecided`: the nodes read it
    but no value is held by more than half of them."""

    value: str | None
    source: str
    why: str = ""
    undecided: bool = False


@dataclass(frozen=True)
class Reading:
    """Every node's configuration as this run read it, the nodes whose host probe did not
    answer (each with why), the results read, and what was left out for every node."""

    configs: dict[str, Config]
    unanswered: dict[str, str]
    results: tuple[ProbeResult, ...]
    left_out: tuple[str, ...]


def _text(value: object) -> str | Unread:
    """A version or firmware as a node gave it, every control character escaped (a
    hostile node's ESC or bidi override is shown, never acted on: `printable`); an NVML
    error or nothing as unread."""
    if isinstance(value, dict) and "error" in value:
        return Unread(printable(str(value["error"])[:200]))
    if isinstance(value, str) and value.strip() and not value.startswith("{'error'"):
        return printable(value.strip()[:200])
    return Unread(printable(f"not reported ({str(value)[:80]})"))


def _link(gen: object, width: object) -> str | Unread:
    """'Gen5 x16'; unread where either is not a whole number."""
    if isinstance(gen, int) and isinstance(width, int) \
            and not isinstance(gen, bool) and not isinstance(width, bool):
        return f"Gen{gen} x{width}"
    said = gen if isinstance(gen, dict) else width
    return Unread(printable(str(said.get("error"))[:200] if isinstance(said, dict)
                            and "error" in said else
                            f"not reported (gen {str(gen)[:40]}, width {str(width)[:40]})"))


def host_fields(config: Config, payload: Mapping[str, Any]) -> None:
    """The host probe's versions: one not found is 'not installed' (a node without NCCL
    differs from those with it), as host.same_software reads them."""
    versions = payload.get("versions")
    if not isinstance(versions, dict):
        config.unread[HOST] = "the host probe reported no versions"
        return
    for name in SOFTWARE:
        found = versions.get(name)
        config.values[Field(HOST, "", name)] = _text(found) if found is not None \
            else "not installed"


def gpu_fields(config: Config, payload: Mapping[str, Any],
               perf: Mapping[str, Any] | str | None) -> None:
    """Each GPU's VBIOS, InfoROM (where the probe read it) and PCIe link: its maximum,
    and the highest seen under load when the run loaded the GPUs (`perf`: the torch
    probe's payload, why there is none, or None when the run loads none)."""
    gpus = payload.get("gpus")
    if "error" in payload or not isinstance(gpus, list):
        config.unread[GPU] = str(payload.get("error") or "the GPU probe listed no GPUs")
        return
    for entry in gpus:
        index = entry.get("index") if isinstance(entry, dict) else None
        if not isinstance(index, int) or isinstance(index, bool):
            continue
        where = f"GPU {index}"
        config.values[Field(GPU, where, "vbios")] = _text(entry.get("vbios"))
        if "inforom" in entry:
            config.values[Field(GPU, where, "inforom")] = _text(entry.get("inforom"))
        pcie = entry.get("pcie") if isinstance(entry.get("pcie"), dict) else {}
        config.values[Field(GPU, where, "pcie max")] = _link(pcie.get("max_gen"),
                                                             pcie.get("max_width"))
        if perf is None:
            continue
        load = perf_gpu(perf, entry, index) if isinstance(perf, Mapping) else None
        section = load.get("load") if isinstance(load, dict) else None
        config.values[Field(GPU, where, "pcie under load")] = (
            _link(section.get("pcie_gen_max"), section.get("pcie_width_max"))
            if isinstance(section, dict) and "error" not in section
            else Unread(perf if isinstance(perf, str) else "no sample under load"))


def nic_fields(config: Config, payload: Mapping[str, Any], devices: str | None) -> bool:
    """Each counted port's firmware and PCIe link (current and maximum), where the NIC
    probe reads it; whether any port said its PCIe link (an older probe does not)."""
    if "error" in payload:
        config.unread[NIC] = str(payload["error"])[:400]
        return False
    try:
        ports = fabric.counted(fabric.ports_of(payload), devices)
    except ValueError as exc:
        config.unread[NIC] = str(exc)
        return False
    said = False
    for port in ports:
        where = printable(str(port["name"])[:80])
        firmware = port.get("firmware")
        config.values[Field(NIC, where, "firmware")] = _text(firmware) if firmware \
            else Unread("no firmware version (a virtual NIC has none)")
        if "pcie" not in port:
            continue
        said = True
        pcie: Any = port.get("pcie")
        if pcie is None:  # no PCI device behind the port: nothing to compare
            continue
        pcie = pcie if isinstance(pcie, dict) else {}
        config.values[Field(NIC, where, "pcie")] = _link(pcie.get("gen"), pcie.get("width"))
        config.values[Field(NIC, where, "pcie max")] = _link(pcie.get("max_gen"),
                                                             pcie.get("max_width"))
    return said


def _why(result: ProbeResult) -> str:
    return result.describe().split(": ", 1)[-1]


def _payload(result: ProbeResult | None) -> Mapping[str, Any]:
    if result is None:
        return {"error": "the probe did not run"}
    if not result.ok:
        return {"error": _why(result)}
    payload = result.payload()
    return payload if isinstance(payload, dict) else {"error": "not a map"}


def load_call_wanted(prober: Prober) -> bool:
    """Whether this run loads the GPUs and reads their PCIe link under it (gpus.pcie in
    the contract and selected): only then is their current link compared."""
    gpus = prober.spec.gpus
    selected = prober.selected_clauses
    return gpus is not None and gpus.item("pcie") is not None \
        and (selected is None or UNDER_LOAD_CLAUSE in selected) \
        and gpu_perf_call(gpus) is not None


def read(prober: Prober) -> Reading:
    """Every node's configuration, read once per process from the run's probes."""
    return prober.cache.kept(("golden", "reading"), lambda: _read(prober))


def _read(prober: Prober) -> Reading:
    spec = prober.spec
    hosts = prober.probe_all(HOST_CALL)
    results: list[ProbeResult] = list(hosts.values())
    gpus = prober.probe_all(gpu_call(spec.gpus)) if spec.gpus is not None else {}
    perf_call = gpu_perf_call(spec.gpus) if spec.gpus is not None and \
        load_call_wanted(prober) else None
    perfs = prober.probe_all(perf_call) if perf_call is not None else {}
    nics = prober.probe_all(NIC_START) if spec.fabric is not None else {}
    results += [*gpus.values(), *perfs.values(), *nics.values()]
    configs: dict[str, Config] = {}
    unanswered: dict[str, str] = {}
    nic_pcie = False
    for node, host in hosts.items():
        if not host.ok:
            unanswered[node] = _why(host)
            continue
        config = Config()
        host_fields(config, _payload(host))
        if spec.gpus is not None:
            perf: Mapping[str, Any] | str | None = None
            if perf_call is not None:
                loaded = _payload(perfs.get(node))
                perf = str(loaded["error"]) if "error" in loaded else loaded
            gpu_fields(config, _payload(gpus.get(node)), perf)
        if spec.fabric is not None:
            nic_pcie |= nic_fields(config, _payload(nics.get(node)), spec.fabric.devices)
        configs[node] = config
    left_out = _left_out(prober, perf_call is not None, nic_pcie)
    return Reading(configs, unanswered, tuple(results), left_out)


def _left_out(prober: Prober, loaded: bool, nic_pcie: bool) -> tuple[str, ...]:
    """What this run compares on no node, and why."""
    spec = prober.spec
    found = []
    if spec.gpus is None:
        found.append("GPUs (no gpus section)")
    elif not loaded:
        found.append("GPUs' current PCIe link (read under load only, by gpus.pcie, which "
                     "this run does not check)")
    if spec.fabric is None:
        found.append("NIC ports (no fabric section)")
    elif not nic_pcie:
        found.append("NIC ports' PCIe link (the NIC probe did not read it)")
    return tuple(found)


def _groups(configs: Mapping[str, Config], name: Field) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for node, config in configs.items():
        value = config.values.get(name)
        if isinstance(value, str):
            groups.setdefault(value, []).append(node)
    return groups


def said(groups: Mapping[str, list[str]]) -> str:
    """'X on gpu-[001-002]; Y on gpu-[003-004]'."""
    return "; ".join(f"{value} on {compress_hostlist(nodes)}" for value, nodes in
                     sorted(groups.items(), key=lambda item: -len(item[1]))[:6])


def fields_of(configs: Mapping[str, Config]) -> list[Field]:
    """Every field any node has, in a stable order (host, then GPUs, then ports)."""
    return sorted({name for config in configs.values() for name in config.values},
                  key=lambda f: (f.group != HOST, f.group, _order(f.where), f.what))


def _order(where: str) -> tuple[int, str]:
    tail = where.rsplit(" ", 1)[-1]
    return (int(tail), "") if tail.isdigit() else (0, where)


def majority(configs: Mapping[str, Config]) -> dict[Field, Reference]:
    """Each field's value held by more than half of the nodes that read it; none where no
    node read it, or none holds more than half (`undecided`: the values, by node)."""
    found: dict[Field, Reference] = {}
    for name in fields_of(configs):
        groups = _groups(configs, name)
        readers = sum(len(nodes) for nodes in groups.values())
        if not readers:
            found[name] = Reference(None, "majority", "no node could read it")
            continue
        value, nodes = max(groups.items(), key=lambda item: len(item[1]))
        if len(nodes) * 2 > readers:
            found[name] = Reference(value, f"majority {len(nodes)} of {readers}")
        else:
            found[name] = Reference(None, "majority", f"no strict majority: {said(groups)}",
                                    undecided=True)
    return found


def of_node(config: Config, node: str) -> dict[Field, Reference]:
    """The golden node's fields as the golden values (one it could not read: none)."""
    source = f"golden node {node}"
    return {name: Reference(value, source) if isinstance(value, str)
            else Reference(None, source, f"{node} could not read it: {value.why}")
            for name, value in config.values.items()}


@dataclass
class Drift:
    """A node's fields against the golden ones: those that differ, those it could not
    read, those without a golden value (`undecided`: no majority; `not_compared`: none
    read), and how many are the same."""

    differ: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    not_compared: list[str] = field(default_factory=list)
    same: int = 0
    table: dict[str, dict[str, str | None]] = field(default_factory=dict)


def compare(node: str, config: Config, golden: Mapping[Field, Reference]) -> Drift:
    """`config` (of `node`) field by field against `golden`; a field the node has and
    the golden lacks is not compared, one the golden has and the node lacks is ABSENT
    (where the node's group was read at all; else unread)."""
    drift = Drift()
    names = fields_of({"golden": Config({n: "" for n in golden}), node: config})
    for name in names:
        ref = golden.get(name)
        value = config.values.get(name)
        if value is None:
            why = config.unread.get(name.group)
            value = Unread(why) if why is not None else ABSENT
        shown = value if isinstance(value, str) else None
        drift.table[str(name)] = {"value": shown, "golden": ref.value if ref else None,
                                  "source": ref.source if ref else None}
        if ref is None or ref.value is None:
            reason = ref.why if ref is not None else "no golden value"
            (drift.undecided if ref is not None and ref.undecided
             else drift.not_compared).append(f"{name}: {reason}")
        elif isinstance(value, Unread):
            drift.unread.append(f"{name}: unreadable ({value.why})")
        elif value != ref.value:
            drift.differ.append(f"{node} {name} {value}, golden {ref.value} ({ref.source})")
        else:
            drift.same += 1
    return drift
