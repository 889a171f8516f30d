"""The contract summary of a run's records: per clause, who passed and failed, the worst
value measured and its margin against the requirement."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.evidence.verdict.blame import judged
from pytest_cluster.units import format_number

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec
    from pytest_cluster.evidence.sinks.results import ResultLine

MAX_SHOWN = 5


def _places(names: list[str]) -> str:
    ordered = sorted(names)
    if len(ordered) <= 4:
        return ", ".join(ordered)
    return f"{', '.join(ordered[:3])} and {len(ordered) - 3} more"


def margin(record: ResultLine) -> float | None:
    """How far the measured value is from the requirement, in % of the required value:
    positive is headroom, negative a shortfall ('== 8' with 7 found: -12.5). None when
    there is no number to compare (text, an error) or the requirement is 0."""
    measured, required = record.get("measured"), record.get("required")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
               for v in (measured, required)):
        return None
    assert isinstance(measured, (int, float)) and isinstance(required, (int, float))
    if required == 0 or not math.isfinite(measured):
        return None
    op = record.get("comparison", ">=")
    if op in ("==", "="):
        return -abs(measured - required) / abs(required) * 100
    if op in ("<=", "<"):
        return (required - measured) / abs(required) * 100
    return (measured - required) / abs(required) * 100


def measured_text(values: Mapping[str, Any]) -> str:
    """'85.52 GB' for a record or a test's properties; its error kind without a number."""
    measured = values.get("measured", values.get("error_kind", ""))
    if isinstance(measured, float):
        measured = format_number(measured)
    return f"{measured} {values.get('unit') or ''}".strip()


def margin_text(value: float, comparison: str = ">=") -> str:
    """'-7.6 % below required' (>=), '-25.0 % over the limit' (<=), 'as required'."""
    if abs(value) < 0.05:
        return "as required"
    if comparison in ("<=", "<"):
        word = "over the limit" if value < 0 else "under the limit"
    elif comparison in ("==", "="):
        word = "off required"
    else:
        word = "below required" if value < 0 else "above required"
    return f"{value:+.1f} % {word}"


@dataclass
class ClauseTally:
    key: str
    required: str = ""
    unit: str = ""
    comparison: str = ""
    passed: set[str] = field(default_factory=set)  # where: a node, or "node gpuN"
    failed: set[str] = field(default_factory=set)  # judged: the node's own failure
    #: failed without a verdict on the place (blame.judged: a DCGM configuration error, a
    #: missing tool, a search that could not decide): not decided, as the node verdicts say
    undecided: set[str] = field(default_factory=set)
    #: cases, as every other view counts them (the terminal, JUnit, verdict.json): a
    #: place with several cases (payloads, collectives) counts each; failed counts errors
    passed_cases: int = 0
    failed_cases: int = 0
    worst: float | None = None
    worst_node: str = ""
    worst_margin: float | None = None
    simulated: bool = False
    #: where the bound came from when the spec's profile supplied it (bound_source)
    source: str = ""
    found: dict[str, list[str]] = field(default_factory=dict)  # text values -> nodes
    found_failed: dict[str, list[str]] = field(default_factory=dict)
    unmeasured: list[str] = field(default_factory=list)  # failed with no number to show

    def add(self, record: ResultLine) -> None:
        node = str(record.get("node", "?"))
        if record.get("gpu") is not None:  # one string per GPU, whichever clause
            node = sys.intern(f"{node} gpu{record['gpu']}")
        if record.get("outcome") == "skipped":  # neither passed nor failed, as pytest says
            return
        if record["outcome"] == "passed":
            self.passed.add(node)
            self.passed_cases += 1
        else:
            (self.failed if judged(record) else self.undecided).add(node)
            self.failed_cases += 1
        self.required = str(record.get("requirement", self.required))
        self.source = str(record.get("bound_source", self.source) or "")
        self.unit = str(record.get("unit", self.unit) or "")
        self.comparison = str(record.get("comparison", self.comparison) or "")
        self.simulated = self.simulated or bool(record.get("simulated"))
        measured = record.get("measured")
        if record["outcome"] != "passed" and (measured is None or record.get("error_kind")):
            self.unmeasured.append(node)
        if isinstance(measured, str):
            self.found.setdefault(measured, []).append(node)
            if record["outcome"] != "passed":
                self.found_failed.setdefault(measured, []).append(node)
        elif isinstance(measured, (int, float)) and not isinstance(measured, bool):
            found = margin(record)
            if found is not None:  # the worst is the one furthest short of the requirement
                if self.worst_margin is None or found < self.worst_margin:
                    self.worst, self.worst_node = float(measured), node
                    self.worst_margin = found
            elif self.worst_margin is None and self._worse(float(measured)):
                self.worst, self.worst_node = float(measured), node

    def _worse(self, measured: float) -> bool:
        lower_is_worse = self.comparison in (">=", ">", "")
        return self.worst is None or (measured < self.worst if lower_is_worse
                                      else measured > self.worst)

    @property
    def worst_unmeasured(self) -> bool:
        """The worst of this clause is a failure with no number (no margin to show)."""
        return bool(self.unmeasured) and not self.found_failed and (
            self.worst_margin is None or self.worst_margin >= 0)

    def worst_text(self) -> str:
        """Numbers: the worst and where. Text: the failing values when some failed (health
        rules), else every value when there are few (versions), else the one thing they
        all say with each number's range (`alike`); at most MAX_SHOWN."""
        if self.worst_unmeasured:
            measured = self._measured_text()
            return f"could not measure: {_places(self.unmeasured)}" + (
                f"; worst measured {measured}" if measured != "-" else "")
        return self._measured_text()

    def _measured_text(self) -> str:
        if self.found:
            shown = self.found_failed or (self.found if len(self.found) <= 3 else {})
            if not shown:
                return alike(self.found) or f"{len(self.found)} different values, all as " \
                    "required"
            items = sorted(shown.items())
            text = "; ".join(f"{value} ({_places(nodes)})" for value, nodes in items[:MAX_SHOWN])
            more = len(items) - MAX_SHOWN
            return text + (f"; and {more} more" if more > 0 else "")
        if self.worst is None:
            return "-"
        unit = f" {self.unit}" if self.unit and self.unit != "%" else self.unit
        return f"{format_number(self.worst)}{unit} ({self.worst_node})"


#: A number in a text value: what differs between values that say the same thing.
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def alike(found: Mapping[str, list[str]]) -> str | None:
    """Text values that differ only in their numbers (a health rule's finding and what it
    saw: 'none in 110 samples under load (max 66 C, ...)'), said once, each number as the
    range found, and where: 'none in 110 samples under load (max 61 to 67 C, ...) (n1 gpu0,
    n1 gpu1, n1 gpu2 and 29 more)'. None when they say different things."""
    values = list(found)
    if len({_NUMBER.sub("#", value) for value in values}) != 1:
        return None
    columns = list(zip(*(_NUMBER.findall(value) for value in values), strict=True))
    pieces = _NUMBER.split(values[0])
    text = pieces[0]
    for numbers, piece in zip(columns, pieces[1:], strict=True):
        low, high = min(numbers, key=float), max(numbers, key=float)
        text += (low if float(low) == float(high) else f"{low} to {high}") + piece
    return f"{text} ({_places([place for nodes in found.values() for place in nodes])})"


def is_simulated(spec: Spec) -> bool:
    """Whether every result of this run comes from a simulated cluster (its launcher's
    declaration says)."""
    return KINDS[spec.cluster.launcher].simulated


def not_a_node(spec: Spec) -> str | None:
    """Why the spec's node names are no SLURM nodes to drain (None when they may be)."""
    launcher = KINDS[spec.cluster.launcher]
    if launcher.simulated:
        return "SIMULATED, not a real node"
    if launcher.one_host and not spec.cluster.here:
        return "this machine stands for every node here, not a SLURM node"
    return None


SIMULATED_BANNER = ("SIMULATED cluster: every number in this report is simulated from the "
                    "spec's sim section; no hardware was measured.")


def add_to_tally(clauses: dict[str, ClauseTally], record: ResultLine) -> None:
    """Count one result line in its clause's tally (a line not run counts nowhere)."""
    if record.get("outcome") == "not_run":
        return
    key = str(record["spec_key"])
    clauses.setdefault(key, ClauseTally(key)).add(record)


def clause_tallies(records: Iterable[ResultLine]) -> list[ClauseTally]:
    clauses: dict[str, ClauseTally] = {}
    for record in records:
        add_to_tally(clauses, record)
    return list(clauses.values())


