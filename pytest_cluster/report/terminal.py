"""The terminal's section of a run, from what the run found: a soak's availability and
credit first, then the checks that ran, the baseline, the selection, the nodes' verdicts
and why each one not accepted is not, the cluster checks that failed, what was not
checked, the drain lines (printed, never run), and where the evidence is. Pure: it renders
the facts it is given."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_cluster.contract.promised import ACROSS
from pytest_cluster.evidence.baseline.accepted import signature_said
from pytest_cluster.evidence.baseline.replacements import replaced
from pytest_cluster.evidence.record.plan import DESELECTED, NOT_AT_THIS_LEVEL, LeftOut, why_left_out
from pytest_cluster.evidence.record.summary import is_simulated, not_a_node
from pytest_cluster.evidence.sinks.results import (
    COMPLETE,
    INTERRUPTED,
    PARTIAL,
    BaselineSummary,
    EndLine,
)
from pytest_cluster.evidence.verdict.cluster_verdict import (
    INCOMPLETE,
    incomplete_why,
    soak_stopped,
    unmade,
)
from pytest_cluster.evidence.verdict.drain import drain_line, taint_line, to_drain
from pytest_cluster.evidence.verdict.nodes import (
    ERROR,
    NOT_CHECKED,
    NodeVerdict,
    by_verdict,
    outcome_of,
    said_once,
)
from pytest_cluster.hostlist import compress_hostlist

if TYPE_CHECKING:
    from pytest_cluster.contract import Spec
    from pytest_cluster.evidence.baseline.accepted import Baseline

MAX_LISTED = 20  # nodes and drain lines listed in the terminal; verdict.json has all
#: Why the sla: section of a run that is no soak is not checked.
NEEDS_A_SOAK = ("availability is measured over time, by a soak (--cluster-soak=DURATION or "
                "--cluster-soak-rounds=N); this run is none")


def coverage_line(end: EndLine | None) -> str:
    """'INCOMPLETE: 12 of 640 contract checks ran (interrupted)'; for a selection that
    ran in full and decided every node, the level it judged ('level sanity: 70 of 155
    contract checks selected and ran; 85 not at this level'); '' if complete (or no end
    record yet)."""
    if end is None or end["status"] == COMPLETE:
        return ""
    if end["status"] == PARTIAL and end["verdict"] != INCOMPLETE:
        return (f"level {end['level']}: {end['checks_ran']} of {end['checks_planned']} "
                f"contract checks selected and ran; {end['deselected']} "
                f"{why_left_out(end['selection'])}")
    why = {"partial": "the selection left the others out"}.get(end["status"], end["status"])
    soak = end.get("soak")
    if soak is not None and end["status"] == INTERRUPTED:
        why = soak_stopped(soak)  # how: a round cut short, between rounds, one not started
    return (f"INCOMPLETE: {end['checks_ran']} of {end['checks_planned']} contract "
            f"checks ran ({why.replace('_', ' ')})")


@dataclass(frozen=True)
class RunSummary:
    """What the terminal's section says, as the run's session found it."""

    spec: Spec
    end: EndLine | None  # the end record; None: no check ran
    runs_checks: bool  # False: --collect-only, --fixtures, ...
    verdicts: Sequence[NodeVerdict]
    cluster_failures: list[dict[str, str]]
    soak_lines: list[str] | None  # a soak's own lines; None: no soak
    baseline: Baseline | None
    coverage: str  # 'INCOMPLETE: ...', or ''
    not_in_contract: Sequence[LeftOut]
    inventory_error: str
    evidence: str | None  # where the evidence is; None: none written
    findings: Sequence[str] = ()  # what checks found beside their figures (a straggler)


def terminal_lines(run: RunSummary) -> list[str]:
    """The lines of the terminal's section."""
    spec, end = run.spec, run.end
    nodes = spec.cluster.nodes
    lines: list[str] = []
    if end is None:
        why = "no check was run" if not run.runs_checks else \
            "no contract check was collected"
        return [f"cluster {spec.cluster.name}: {len(nodes)} node(s); {why}, so no "
                "evidence was written", *_not_in_contract(run)]
    failed = end["counts"]["failed"] + end["counts"]["error"]
    mark = "[SIMULATED] " if is_simulated(spec) else ""
    if run.soak_lines is not None:  # a soak's availability and credit come first
        lines.extend(_marked(mark, run.soak_lines))
    lines.append(f"cluster {spec.cluster.name}: {end['checks_ran']} of "
                 f"{end['checks_planned']} contract check(s) ran, {failed} failed"
                 f"{_not_decided(run.verdicts)}; "
                 f"nodes covered: {_covered(end['nodes_covered'], len(nodes))}"
                 + (f" (a run of {len(nodes)} of the spec's {len(spec.cluster.chosen_from)} "
                    f"nodes: --cluster-node)" if spec.cluster.chosen_from else ""))
    if run.baseline is not None and "baseline" in end:
        lines.extend(_marked(mark, _baseline_lines(run.baseline, end["baseline"], spec)))
    if run.coverage:
        lines.append(run.coverage)
    if end["selection"]:
        chosen = " ".join(f"{k} {v}" if v is not True else k
                          for k, v in end["selection"].items())
        lines.append(f"selection: {chosen}; {end['deselected']} check(s) deselected")
    lines.append(verdict_line(end))
    lines += disabled_lines(end)
    counted = by_verdict(run.verdicts)
    lines.append("nodes: " + ", ".join(f"{len(v)} {k}" for k, v in counted.items()))
    lines += node_lines(run.verdicts)
    # where this machine could not check nodes, the checks across them it could not make
    # are one line: the nodes' line says why
    kinds = unmade(run.verdicts) if any(v.controller_fault for v in run.verdicts) \
        else frozenset()
    shown = [f for f in run.cluster_failures if f.get("kind") not in kinds]
    lines += at_most([f"  cluster check failed: {failure['clause']} ({failure['where']}): "
                      f"{failure['message']}" for failure in shown],
                     "  and {} more cluster checks failed (verdict.json lists all)")
    if len(shown) < len(run.cluster_failures):
        lines.append(f"  {len(run.cluster_failures) - len(shown)} cluster check(s) could not "
                     "be made: this machine could not check their nodes (above)")
    lines += at_most([f"found: {finding}" for finding in run.findings],
                     "found: {} more (results.jsonl has each case's)")
    lines.extend(_not_in_contract(run))
    for row in end["not_checked"]:
        if row["why"] == NEEDS_A_SOAK:
            lines.append(f"not checked: {row['clause']}: {row['why']}")
    for why in (NOT_AT_THIS_LEVEL, DESELECTED, "not reached"):
        # those without cases (an opt-in level's clauses) are listed with the contract's
        rows = [r for r in end["not_checked"] if r["why"] == why and "cases" in r]
        if rows:
            lines.append(f"{why}: " + ", ".join(
                f"{r['clause']} ({r['cases']} of {r['of']})" for r in rows[:MAX_LISTED])
                + (f" and {len(rows) - MAX_LISTED} more" if len(rows) > MAX_LISTED
                   else ""))
    drain = to_drain(run.verdicts)
    if drain:
        lines.append("to drain them in SLURM (printed, never run):")
        why_not = not_a_node(spec)
        more = "  # and {} more nodes (verdict.json's drain lists all)"
        lines += at_most([f"  {drain_line(v, why_not)}" for v in drain], more)
        lines.append("to keep new pods off them in Kubernetes (printed, never run):")
        lines += at_most([f"  {taint_line(v, why_not)}" for v in drain], more)
    if run.inventory_error:
        lines.append(f"inventory.json could not be written: {run.inventory_error}")
    if run.evidence is not None:
        lines.append(run.evidence)
    return lines


def disabled_lines(end: EndLine) -> list[str]:
    """The clauses the kill switch turned off (--cluster-disable), a line each with why,
    until when and the cases it skipped; then a warning line per entry that had expired
    and was ignored (the clause ran)."""
    lines = at_most([f"disabled (--cluster-disable): {e['clause']} until {e['until']}: "
                     f"{e['reason']} ({e.get('cases', 0)} case(s) skipped, none passed)"
                     for e in end.get("disabled", [])],
                    "disabled: {} more clauses (verdict.json lists all)")
    return lines + at_most([f"warning: the disable entry of {e['clause']} expired (until "
                            f"{e['until']}: {e['reason']}): ignored, the clause ran"
                            for e in end.get("disabled_expired", [])],
                           "warning: {} more disable entries expired (verdict.json)")


def node_lines(verdicts: Sequence[NodeVerdict]) -> list[str]:
    """A line per node not accepted, saying why; the nodes this machine could not check
    for the same fault in one line, as a hostlist (said_once); the first MAX_LISTED lines,
    then how many nodes more."""
    rows = said_once(verdicts)
    lines = [f"  {verdict} {compress_hostlist(nodes)}: {reason}{fault}"
             for verdict, nodes, reason, fault in rows[:MAX_LISTED]]
    if len(rows) > MAX_LISTED:
        lines.append(f"  and {sum(len(row[1]) for row in rows[MAX_LISTED:])} more "
                     "nodes (verdict.json lists all)")
    return lines


def at_most(lines: list[str], more: str) -> list[str]:
    """The first MAX_LISTED of `lines`, then `more` with how many were left out: the
    terminal never cuts a list without saying so."""
    if len(lines) <= MAX_LISTED:
        return lines
    return [*lines[:MAX_LISTED], more.format(len(lines) - MAX_LISTED)]


def closing_line(end: EndLine, verdicts: Sequence[NodeVerdict]) -> str:
    """The run's last word before the manifest's, below pytest's own summary (which lists
    every failed case, thousands of lines on a large cluster): the verdict and the node
    counts again, and where they are said in full."""
    counted = by_verdict(verdicts)
    return (f"pytest-cluster: {end['verdict']} at level {end['level']} "
            f"({outcome_of(end['verdict'])}): "
            + ", ".join(f"{len(v)} {k}" for k, v in counted.items())
            + "; which and why: the pytest-cluster section above, verdict.json")


def verdict_line(end: EndLine) -> str:
    """'verdict: ACCEPTED at level sanity (PASS)': the cluster's verdict, the level it
    judged and what a gate does with it; a level above sanity says the levels it covers
    ('; level stress covers sanity, acceptance and stress')."""
    outcome = outcome_of(end["verdict"])
    why = ""
    if outcome == ERROR:
        said = incomplete_why(end["status"], end["verdicts"].get(NOT_CHECKED, 0),
                              end.get("soak"))
        why = f": {said}; none is drained for it"
    levels = end.get("levels", [])
    covers = (f"; level {end['level']} covers {', '.join(levels[:-1])} and {levels[-1]}"
              if len(levels) > 1 else "")
    return f"verdict: {end['verdict']} at level {end['level']} ({outcome}{why}){covers}"


def _baseline_lines(accepted: Baseline, counted: BaselineSummary, spec: Spec) -> list[str]:
    signature = signature_said(counted["signature"], counted["signature_key"])
    lines = [f"baseline: compared with {accepted.path} ({accepted.label}, manifest sha256 "
             f"{accepted.manifest_sha256[:16]}...; {signature}): {counted['cases']} "
             f"case(s), {counted['failed']} failed"]
    lines += [f"  baseline note: {note}" for note in accepted.notes(spec)]
    for each in counted.get("accepted", []):  # --cluster-baseline-accept's, seen or not
        lines += [f"  baseline: {seen['node']}: {replaced(seen)}" for seen in each["seen"]]
        if not each["seen"]:
            lines.append(f"  baseline warning: {each['said']}")
    return lines


def _not_in_contract(run: RunSummary) -> list[str]:
    """What the run did not test: not in the contract (or not at this level), and in a run
    of some nodes the clauses across nodes, on a line of their own."""
    spanning = [entry for entry in run.not_in_contract if entry.why == ACROSS]
    absent = ", ".join(str(entry) for entry in run.not_in_contract if entry.why != ACROSS)
    lines = [f"not in contract, not tested: {absent}"] if absent else []
    if spanning:
        why = spanning[0].detail.removeprefix(f"{ACROSS}: ")
        names = ", ".join(entry.clause for entry in spanning)
        lines.append(f"not tested here, {ACROSS} ({why}): {names}")
    return lines


def _not_decided(verdicts: Sequence[NodeVerdict]) -> str:
    """', 2 of them not decided': the failed checks of a node that judged nothing of it (a
    missing tool, a configuration error, blame.judged), as its verdict counts them ('could
    not be decided'); '' when none."""
    count = sum(len(verdict.undecided) for verdict in verdicts)
    return f", {count} of them not decided" if count else ""


def _covered(covered: list[str], total: int) -> str:
    if not covered:
        return f"none of {total}"
    if len(covered) == total:
        return f"all {total} node(s)"
    names = ", ".join(covered[:5]) + (f" and {len(covered) - 5} more" if len(covered) > 5
                                      else "")
    return f"{names} ({len(covered)} of {total})"


def _marked(mark: str, lines: list[str]) -> list[str]:
    """A block of summary lines whose first says it is simulated (`mark`)."""
    return [mark + lines[0], *lines[1:]] if lines else lines
