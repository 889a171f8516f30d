"""The HTML report's opening: a contract scorecard.

First the verdict (the cluster, then each node not accepted and why), then a node x clause
matrix coloured by the worst margin against the requirement, then each clause with its
worst value and margin, then what was not checked. pytest-html's own tables follow, its
environment tables last.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_cluster.report import (
    SIMULATED_BANNER,
    ClauseTally,
    is_simulated,
    margin,
    margin_text,
    measured_text,
)
from pytest_cluster.results import COMPLETE, outcome
from pytest_cluster.spec import Spec
from pytest_cluster.verdict import (
    ACCEPTED,
    REJECTED,
    UNREACHABLE,
    NodeVerdict,
    decisive,
)
from pytest_cluster.verdict import tally as verdict_tally

esc = html.escape
NEAR = 10.0  # % of the requirement: a margin closer than this is shown as near the line

STYLE = """<style>
body{display:flex;flex-direction:column}
#environment-header,#environment{order:9}
#scorecard table{border-collapse:collapse;margin:4px 0 12px}
#scorecard td,#scorecard th{border:1px solid #bbb;padding:2px 6px;font-size:12px}
#scorecard .banner{font-size:140%;font-weight:bold;padding:4px 8px}
#scorecard .incomplete{background:#f90;color:#000}
.simulated{background:#fc0;font-weight:bold;padding:0 4px}
#scorecard .verdict{font-size:160%;font-weight:bold;padding:6px 8px;color:#fff}
#scorecard .v-ACCEPTED{background:#2a2}#scorecard .v-REJECTED{background:#c22}
#scorecard .v-INCOMPLETE{background:#f90;color:#000}
#scorecard .v-UNREACHABLE{background:#555}#scorecard .v-NOT{background:#999}
#matrix td{text-align:center;min-width:2.2em}
#matrix th.clause{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}
.m-pass{background:#9d9}.m-near{background:#dfb}.m-short{background:#fb8}
.m-fail{background:#e55;color:#fff}.m-error{background:#555;color:#fff}
.m-notrun{background:#eee;color:#888}
#clauses tr.failed td{background:#fdd}
.evidence table{border-collapse:collapse;margin:4px 0 12px}
.evidence td,.evidence th{border:1px solid #bbb;padding:2px 6px;font-size:12px;
vertical-align:top}
.small{font-size:11px}.unreadable{color:#a60;text-decoration:underline dotted}
</style>"""


@dataclass(frozen=True)
class Cell:
    """One node's result for one clause: the worst of its cases (e.g. 8 GPUs)."""

    css: str
    text: str
    title: str


def _rank(css: str) -> int:
    return ["m-notrun", "m-pass", "m-near", "m-short", "m-fail", "m-error"].index(css)


def cell_of(record: dict[str, Any]) -> Cell:
    """How one record shows in the matrix: colour by its margin, text the margin."""
    kind = outcome(record)
    where = str(record.get("node", ""))
    if record.get("gpu") is not None:
        where += f" gpu{record['gpu']}"
    found = margin(record)
    text = "" if found is None else "0" if abs(found) < 0.5 else f"{found:+.0f}"
    if kind == "not_run":
        return Cell("m-notrun", "", f"{where}: not reached")
    if kind == "skipped":
        return Cell("m-notrun", "s", f"{where}: skipped")
    if kind in ("failed", "error"):
        message = str(record.get("message", "")).removeprefix("Failed: ")[:300]
        if record.get("error_kind") or (found is None and record.get("measured") is None):
            return Cell("m-error", "!", f"{where}: {message}")
        css = "m-short" if found is not None and found > -NEAR else "m-fail"
        return Cell(css, text or "x", f"{where}: {message}")
    css = "m-near" if found is not None and found < NEAR else "m-pass"
    detail = margin_text(found, str(record.get("comparison", ">="))) if found is not None \
        else str(record.get("measured", "passed"))
    return Cell(css, text, f"{where}: {detail}")


class Matrix:
    """Clauses (columns, in the order first seen) and the worst cell per (node, clause),
    gathered one result line at a time."""

    def __init__(self, nodes: Sequence[str]) -> None:
        self.nodes = tuple(nodes)
        self._names = set(nodes)
        self._clauses: dict[str, None] = {}
        self.cells: dict[tuple[str, str], Cell] = {}

    @property
    def clauses(self) -> list[str]:
        return list(self._clauses)

    def add(self, record: dict[str, Any]) -> None:
        node = str(record.get("node"))
        if node not in self._names:
            return
        clause = str(record.get("clause") or record.get("spec_key"))
        self._clauses.setdefault(clause, None)
        cell = cell_of(record)
        old = self.cells.get((node, clause))
        if old is None or _rank(cell.css) > _rank(old.css) or (
                _rank(cell.css) == _rank(old.css) and _below(cell, old)):
            self.cells[(node, clause)] = cell


def matrix(nodes: Sequence[str], records: Iterable[dict[str, Any]]) -> Matrix:
    found = Matrix(nodes)
    for record in records:
        found.add(record)
    return found


def _below(cell: Cell, old: Cell) -> bool:
    try:
        return float(cell.text) < float(old.text)
    except ValueError:
        return False


def cluster_verdict(end: dict[str, Any] | None, verdicts: Sequence[NodeVerdict],
                    cluster_failed: int) -> str:
    if any(v.verdict in (REJECTED, UNREACHABLE) for v in verdicts) or cluster_failed:
        return "REJECTED"
    if end is None or end["status"] != COMPLETE or any(v.verdict != ACCEPTED
                                                       for v in verdicts):
        return "INCOMPLETE"
    return "ACCEPTED"


@dataclass(frozen=True)
class Gathered:
    """What the scorecard shows of a run's result lines, gathered as they were written
    (ledger.py): the checks about several nodes that failed, each clause's tally, the
    nodes x clauses matrix and, per clause, the rows of its passed checks."""

    cluster_failed: list[dict[str, str]]
    tallies: list[ClauseTally]
    matrix: Matrix
    passed: dict[str, list[str]]
    references: dict[str, str] = field(default_factory=dict)  # per clause, its first one


def scorecard_html(spec: Spec, end: dict[str, Any] | None, verdicts: Sequence[NodeVerdict],
                   gathered: Gathered, coverage: str) -> str:
    nodes = spec.cluster.nodes
    cluster_failed = gathered.cluster_failed
    tallies = gathered.tallies
    failing = [t for t in tallies if t.failed]
    overall = cluster_verdict(end, verdicts, len(decisive(cluster_failed)))
    counted = verdict_tally(verdicts)
    parts = [STYLE, '<div id="scorecard">']
    if is_simulated(spec):
        parts.append(f'<p class="banner simulated">{esc(SIMULATED_BANNER)}</p>')
    if coverage:
        parts.append(f'<p class="banner incomplete">{esc(coverage)}</p>')
    parts.append(
        f'<p class="verdict v-{overall}">{esc(spec.cluster.name)}: {overall} - '
        + ", ".join(f"{len(v)} {k.lower()}" for k, v in counted.items())
        + f" of {len(nodes)} node(s); {len(failing)} clause(s) failing</p>")
    parts.append(f"<p>Spec {esc(spec.file)} (sha256 {spec.sha256[:12]}), launcher "
                 f"{esc(spec.cluster.launcher)}"
                 + (f", {end['checks_ran']} of {end['checks_planned']} contract checks ran"
                    if end else "") + ".</p>")
    parts.append(_nodes_table(verdicts))
    parts.append(_cluster_table(cluster_failed))
    parts.append(_matrix_table(gathered.matrix))
    parts.append(_clause_table(tallies))
    parts.append(_not_checked(end))
    parts.append(_passed_lists(gathered.passed, gathered.references))
    parts.append("</div>")
    return "".join(parts)


def _nodes_table(verdicts: Sequence[NodeVerdict]) -> str:
    shown = [v for v in verdicts if v.verdict != ACCEPTED]
    accepted = [v.node for v in verdicts if v.verdict == ACCEPTED]
    rows = "".join(
        f'<tr><td>{esc(v.node)}</td><td class="v-{v.verdict.split()[0]}" '
        f'style="color:#fff">{esc(v.verdict)}</td><td>{esc(v.reason)}</td></tr>'
        for v in shown)
    table = (f'<table id="nodes"><tr><th>Node</th><th>Verdict</th><th>Why</th></tr>{rows}'
             "</table>") if shown else ""
    listed = (f"<details><summary>{len(accepted)} node(s) accepted</summary>"
              f"<p>{esc(', '.join(accepted))}</p></details>") if accepted else ""
    return "<h2>Nodes</h2>" + table + listed


def _cluster_table(failed: list[dict[str, str]]) -> str:
    if not failed:
        return ""
    rows = "".join(f"<tr><td>{esc(f['clause'])}</td><td>{esc(f['where'])}</td>"
                   f"<td>{esc(f['message'])}</td></tr>" for f in failed)
    return ("<h2>Cluster checks failing</h2><table><tr><th>Clause</th><th>Where</th>"
            f"<th>Why</th></tr>{rows}</table>")


def _matrix_table(found: Matrix) -> str:
    nodes, clauses, cells = found.nodes, found.clauses, found.cells
    if not clauses:
        return ""
    head = "".join(f'<th class="clause">{esc(c)}</th>' for c in clauses)
    rows = []
    for node in nodes:
        tds = []
        for clause in clauses:
            cell = cells.get((node, clause))
            if cell is None:
                tds.append('<td class="m-notrun" title="not checked"></td>')
            else:
                tds.append(f'<td class="{cell.css}" title="{esc(cell.title)}">'
                           f"{esc(cell.text)}</td>")
        rows.append(f"<tr><th>{esc(node)}</th>{''.join(tds)}</tr>")
    legend = ("<p>Each cell: the worst case of that clause on that node, as its margin in % "
              "of the requirement (hover for the case). "
              '<span class="m-pass">passed</span> <span class="m-near">passed, within '
              f'{NEAR:g} %</span> <span class="m-short">failed, within {NEAR:g} %</span> '
              '<span class="m-fail">failed</span> <span class="m-error">could not '
              'measure</span> <span class="m-notrun">not checked</span></p>')
    return (f'<h2>Nodes x clauses</h2>{legend}<table id="matrix"><tr><th>Node</th>{head}'
            f"</tr>{''.join(rows)}</table>")


def _clause_table(tallies: list[ClauseTally]) -> str:
    rows = []
    for t in sorted(tallies, key=lambda t: (not t.failed, t.key)):
        status = "passed" if not t.failed else "failed"
        sim = ' <span class="simulated">SIMULATED</span>' if t.simulated else ""
        failed_nodes = ", ".join(sorted(t.failed)[:8]) or "-"
        if len(t.failed) > 8:
            failed_nodes += f" and {len(t.failed) - 8} more"
        shown_margin = (margin_text(t.worst_margin, t.comparison)
                        if t.worst_margin is not None and not t.worst_unmeasured else "-")
        rows.append(
            f'<tr class="{status}"><td>{esc(t.key)}{sim}</td><td>{esc(t.required)}</td>'
            f"<td>{len(t.passed)}</td><td>{len(t.failed)}</td><td>{esc(failed_nodes)}</td>"
            f"<td>{esc(t.worst_text())}</td><td>{esc(shown_margin)}</td></tr>")
    return ('<h2>Clauses</h2><table id="clauses"><tr><th>Clause</th><th>Required</th>'
            "<th>Passed</th><th>Failed</th><th>Failed on</th><th>Worst measured</th>"
            "<th>Margin</th></tr>" + "".join(rows) + "</table>")


def _not_checked(end: dict[str, Any] | None) -> str:
    if end is None or not end["not_checked"]:
        return ""
    items = []
    for row in end["not_checked"]:
        count = f" ({row['cases']} of {row['of']} cases)" if "cases" in row else ""
        items.append(f"<li>{esc(row['clause'])}: {esc(row['why'])}{count}</li>")
    return f"<h2>Not checked</h2><ul>{''.join(items)}</ul>"


def _passed_lists(by_clause: dict[str, list[str]],
                  references: dict[str, str] | None = None) -> str:
    """Every passed check, collapsed per clause: where, measured, required, margin, and
    the ratio to the clause's published reference (named once, above its rows). (The
    results table below pytest-html's summary lists the checks that did not pass.)"""
    if not by_clause:
        return ""
    blocks = []
    for clause, passed in by_clause.items():
        rows = "".join(passed)
        reference = (references or {}).get(clause)
        named = (f"<p>Reference (informs, never decides): {esc(reference)}</p>"
                 if reference else "")
        blocks.append(f"<details><summary>{esc(clause)}: {len(passed)} passed</summary>"
                      f"{named}<table><tr><th>Case</th><th>Measured</th><th>Required</th>"
                      f"<th>Margin</th><th>Of reference</th></tr>{rows}</table></details>")
    return ("<h2>Passed checks</h2><p>Collapsed, one list per clause; the table below "
            "lists every check that did not pass, with its details.</p>" + "".join(blocks))


def passed_row(record: dict[str, Any]) -> str:
    """A passed check's row in its clause's list."""
    found = margin(record)
    shown = margin_text(found, str(record.get("comparison", ">="))) if found is not None \
        else ""
    case = str(record.get("case") or record.get("nodeid", "")).split("::")[-1]
    return (f"<tr><td>{esc(case)}</td><td>{esc(measured_text(record))}</td>"
            f"<td>{esc(str(record.get('requirement', '')))}</td><td>{esc(shown)}</td>"
            f"<td>{_ratio(record)}</td></tr>")


def _ratio(record: dict[str, Any]) -> str:
    ratio = record.get("reference_ratio")
    return f"{ratio * 100:.0f} %" if isinstance(ratio, (int, float)) else ""


def reference_named(record: dict[str, Any]) -> str:
    """A clause's reference as its list names it once: the figure and what it is, without
    this case's ratio ('794.5 TFLOPS measured by mamf-finder on H100 SXM')."""
    text = str(record.get("reference") or "")
    return "; ".join(part.split(" of the ", 1)[-1] for part in text.split("; ")) if text \
        else ""
