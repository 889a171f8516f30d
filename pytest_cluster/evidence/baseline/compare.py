"""This run against an accepted earlier one (--cluster-baseline=DIR): the cases that say
whether the cluster is still the one that was accepted.

- `baseline.nodes`: the same nodes (missing and new ones named);
- `baseline.hardware`, per node: the same machine, GPUs (a swapped GPU named with both
  serials), NICs and HCAs (address or GUID, firmware, rate), block devices, driver;
- `baseline.performance`, per measured figure of both runs: not worse than at baseline by
  more than the spec's `baseline.tolerance` (5 % unless it says), in the direction its
  clause counts as better. A node's figure this run measured in a group with nodes not
  known good (`bounded_by`: the slow-node search's first pairs; the slowest bounds it) is
  the group's: worse than at baseline, it blames none of them (undecided, no culprit).

The baseline must pass `pytest-cluster verify` (its files as its manifest lists them) and
hold results.jsonl and inventory.json. Pure comparisons: the cases are emitted by
derived_cases.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pytest_cluster.contract.storage import BASES
from pytest_cluster.errors import BundleError, InputError, printable
from pytest_cluster.evidence.baseline import files as baseline_files
from pytest_cluster.evidence.baseline.files import MAX_GPUS, RESULTS, Limits
from pytest_cluster.evidence.bundle.keys import PublicKey
from pytest_cluster.evidence.bundle.verify import verify
from pytest_cluster.evidence.derived_cases import Case
from pytest_cluster.evidence.sinks.results import ResultLine, read_results
from pytest_cluster.evidence.verdict import NOT_COMPARABLE, UNDECIDED
from pytest_cluster.measure.inventory_file import (
    INVENTORY,
    HcaRecord,
    InventoryDocument,
    NodeRecord,
    is_unreadable,
)
from pytest_cluster.units import UNITS, format_number, utc

if TYPE_CHECKING:
    from pytest_cluster.contract.model import ClusterSpec, Spec

HIGHER_BETTER = (">=", ">")
LOWER_BETTER = ("<=", "<")
#: The fields of a case's line, beside its node and GPU, that tell it apart from its
#: node's other cases of the same clause (metrics' CASE_LABELS): a case derived from it (a
#: comparison with a baseline, a soak's steadiness) carries them as its own.
PARTS = ("filesystem", "collective", "payload", "node_count", "rail")
#: What a numeric result line needs to be compared: its case, node, GPU, what tells it
#: apart, its figure.
KEPT = ("case", "clause", "node", "gpu", *PARTS, "measured", "measured_base", "unit",
        "comparison", "basis", "basis_nodes", "basis_gpus", "bounded_by")


def parts(record: ResultLine) -> dict[str, Any]:
    """What tells `record` apart from its node's other cases of its clause (PARTS)."""
    return {key: value for key in PARTS if (value := record.get(key)) is not None}
#: Per basis of a figure (contract/storage.py BASES), the count its line records that the
#: total was shared out by, and what it counts (none: the total itself).
SHARED_BY: dict[str, tuple[str, str] | None] = {
    "cluster": None, "node": ("basis_nodes", "node(s)"), "gpu": ("basis_gpus", "GPU(s)")}
MAX_NAMED = 20  # nodes named in a message; the rest are counted
MAX_SHOWN = 300  # characters of a value a change shows


#: How a baseline's signature stood when this run took it: checked against the
#: --cluster-baseline-key given (a signature that fails makes it no baseline), signed but
#: not checked (no key given), unsigned.
VERIFIED, NOT_CHECKED, UNSIGNED = "verified", "not_checked", "unsigned"
SIGNATURES = (VERIFIED, NOT_CHECKED, UNSIGNED)


def signature_said(signature: str, key: str | None) -> str:
    """The terminal's words for it: 'signature verified with SHA256:...', 'signature not
    checked: no --cluster-baseline-key', 'unsigned: no signature to check'."""
    if signature == VERIFIED:
        return f"signature verified with {key}"
    if signature == UNSIGNED:
        return "unsigned: no signature to check"
    return "signature not checked: no --cluster-baseline-key"


class BaselineError(Exception):
    """The baseline directory cannot serve as one (says which file and why)."""


@dataclass(frozen=True)
class Baseline:
    path: Path
    started: str  # when the baseline run started, as units.utc writes it
    signed_by: tuple[str, ...]
    manifest_sha256: str
    inventory: InventoryDocument
    figures: dict[str, ResultLine]  # numeric result lines by case id (their KEPT keys)
    checked_key: str | None = None  # the key its signature was checked against, if one
    cluster: str = ""
    spec_sha256: str = ""
    status: str = ""  # how the baseline run ended: complete, partial, interrupted

    def notes(self, spec: Spec) -> list[str]:
        """What makes this baseline a weaker one to compare with, in words."""
        found = []
        if self.cluster and self.cluster != spec.cluster.name:
            found.append(f"it is of cluster {_shown(self.cluster)}, this run of "
                         f"{spec.cluster.name}")
        if self.spec_sha256 and self.spec_sha256 != spec.sha256:
            found.append("its spec differs from this run's (sha256 "
                         f"{_shown(self.spec_sha256[:12])} vs {spec.sha256[:12]}): only the cases "
                         "both have are compared")
        if self.status and self.status != "complete":
            found.append(f"it ran {_shown(self.status)}: figures it did not measure have nothing "
                         "to compare with")
        return found

    @property
    def label(self) -> str:
        return f"run {self.started}"

    @property
    def signature(self) -> str:
        """VERIFIED (by the key given: load refuses one whose signature fails),
        NOT_CHECKED (its manifest names signers; no key was given) or UNSIGNED."""
        if self.checked_key is not None:
            return VERIFIED
        return NOT_CHECKED if self.signed_by else UNSIGNED


def figures(records: Iterable[ResultLine]) -> dict[str, ResultLine]:
    """The result lines with a number compared one way (>=, <=), by case id."""
    found = {}
    for record in records:
        base = record.get("measured_base")
        if (isinstance(record.get("case"), str) and record.get("comparison") in
                HIGHER_BETTER + LOWER_BETTER and isinstance(base, (int, float))
                and not isinstance(base, bool) and math.isfinite(base)
                and record.get("outcome") in ("passed", "failed")):
            found[record["case"]] = cast("ResultLine", {key: record.get(key) for key in KEPT})
    return found


def limits(spec: Spec) -> Limits:
    """What `spec` lets a baseline hold: the nodes of the whole cluster (a run of some of
    them compares with a baseline of all), GPUs per node from gpus.count (exact, or at
    most), else the sim's gpus_per_node, else the most a spec may name."""
    whole = spec.whole or spec
    nodes = len(whole.cluster.nodes)
    count = whole.gpus.clause("count") if whole.gpus is not None else None
    if count is not None and count.requirement.op in ("==", "<="):
        most = int(count.requirement.bound.value)
        said = count.requirement.text if count.requirement.op == "<=" else str(most)
        return Limits(nodes, most, f"the spec's gpus.count ({said})")
    if whole.sim is not None and count is None:
        return Limits(nodes, whole.sim.gpus_per_node,
                      f"the spec's sim.gpus_per_node ({whole.sim.gpus_per_node})")
    return Limits(nodes, MAX_GPUS, f"the most a spec may name ({MAX_GPUS})")


def load(path: Path, key: Path | None = None, bounds: Limits = baseline_files.ANY_SPEC) -> Baseline:
    """The baseline at `path`, verified (with `key`: signed by that key) and its files
    checked against `bounds` (what the spec allows: files.py); BaselineError
    saying why it cannot be one."""
    try:
        baseline_files.check_sizes(path, bounds)
        verdict = verify(path, PublicKey.load(key) if key is not None else None)
    except (BundleError, InputError) as exc:
        raise BaselineError(str(exc)) from None
    if not verdict.ok:
        problems = "; ".join(verdict.problems())
        raise BaselineError(f"it fails pytest-cluster verify, so it is no evidence of what "
                            f"was accepted: {problems}")
    missing = [name for name in (RESULTS, INVENTORY) if not (path / name).is_file()]
    if missing:
        raise BaselineError(f"it has no {' or '.join(missing)}: a run's evidence directory "
                            "written by a pytest-cluster that records its inventory is needed")
    try:
        results = baseline_files.read_results(path / RESULTS, bounds)
        inventory = baseline_files.read_inventory(path / INVENTORY, bounds)
    except InputError as exc:
        raise BaselineError(str(exc)) from None
    started = results.run.get("started_at")
    return Baseline(path, utc(started) if started is not None else "of unknown time",
                    tuple(verdict.signed_by), verdict.manifest_sha256, inventory,
                    figures(results.results), verdict.key, results.run.get("cluster", ""),
                    results.run.get("spec_sha256", ""), results.status)


# -- nodes and hardware ------------------------------------------------------------------

def _named(nodes: list[str]) -> str:
    """'n1, n2', the first MAX_NAMED of them and how many more."""
    more = f" and {len(nodes) - MAX_NAMED} more" if len(nodes) > MAX_NAMED else ""
    return ", ".join(_shown(node) for node in nodes[:MAX_NAMED]) + more


def asked_nodes(cluster: ClusterSpec | None, checked: frozenset[str] | None) -> set[str] | None:
    """The spec's nodes this run was asked to check: `cluster.nodes` (--cluster-node, a
    SLURM prolog's this host, narrow them) of which the selection (`checked`: -k gpu-001)
    kept a check; None: every node (no spec given)."""
    if cluster is None:
        return None
    asked = set(cluster.nodes)
    return asked & checked if checked is not None else asked


def same_nodes(baseline: Baseline, now: InventoryDocument,
               cluster: ClusterSpec | None = None,
               checked: frozenset[str] | None = None) -> Case:
    """The nodes of this run against the baseline's. A run of some of the spec's nodes
    (`cluster.chosen_from`: --cluster-node, or this host alone in a SLURM prolog; or a
    selection that kept no check of some, `checked`) is compared on those alone: a
    baseline node of the spec it was not asked to check is not missing, only named as
    not checked by this run. A baseline node the spec no longer has is missing."""
    before, after = list(baseline.inventory["nodes"]), list(now["nodes"])
    asked = asked_nodes(cluster, checked)
    in_spec = set(cluster.chosen_from or cluster.nodes) if cluster is not None else set()
    left_out = [n for n in before if asked is not None and n in in_spec and n not in asked]
    kept, old, unasked = set(after), set(before), set(left_out)
    missing = [n for n in before if n not in kept and n not in unasked]
    new = [n for n in after if n not in old and (asked is None or n in asked)]
    parts = ([f"{len(missing)} missing since the baseline: {_named(missing)}"] if missing
             else []) + ([f"{len(new)} new: {_named(new)}"] if new else [])
    props: dict[str, Any] = {"measured": f"{len(after)} node(s), {len(before)} at baseline",
                             "requirement": "the nodes of the baseline"}
    if left_out:
        props["requirement"] = "the nodes of the baseline that this run checks"
        props["measured"] += f"; {len(left_out)} left out by the node selection: " \
                             f"{_named(left_out)}"
        props["not_checked"] = [_shown(n) for n in left_out[:MAX_NAMED]]
    return Case("cluster", "baseline.nodes", "all", not parts,
                f"nodes differ from the baseline ({baseline.label}): " + "; ".join(parts)
                if parts else "", props=props)


def _shown(value: Any) -> str:
    """A value as a change names it: cut to MAX_SHOWN characters, and what a terminal
    would act on (an ESC, a bidi override) escaped, since the baseline is untrusted."""
    text = f"unreadable ({value['unreadable']})" if is_unreadable(value) else str(value)
    return printable(text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "…")


def _changed(what: str, before: Any, after: Any) -> Iterator[str]:
    """'WHAT X at baseline, now Y' when a readable value changed (unreadable at baseline:
    nothing to compare)."""
    if is_unreadable(before) or before in (None, "") or before == after:
        return
    yield f"{what} {_shown(before)} at baseline, now {_shown(after)}"


def _by(items: Any, key: str) -> dict[str, dict[str, Any]]:
    if not isinstance(items, list):
        return {}
    return {str(item.get(key)): item for item in items if isinstance(item, dict)}


def _listed(what: str, before: Any, after: Any, key: str,
            fields: tuple[str, ...]) -> Iterator[str]:
    """Differences between two lists of devices matched by `key`."""
    if not isinstance(before, list):
        return
    if not isinstance(after, list):
        yield f"{what}s unreadable now ({_shown(after)})"
        return
    old, new = _by(before, key), _by(after, key)
    for name, item in old.items():
        shown = _shown(name)
        if name not in new:
            yield f"{what} {shown} missing (was {', '.join(_shown(item.get(f)) for f in fields)})"
            continue
        for each in fields:
            yield from _changed(f"{what} {shown} {each}", item.get(each), new[name].get(each))
    for name in new:
        if name not in old:
            yield f"{what} {_shown(name)} new"


def _gpus(before: Any, after: Any) -> Iterator[str]:
    if not isinstance(before, list):
        return
    if not isinstance(after, list):
        yield f"GPUs unreadable now ({_shown(after)})"
        return
    old, new = _by(before, "index"), _by(after, "index")
    for index, gpu in old.items():
        now = new.get(index)
        if now is None:
            yield f"gpu{_shown(index)} missing (serial {_shown(gpu.get('serial'))} at baseline)"
        elif gpu.get("serial") != now.get("serial") or gpu.get("uuid") != now.get("uuid"):
            yield (f"gpu{_shown(index)} swapped: serial {_shown(gpu.get('serial'))} "
                   f"({_shown(gpu.get('uuid'))}{_model(gpu, now)}) at baseline, now serial "
                   f"{_shown(now.get('serial'))} ({_shown(now.get('uuid'))}"
                   f"{_model(now, gpu)})")
        else:
            for each in ("board_part", "vbios", "pci_bus_id"):
                yield from _changed(f"gpu{_shown(index)} {each}", gpu.get(each), now.get(each))
    for index, gpu in new.items():
        if index not in old:
            yield f"gpu{_shown(index)} new (serial {_shown(gpu.get('serial'))})"


def _model(gpu: dict[str, Any], other: dict[str, Any]) -> str:
    """', NVIDIA H100 PCIe' where the two GPUs' models differ, else nothing."""
    return f", {_shown(gpu.get('name'))}" if gpu.get("name") != other.get("name") else ""


def _ports(hca: HcaRecord) -> str:
    return "; ".join(f"port {_shown(p.get('port'))} {_shown(p.get('rate'))}"
                     for p in hca.get("ports", []) if isinstance(p, dict))


def hardware_changes(before: NodeRecord, after: NodeRecord) -> list[str]:
    """What differs in one node's inventory from its baseline, in words."""
    if is_unreadable(after):
        return [f"no inventory this run: {after['unreadable']}"]
    if is_unreadable(before):
        return []
    found: list[str] = []
    old_dmi, new_dmi = before.get("dmi"), after.get("dmi")
    for key in ("product_serial", "product_uuid"):
        if isinstance(old_dmi, dict):
            found += _changed(f"system {key}", old_dmi.get(key),
                              new_dmi.get(key) if isinstance(new_dmi, dict) else new_dmi)
    found += _changed("machine id", before.get("machine_id"), after.get("machine_id"))
    found += _gpus(before.get("gpus"), after.get("gpus"))
    found += _listed("NIC", before.get("interfaces"), after.get("interfaces"), "name",
                     ("address", "firmware", "rate_gbps", "link_layer"))
    old_hcas = [{**h, "rate": _ports(h)} for h in before.get("infiniband") or []
                if isinstance(h, dict)] if isinstance(before.get("infiniband"), list) else None
    new_hcas = [{**h, "rate": _ports(h)} for h in after.get("infiniband") or []
                if isinstance(h, dict)] if isinstance(after.get("infiniband"), list) else \
        after.get("infiniband")
    found += _listed("HCA", old_hcas, new_hcas, "name", ("node_guid", "firmware", "rate"))
    old_fs, new_fs = _by(before.get("filesystems"), "path"), _by(after.get("filesystems"),
                                                                  "path")
    for path, fs in old_fs.items():
        if path in new_fs:
            found += _listed(f"disk under {path}", fs.get("block_devices"),
                             new_fs[path].get("block_devices"), "name", ("serial", "model"))
    found += _changed("driver", before.get("software", {}).get("driver"),
                      after.get("software", {}).get("driver"))
    return found


def same_hardware(baseline: Baseline, now: InventoryDocument,
                  asked: set[str] | None = None) -> list[Case]:
    """Each node's machine against the baseline's: the nodes this run was `asked` to check
    (None: all); a node it was not is no case (it would judge a node nothing else did)."""
    cases = []
    for node, before in baseline.inventory["nodes"].items():
        after = now["nodes"].get(node)
        if after is None or (asked is not None and node not in asked):
            continue  # named by same_nodes
        changes = hardware_changes(before, after)
        gpus = before.get("gpus") if isinstance(before, dict) else None
        measured = "as at baseline" if not changes else f"{len(changes)} change(s)"
        more = len(changes) - MAX_NAMED
        changes = changes[:MAX_NAMED] + ([f"and {more} more change(s)"] if more > 0 else [])
        cases.append(Case(node, "baseline.hardware", node, not changes,
                          f"{node}: " + "; ".join(changes) + f" ({baseline.label})"
                          if changes else "",
                          props={"measured": measured, "changes": changes,
                                 "requirement": "the machine, GPUs, NICs, disks and driver "
                                                "of the baseline",
                                 "gpus_at_baseline": len(gpus) if isinstance(gpus, list)
                                 else None}))
    return cases


# -- performance -------------------------------------------------------------------------

def percent(value: float, signed: bool = False) -> str:
    """A change in percent ('9.8', '+9.8' `signed`): one decimal, and from 10,000 % on as
    format_number writes it (a baseline of 1e-280 is 8.015e+284 % below this run's)."""
    sign = "+" if signed and value >= 0 else ""
    return f"{sign}{value:.1f}" if abs(value) < 1e4 else f"{sign}{format_number(value)}"


@dataclass(frozen=True)
class Figure:
    """How a figure's result line is shown: where it was measured ('gpu-003 gpu6'), and
    a value of its (SI) measured_base in the line's own unit ('598.2 TFLOPS')."""

    record: ResultLine

    @property
    def where(self) -> str:
        gpu = self.record.get("gpu")
        return " ".join(str(p) for p in (self.record.get("node"),
                                         f"gpu{gpu}" if gpu is not None else None) if p)

    @property
    def higher_is_better(self) -> bool:
        return self.record["comparison"] in HIGHER_BETTER

    def number(self, base_value: float) -> str:
        """`base_value` (SI, as measured_base) in the line's unit, without the unit."""
        measured, base = self.record.get("measured"), self.record.get("measured_base")
        scale = float(measured) / float(base) if isinstance(measured, (int, float)) and \
            isinstance(base, (int, float)) and base else 1.0
        return format_number(base_value * scale)

    def value(self, base_value: float, per: bool = True) -> str:
        """The same, with the unit, and (`per`) what it is per where the bound is per node
        or per GPU ('1.538 GB/s per GPU': the figure is no cluster total)."""
        unit = self.record.get("unit")
        basis = self.record.get("basis")
        each = f" {BASES[basis]}" if per and basis in ("node", "gpu") else ""
        return f"{self.number(base_value)}{' ' + str(unit) if unit else ''}{each}"


def _dimension(unit: Any) -> object:
    """What a unit measures (GB/s and Gb/s both a rate); an unknown unit is itself."""
    return UNITS[unit][0] if isinstance(unit, str) and unit in UNITS else unit or ""


def _basis(value: Any) -> str:
    """'per GPU', 'as the cluster's total': a basis as a message says it."""
    return BASES.get(value, f"on the basis {_shown(value)}") if isinstance(value, str) \
        else "on no recorded basis"


def _count(record: ResultLine, shared: tuple[str, str] | None) -> int | None:
    """What `record`'s total was shared out by (`shared`: its key; None: the total, 1),
    or None where its line does not hold it."""
    count = record.get(shared[0]) if shared is not None else 1
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 \
        else None


def on_basis(now: ResultLine, before: ResultLine,
             same_spec: bool = False) -> tuple[float | None, str]:
    """The baseline's figure (SI) on this run's basis (`basis`: the cluster's total, per
    node, per GPU) and how it was converted ('' where it was on it); None and why not
    where it cannot be: measured on another basis and its line lacks the count to convert
    exactly, or it records no basis and its spec is not this run's (`same_spec`: the same
    spec counts every bound alike)."""
    base = float(before["measured_base"])
    here, there = now.get("basis"), before.get("basis")
    if here == there or (there is None and same_spec):
        return base, ""
    if there is None:
        return None, (f"measured {_basis(here)} here, and the baseline's line records no "
                      "basis (per GPU, per node or the cluster's total: its `basis`) while "
                      "its spec differs from this run's")
    said = f"measured {_basis(there)} in the baseline, {_basis(here)} here"
    if not (isinstance(here, str) and here in SHARED_BY and there in SHARED_BY):
        return None, said
    sources, targets = SHARED_BY[there], SHARED_BY[here]
    counts = _count(before, sources), _count(before, targets)
    if counts[0] is None or counts[1] is None:
        lacking = dict.fromkeys(f"{shared[0]} (the {shared[1]} its total was shared out by)"
                                for shared in (sources, targets)
                                if shared is not None and _count(before, shared) is None)
        return None, f"{said}, and the baseline's line holds no {' or '.join(lacking)} " \
                     "to convert with"
    steps = ([f"x {counts[0]} {sources[1]}"] if sources is not None else []) + \
        ([f"/ {counts[1]} {targets[1]}"] if targets is not None else [])
    return base * counts[0] / counts[1], \
        f"{Figure(before).value(base, per=False)} {_basis(there)} at baseline " \
        f"{' '.join(steps)}"


def _not_comparable(now: ResultLine, current: float, why: str, label: str,
                    requirement: str) -> Case:
    """A failed case: the figure and its baseline's cannot be compared (`why`, said in
    full); a cluster failure that names no culprit (NOT_COMPARABLE), never a node's."""
    figure = Figure(now)
    return Case(str(now["case"]).rpartition("::")[2],
                f"baseline.performance[{now['clause']}]", str(now.get("node")), False,
                f"{figure.where} {now['clause']}: {why} ({label})",
                gpu=now.get("gpu"),
                props={"measured": figure.value(current), "compared_case": now["case"],
                       "requirement": requirement, "error_kind": NOT_COMPARABLE,
                       **parts(now)})


def change_from(base: float, current: float) -> float:
    """`current`'s change relative to `base` (0.1: 10 % more), infinite (signed) where it
    is beyond any share of `base`: from a baseline of 0 to anything else, or past what a
    double holds (1e300 from 1e-10); 0 from 0 to 0."""
    if base == 0:
        return 0.0 if current == 0 else math.copysign(math.inf, current)
    change = (current - base) / abs(base)
    return change if math.isfinite(change) else math.copysign(math.inf, current - base)


def compared(now: ResultLine, before: ResultLine, tolerance: float,
             label: str, same_spec: bool = False) -> Case:
    """One figure against its baseline: a case always, never a comparison left out in
    silence. From a baseline of 0 (a count of errors then) any change is beyond the
    tolerance (change_from: infinite), worse or better by the clause's direction; a
    failed case, not comparable, where either figure is no finite number, the baseline
    measured another quantity (its unit of another dimension) or on another basis (per GPU
    then, the cluster's total now) that its line holds no count to convert from
    (on_basis)."""
    base, current = float(before["measured_base"]), float(now["measured_base"])
    if not (math.isfinite(current) and math.isfinite(base)):
        return _not_comparable(now, current, f"{format_number(current)} now, "
                               f"{format_number(base)} at baseline: no finite figure to "
                               "compare, so not compared", label, "a finite figure in both runs")
    figure = Figure(now)
    if _dimension(now.get("unit")) != _dimension(before.get("unit")):
        return _not_comparable(now, current, f"in {_shown(now.get('unit'))} now, in "
                               f"{_shown(before.get('unit'))} at baseline: not the same "
                               "quantity, so not compared", label,
                               "the same quantity as at baseline")
    converted, how = on_basis(now, before, same_spec)
    if converted is None:
        return _not_comparable(now, current, f"{how}: not compared", label,
                               "the same basis as at baseline (per GPU, per node or the "
                               "cluster's total), or the counts to convert it")
    base = converted
    higher = figure.higher_is_better
    change = change_from(base, current)
    worse = -change if higher else change
    shown_now, shown_base = figure.value(current), figure.number(base)
    direction = ("below" if change < 0 else "above")
    was = f" ({how})" if how else ""
    if math.isinf(change):  # from 0, or past a double: no share of the baseline says it
        text = (f"{figure.where} {now['clause']}: {shown_now}, {direction} baseline "
                f"{shown_base}{was}, by more than any share of it ({label})")
        measured = f"{shown_now} ({direction} {shown_base}{was}, by more than any share of it)"
    else:
        text = (f"{figure.where} {now['clause']}: {shown_now}, {percent(abs(change) * 100)} "
                f"% {direction} baseline {shown_base}{was} ({label})")
        measured = f"{shown_now} ({percent(change * 100, True)} % on {shown_base}{was})"
    param = str(now["case"]).rpartition("::")[2]  # the case it compares, by its name
    props = {"measured": measured, "baseline_value": shown_base,
             "change_pct": round(change * 100, 2) if math.isfinite(change) else None,
             "compared_case": now["case"],
             "requirement": f"no more than {tolerance * 100:g} % "
                            f"{'below' if higher else 'above'} baseline", **parts(now)}
    shared = now.get("bounded_by")
    if worse > tolerance and isinstance(shared, str) and shared:
        text += (f": measured with {_shown(shared)}, not known good then, it is the "
                 "group's figure (the slowest bounds it) and singles out none of them")
        props["error_kind"] = UNDECIDED
    return Case(param, f"baseline.performance[{now['clause']}]", str(now.get("node")),
                worse <= tolerance, text if worse > tolerance else "", gpu=now.get("gpu"),
                props=props)


def not_worse(baseline: Baseline, now: dict[str, ResultLine],
              tolerance: float, spec_sha256: str = "") -> list[Case]:
    """Each figure of both runs compared (`spec_sha256`: this run's spec; the same as the
    baseline's, a figure whose baseline line records no basis is on this one's)."""
    same_spec = bool(spec_sha256) and spec_sha256 == baseline.spec_sha256
    cases = []
    for case_id, record in now.items():
        before = baseline.figures.get(case_id)
        if before:
            cases.append(compared(record, before, tolerance, baseline.label, same_spec))
    return cases


def compare(baseline: Baseline, inventory: InventoryDocument, results: Path,
            tolerance: float, cluster: ClusterSpec | None = None,
            checked: frozenset[str] | None = None) -> list[Case]:
    """Every derived case of this run against `baseline`: nodes (of `cluster`'s, those this
    run checks: `checked`, the nodes its selection kept a check of), hardware per node
    checked, and each figure measured in both runs."""
    done = read_results(results) if results.is_file() else None
    now = figures(done.results) if done is not None else {}
    spec = str(done.run.get("spec_sha256", "")) if done is not None else ""
    return [same_nodes(baseline, inventory, cluster, checked),
            *same_hardware(baseline, inventory, asked_nodes(cluster, checked)),
            *not_worse(baseline, now, tolerance, spec)]
