"""The HTML report's opening: a contract scorecard.

First the verdict (the cluster, then each node not accepted and why), then a node x clause
matrix coloured by the worst margin against the requirement, then each clause with its
cases passed and failed (cases, as every other view counts), the places that failed, its
worst value and margin, then what was not checked. pytest-html's own tables follow, its
environment tables last.

The passed lists, the report's bulk (a row per passed check), are not in the scorecard's
text: it holds PASSED_LISTS where they go, and `passed_lists` renders them a piece at a
time, for the report's file to take in as it is written. Both are rendered from
templates (scorecard.html.j2, passed_lists.html.j2) given records.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_cluster.evidence.record.gathered import NEAR, Cell, Gathered, Matrix, PassedRows
from pytest_cluster.evidence.record.summary import (
    SIMULATED_BANNER,
    ClauseTally,
    is_simulated,
    margin_text,
)
from pytest_cluster.evidence.verdict.cluster_verdict import INCOMPLETE, cluster_verdict, decisive
from pytest_cluster.evidence.verdict.nodes import ACCEPTED, NodeVerdict, by_verdict
from pytest_cluster.report.failures import node_rows, what_failed
from pytest_cluster.report.templates import macros, render

if TYPE_CHECKING:
    from pytest_cluster.contract import Spec
    from pytest_cluster.evidence.sinks.results import EndLine, ResultLine

#: Where the passed lists go in the scorecard's text (an HTML comment, read by no browser
#: if it stays); scorecard.html.j2 writes it.
PASSED_LISTS = "<!-- pytest-cluster: passed lists -->"
FAILED_SHOWN = 8  # the places a clause failed on, named; then a count
BATCH = 1000  # passed rows rendered at once


@dataclass(frozen=True)
class MatrixRow:
    node: str
    cells: tuple[Cell | None, ...]  # one per clause; None: not checked


@dataclass(frozen=True)
class MatrixView:
    clauses: tuple[str, ...]
    rows: tuple[MatrixRow, ...]


@dataclass(frozen=True)
class ClauseRow:
    """A clause as its row shows it."""

    key: str
    required: str
    passed_cases: int
    failed_cases: int
    #: the places that failed (a node, or a node's GPU), then those not decided, or "-"
    failed_on: str
    worst: str
    margin: str
    failed: bool
    simulated: bool
    source: str = ""  # where the bound came from: its profile's citation; '' the spec


def scorecard_html(spec: Spec, end: EndLine | None, verdicts: Sequence[NodeVerdict],
                   gathered: Gathered, coverage: str,
                   not_passed: Sequence[ResultLine] = ()) -> str:
    """The scorecard; `not_passed`: the run's lines that did not pass, in the run's order
    (the ledger's), whose figures the nodes' first failures show."""
    cluster_failed = gathered.cluster_failed
    tallies = gathered.tallies
    # the end record's, as verdict.json says it; decided here only before the run's end
    overall = str((end.get("verdict") if end else None) or cluster_verdict(
        end["status"] if end else None, verdicts, len(decisive(cluster_failed, verdicts))))
    return render(
        "scorecard.html.j2",
        simulated=is_simulated(spec), simulated_banner=SIMULATED_BANNER,
        coverage=coverage, coverage_incomplete=coverage.startswith(INCOMPLETE),
        overall=overall, cluster=spec.cluster.name, node_count=len(spec.cluster.nodes),
        counted=[f"{len(v)} {k.lower()}" for k, v in by_verdict(verdicts).items()],
        failing=len([t for t in tallies if t.failed]),
        spec_file=spec.file, spec_sha256=spec.sha256[:12], launcher=spec.cluster.launcher,
        extends=spec.extends,
        checks={"ran": end["checks_ran"], "planned": end["checks_planned"]} if end else None,
        what_failed=what_failed(verdicts, not_passed),
        not_accepted=node_rows(verdicts, not_passed),
        accepted=[v.node for v in verdicts if v.verdict == ACCEPTED],
        cluster_failed=cluster_failed, findings=gathered.findings,
        matrix=matrix_view(gathered.matrix), near=NEAR,
        clauses=clause_rows(tallies),
        not_checked=end["not_checked"] if end is not None else [],
        passed_lists=bool(gathered.passed.counts),
        level=level_text(end))


def level_text(end: EndLine | None) -> str:
    """Which level ran, for the scorecard's last line: 'level sanity (-m sanity), covering
    sanity'; '' before the run's end."""
    if end is None:
        return ""
    chosen = end["selection"].get("-m")
    text = f"level {end['level']}" + (f" (-m {chosen})" if chosen else " (no -m)")
    if end.get("levels"):
        text += f", covering {', '.join(end['levels'])}"
    return text


def matrix_view(found: Matrix) -> MatrixView:
    """Each node's row: its worst cell per clause (None: not checked)."""
    clauses = tuple(found.clauses)
    return MatrixView(clauses, tuple(
        MatrixRow(node, tuple(found.cells.get((node, clause)) for clause in clauses))
        for node in found.nodes))


def clause_rows(tallies: Sequence[ClauseTally]) -> list[ClauseRow]:
    """Each clause: its cases passed and failed (cases, as the terminal, JUnit and
    verdict.json count them; failed with errors), the places that failed (a node, or a
    node's GPU), the worst value and its margin; the failing clauses first."""
    rows = []
    for t in sorted(tallies, key=lambda t: (not (t.failed or t.undecided), t.key)):
        failed_on = "; ".join(text for text in (
            _places(t.failed), _places(t.undecided) and f"not decided: "
            f"{_places(t.undecided)}") if text) or "-"
        shown_margin = (margin_text(t.worst_margin, t.comparison)
                        if t.worst_margin is not None and not t.worst_unmeasured else "-")
        rows.append(ClauseRow(t.key, t.required, t.passed_cases, t.failed_cases, failed_on,
                              t.worst_text(), shown_margin, bool(t.failed or t.undecided),
                              t.simulated, t.source))
    return rows


def _places(places: set[str]) -> str:
    """'gpu-001, gpu-002' (the first FAILED_SHOWN, then a count); '' for none."""
    shown = ", ".join(sorted(places)[:FAILED_SHOWN])
    return shown + (f" and {len(places) - FAILED_SHOWN} more" if len(places) > FAILED_SHOWN
                    else "")


def clause_table(tallies: Sequence[ClauseTally]) -> str:
    """The clauses' table alone (clauses.html.j2), as the scorecard has it."""
    return render("clauses.html.j2", clauses=clause_rows(tallies))


def passed_lists(passed: PassedRows, references: dict[str, str] | None = None,
                 ) -> Iterator[str]:
    """Every passed check, collapsed per clause: where, measured, required, margin, and
    the ratio to the clause's published reference (named once, above its rows), rendered
    a piece at a time (passed_lists.html.j2), BATCH rows at most a piece. (The
    results table below pytest-html's summary lists the checks that did not pass.)"""
    counts = passed.counts
    if not counts:
        return
    parts = macros("passed_lists.html.j2")
    yield str(parts.heading())
    for clause, count in counts.items():
        yield str(parts.opening(clause, count, (references or {}).get(clause, "")))
        batch = []
        for row in passed.rows(clause):
            batch.append(row)
            if len(batch) == BATCH:
                yield str(parts.rows(batch))
                batch.clear()
        yield str(parts.rows(batch)) + str(parts.closing())
