"""`baseline.performance`: each figure measured in both runs, not worse than at baseline
by more than the spec's `baseline.tolerance` (5 % unless it says), in the direction its
clause counts as better; converted to this run's basis (per GPU, per node, the cluster's
total) where its line holds the counts, else not comparable (a cluster failure, no
culprit). A node's figure this run measured in a group with nodes not known good
(`bounded_by`: the slow-node search's first pairs; the slowest bounds it) is the group's:
worse than at baseline, it blames none of them (undecided, no culprit)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_cluster.contract.sections.storage import BASES
from pytest_cluster.evidence.baseline.accepted import HIGHER_BETTER, Baseline, parts, shown
from pytest_cluster.evidence.record.derived_cases import Case
from pytest_cluster.evidence.verdict.blame import NOT_COMPARABLE, UNDECIDED
from pytest_cluster.units import UNITS, format_number

if TYPE_CHECKING:
    from pytest_cluster.evidence.sinks.results import ResultLine

#: Per basis of a figure (contract/sections/storage.py BASES), the count its line records that the
#: total was shared out by, and what it counts (none: the total itself).
SHARED_BY: dict[str, tuple[str, str] | None] = {
    "cluster": None, "node": ("basis_nodes", "node(s)"), "gpu": ("basis_gpus", "GPU(s)")}


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
    return BASES.get(value, f"on the basis {shown(value)}") if isinstance(value, str) \
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
        return _not_comparable(now, current, f"in {shown(now.get('unit'))} now, in "
                               f"{shown(before.get('unit'))} at baseline: not the same "
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
        text += (f": measured with {shown(shared)}, not known good then, it is the "
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
