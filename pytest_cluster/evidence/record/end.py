"""The end of a run's evidence: the end record (results.jsonl's last line) and
verdict.json, as pure functions of what the run found (the session gathers the facts and
writes them)."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from pytest_cluster import __version__
from pytest_cluster.contract.levels import covered as levels_covered
from pytest_cluster.evidence.baseline import replacements
from pytest_cluster.evidence.record.plan import level_of_run, not_checked, why_left_out
from pytest_cluster.evidence.record.summary import is_simulated, not_a_node
from pytest_cluster.evidence.sinks.results import EndLine, SoakEnd, run_status
from pytest_cluster.evidence.verdict.age import DEFAULT_VALID_FOR_S, MADE_AT, VALID_UNTIL, validity
from pytest_cluster.evidence.verdict.cluster_verdict import (
    INCOMPLETE,
    cluster_verdict,
    decisive,
    incomplete_why,
)
from pytest_cluster.evidence.verdict.drain import drain_line, taint_line, to_drain
from pytest_cluster.evidence.verdict.nodes import NOT_CHECKED, outcome_of
from pytest_cluster.units import utc

if TYPE_CHECKING:
    from pytest_cluster.contract import Spec
    from pytest_cluster.evidence.baseline.accepted import Baseline
    from pytest_cluster.evidence.record.derived_cases import Case
    from pytest_cluster.evidence.record.ledger import Ledger
    from pytest_cluster.evidence.record.lines import DisabledEntry
    from pytest_cluster.evidence.record.plan import NotChecked, Plan, Selection
    from pytest_cluster.evidence.verdict.nodes import NodeVerdict, VerdictDocument


@dataclass(frozen=True)
class RunFacts:
    """What a run found, as the end record tells it."""

    spec: Spec
    plan: Plan
    ledger: Ledger
    ran: set[str]  # the case ids that ran (before the not-run lines joined the ledger)
    verdicts: Sequence[NodeVerdict]
    exit_code: int
    started: float
    selection: Selection
    derived: Sequence[Case] = ()  # cases derived from the whole run: counted apart
    not_checked: Sequence[NotChecked] = ()  # more clauses given but not checked
    baseline: Baseline | None = None
    baseline_cases: Sequence[Case] = ()
    soak: SoakEnd | None = None  # a soak's own end record
    disabled: Sequence[DisabledEntry] = ()  # the kill switch's entries in force
    disabled_expired: Sequence[DisabledEntry] = ()  # ... and those expired (ignored)


def end_record(facts: RunFacts) -> EndLine:
    """results.jsonl's last line: how the run ended and exactly what it covered."""
    plan, ledger, derived = facts.plan, facts.ledger, facts.derived
    failed_derived = sum(case.failed for case in derived)
    # checks outside the plan: your own tests recording evidence without a clause
    extra = sum(ledger.outside_plan(plan).values()) - len(derived)
    planned, selected = len(plan.cases) + extra, len(plan.selected) + extra
    checks_ran = ledger.checks_ran - len(derived)
    counts = ledger.counts()
    not_judged = sum(bool(case.not_judged) for case in derived)
    # the cases derived from the whole run are counted apart (derived_counts)
    apart = {"passed": len(derived) - failed_derived - not_judged, "failed": failed_derived,
             "skipped": not_judged}
    for name, count in apart.items():
        counts[name] -= count
    covered = {c.node for c in plan.cases if c.node is not None and c.case_id in facts.ran}
    nodes = facts.spec.cluster.nodes
    now = time.time()
    end: EndLine = {
        "type": "end", "simulated": is_simulated(facts.spec),
        "status": run_status(facts.exit_code, planned, selected, checks_ran),
        "exit_code": facts.exit_code, "counts": counts,
        "checks_ran": checks_ran, "checks_planned": planned,
        "checks_selected": selected, "deselected": planned - selected,
        "selection": facts.selection,
        "nodes_covered": [n for n in nodes if n in covered],
        "nodes_in_spec": len(facts.spec.cluster.chosen_from or nodes),
        "level": level_of_run(facts.selection),
        "levels": list(levels_covered(level_of_run(facts.selection))),
        "not_checked": not_checked(plan, facts.ran, why_left_out(facts.selection))
        + list(facts.not_checked),
        "verdicts": dict(Counter(v.verdict for v in facts.verdicts)),
        "started_at": facts.started, "ended_at": now,
        "duration_s": round(now - facts.started, 3),
        "tool_version": __version__,
        "verdict": cluster_verdict(
            run_status(facts.exit_code, planned, selected, checks_ran), facts.verdicts,
            len(decisive(facts.ledger.cluster_failures(), facts.verdicts))),
    }
    if end["verdict"] == INCOMPLETE:  # why, as true of the run (a soak: how it stopped)
        end["incomplete"] = incomplete_why(end["status"], end["verdicts"].get(NOT_CHECKED, 0),
                                           facts.soak)
    if derived:  # what pytest counts beside them: counts + derived_counts is its total
        end["derived_counts"] = apart
    if facts.baseline is not None:
        compared = facts.baseline_cases
        end["baseline"] = {"path": str(facts.baseline.path), "run": facts.baseline.label,
                           "manifest_sha256": facts.baseline.manifest_sha256,
                           "signature": facts.baseline.signature,
                           "signature_key": facts.baseline.checked_key,
                           "cases": len(compared),
                           "failed": sum(case.failed for case in compared)}
        if facts.baseline.accept:  # each replacement accepted, and where it was seen
            end["baseline"]["accepted"] = replacements.summary(facts.baseline.accept,
                                                               compared)
    if facts.soak is not None:
        end["soak"] = facts.soak
    if facts.disabled:
        end["disabled"] = list(facts.disabled)
    if facts.disabled_expired:
        end["disabled_expired"] = list(facts.disabled_expired)
    return end


#: The verdict.json shape this version writes (verdict.schema.json, shipped beside this).
VERDICT_SCHEMA = "pytest-cluster/verdict/5"


def verdict_schema() -> dict[str, Any]:
    """verdict.json's JSON Schema (Draft 2020-12), as the package ships it."""
    text = resources.files(__package__).joinpath("verdict.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def verdict_document(spec: Spec, end: EndLine, verdicts: Sequence[NodeVerdict],
                     ledger: Ledger, run_id: str = "",
                     valid_for: float = DEFAULT_VALID_FOR_S) -> VerdictDocument:
    """verdict.json: the cluster's verdict and outcome (PASS, FAIL, ERROR) at the level
    that ran, each node's, the failed checks about no one node, and the lines that take
    the nodes that failed out of service (SLURM drain, Kubernetes taint; printed, never
    run), and the baseline it was compared with (how its signature stood); made at the
    run's end and holding for `valid_for` seconds (--cluster-valid-for). Its shape:
    verdict.schema.json."""
    failed = ledger.cluster_failures()
    why_not = not_a_node(spec)
    out = to_drain(verdicts)
    held = validity(end["ended_at"], valid_for)
    document: VerdictDocument = {
        "schema": VERDICT_SCHEMA, "run_id": run_id, "tool_version": __version__,
        "cluster": spec.cluster.name, "spec_sha256": spec.sha256,
        "simulated": is_simulated(spec), "status": end["status"],
        "verdict": end["verdict"], "outcome": outcome_of(end["verdict"]),
        "level": end["level"], "levels": end["levels"], "selection": end["selection"],
        "checks_not_selected": end["deselected"],
        "started_at": utc(end["started_at"]), "ended_at": utc(end["ended_at"]),
        "made_at": held[MADE_AT], "valid_until": held[VALID_UNTIL],
        "checks": f"{end['checks_ran']} of {end['checks_planned']}",
        "nodes_in_spec": end["nodes_in_spec"],
        # checked: at least one of its cases ran (not the nodes in scope: a --maxfail=1
        # run that stopped on the first node checked that one)
        "nodes_checked": len(end["nodes_covered"]),
        "nodes": [v.to_json() for v in verdicts],
        "cluster_checks_failed": failed,
        "drain": [drain_line(v, why_not) for v in out],
        "taint": [taint_line(v, why_not) for v in out],
    }
    if spec.extends:  # the shipped profile the spec extends (each bound says its own)
        document["extends"] = spec.extends
    if "baseline" in end:  # the run compared with, its signature, its cases (end record's)
        document["baseline"] = end["baseline"]
        if "accepted" in end["baseline"]:  # --cluster-baseline-accept's, where jq finds it
            document["baseline_accepted"] = end["baseline"]["accepted"]
    if "incomplete" in end:  # why the verdict is INCOMPLETE (end record's)
        document["incomplete"] = end["incomplete"]
    if "disabled" in end:  # the clauses the kill switch turned off (end record's)
        document["disabled"] = end["disabled"]
    if "disabled_expired" in end:
        document["disabled_expired"] = end["disabled_expired"]
    return document
