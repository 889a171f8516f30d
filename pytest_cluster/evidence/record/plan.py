"""What a run set out to check: every contract case collected, which of them the selection
kept, and the clauses not in the contract.

The process that collects (the controller, or each pytest-xdist worker) writes the plan to
`plan.json` in the run's probe directory as soon as collection ends, so the controller
knows it even when a worker is interrupted; the end record, the verdict and the report say
from it what was covered and what was not.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import pytest

from pytest_cluster.contract.declaration import ACCEPTANCE
from pytest_cluster.contract.levels import plain_level

PLAN_FILE = "plan.json"
#: The plan a process wrote to PLAN_FILE, kept by that process (the controller reads it
#: back from the file only where pytest-xdist workers collected).
PLAN_KEY = pytest.StashKey["Plan"]()
#: On each contract item: the case it checks.
CASE_KEY = pytest.StashKey["PlannedCase"]()


@dataclass(frozen=True)
class PlannedCase:
    """One contract check: its stable id, the clause it checks, the node it is about
    (None for a check of the whole cluster or of several nodes)."""

    case_id: str
    clause: str
    node: str | None

    def to_json(self) -> list[Any]:
        return [self.case_id, self.clause, self.node]

    @classmethod
    def from_json(cls, row: list[Any]) -> PlannedCase:
        return cls(str(row[0]), str(row[1]), None if row[2] is None else str(row[2]))


#: Why a clause is not checked: the contract does not have it.
NOT_IN_CONTRACT = "not in contract"


@dataclass(frozen=True, order=True)
class LeftOut:
    """A clause whose cases the run left out at collection, and why (`why`: not in
    contract, not at this level: an opt-in level the run did not name, across nodes: a
    run of some nodes, too few nodes: more than the cluster has), `detail` saying it in
    full ('level stress: run it with -m stress'), shown after the clause in parentheses."""

    clause: str
    why: str = NOT_IN_CONTRACT
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.clause} ({self.detail})" if self.detail else self.clause

    def to_json(self) -> list[str]:
        return [self.clause, self.why, self.detail]

    @classmethod
    def from_json(cls, row: list[Any]) -> LeftOut:
        return cls(str(row[0]), str(row[1]), str(row[2]))


@dataclass(frozen=True)
class Plan:
    """Contract cases collected (after leaving out clauses not in the contract) and the ids
    of those the selection (-k, -m, --lf, --deselect) kept."""

    cases: tuple[PlannedCase, ...] = ()
    selected: frozenset[str] = frozenset()
    left_out: tuple[LeftOut, ...] = ()  # clauses not checked at all, and why
    known: bool = True  # False: no process wrote a plan (collection never ended)
    by_id: dict[str, PlannedCase] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.by_id.update({case.case_id: case for case in self.cases})

    def checked_nodes(self) -> frozenset[str] | None:
        """The nodes the selection kept a check of (-k gpu-001: that node alone); None when
        no plan is known (every node, then)."""
        if not self.known:
            return None
        return frozenset(case.node for case in self.cases
                         if case.node is not None and case.case_id in self.selected)

    @property
    def deselected(self) -> list[PlannedCase]:
        return [case for case in self.cases if case.case_id not in self.selected]

    def to_json(self) -> PlanDocument:
        return {"cases": [case.to_json() for case in self.cases],
                "selected": sorted(self.selected),
                "left_out": [entry.to_json() for entry in self.left_out]}

    @classmethod
    def from_json(cls, document: PlanDocument) -> Plan:
        return cls(tuple(PlannedCase.from_json(row) for row in document["cases"]),
                   frozenset(document["selected"]),
                   tuple(LeftOut.from_json(row) for row in document["left_out"]))

    def write(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        partial = directory / f".{PLAN_FILE}.{os.getpid()}"
        partial.write_text(json.dumps(self.to_json(), allow_nan=False), encoding="utf-8")
        os.replace(partial, directory / PLAN_FILE)

    @classmethod
    def read(cls, directory: Path) -> Plan:
        """The plan written by whichever process collected; unknown if none did."""
        try:
            return cls.from_json(json.loads((directory / PLAN_FILE).read_text("utf-8")))
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return cls(known=False)


class PlanDocument(TypedDict):
    """The plan as the collecting process writes it for the others (PLAN_FILE)."""

    cases: list[list[Any]]  # [case id, clause, node or None] (PlannedCase.to_json)
    selected: list[str]
    left_out: list[list[str]]  # [clause, why, detail] (LeftOut.to_json)


#: The options that chose a subset of the contract, as given (the end record's
#: `selection`; its keys are the options' names).
Selection = TypedDict("Selection", {"-k": str, "-m": str, "--lf": bool, "--ff": bool,
                                    "--deselect": list[str], "--maxfail": int}, total=False)


class NotChecked(TypedDict, total=False):
    """A clause not (fully) checked and why (the end record's `not_checked`): with how
    many of its cases, where some were."""

    clause: str
    why: str
    cases: int
    of: int


#: Why a selection left checks out: a level chose (-m alone), or another selection did.
NOT_AT_THIS_LEVEL, DESELECTED = "not at this level", "deselected"


def why_left_out(chosen: Selection) -> str:
    """Why the checks a run's selection left out (`selection`'s dict) were not run: 'not
    at this level' when `-m` alone chose (a sanity run judges the sanity level), else
    'deselected' (-k, --lf, --deselect)."""
    return NOT_AT_THIS_LEVEL if set(chosen) == {"-m"} else DESELECTED


def level_of_run(chosen: Selection) -> str:
    """The level a run judged: the level `-m` names ('sanity', 'stress'; each covers the
    levels below it), else the `-m` expression given ('not sanity'), else the default,
    the full acceptance suite."""
    given = str(chosen.get("-m") or ACCEPTANCE)
    return plain_level(given) or given


def opt_in(name: str, level: str) -> LeftOut:
    """A clause of an opt-in level that the run left out ('gpus.sdc (level stress: run it
    with -m stress)'): in the contract, not at this level."""
    return LeftOut(name, NOT_AT_THIS_LEVEL, f"level {level}: run it with -m {level}")


def not_checked(plan: Plan, ran: set[str],
                left_out: str = DESELECTED) -> list[NotChecked]:
    """Every clause not (fully) checked and why: left out at collection (not in contract,
    not at this level, across nodes, too few nodes: `Plan.left_out`), left out by the
    selection (`left_out`: deselected, or not at this level), not reached (selected, but
    the run ended first)."""
    rows: list[NotChecked] = [{"clause": entry.clause, "why": entry.why}
                              for entry in sorted(set(plan.left_out))]
    for why, cases in ((left_out, plan.deselected),
                       ("not reached", [c for c in plan.cases if c.case_id in plan.selected
                                        and c.case_id not in ran])):
        counts = Counter(case.clause for case in cases)
        totals = Counter(case.clause for case in plan.cases)
        rows.extend({"clause": clause, "why": why, "cases": count, "of": totals[clause]}
                    for clause, count in sorted(counts.items()))
    return rows


def selection(config: pytest.Config) -> Selection:
    """The options that chose a subset of the contract, as given."""
    option = config.option
    chosen: Selection = {}
    if getattr(option, "keyword", ""):
        chosen["-k"] = option.keyword
    if getattr(option, "markexpr", ""):
        chosen["-m"] = option.markexpr
    if getattr(option, "lf", False):
        chosen["--lf"] = True
    if getattr(option, "failedfirst", False):
        chosen["--ff"] = True
    if getattr(option, "deselect", None):
        chosen["--deselect"] = list(option.deselect)
    if getattr(option, "maxfail", 0):
        chosen["--maxfail"] = option.maxfail
    return chosen
