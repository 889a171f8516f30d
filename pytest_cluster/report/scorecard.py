"""The HTML report's opening: a contract scorecard.

First the verdict (the cluster, then each node not accepted and why), then a node x clause
matrix coloured by the worst margin against the requirement, then each clause with its
cases passed and failed (cases, as every other view counts), the places that failed, its
worst value and margin, then what was not checked. pytest-html's own tables follow, its
environment tables last.

The passed lists, the report's bulk (a row per passed check), are not in the scorecard's
text: it holds PASSED_LISTS where they go, and `passed_lists` renders them a piece at a
time, for the report's file to take in as it is written.
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from pytest_cluster.evidence.cluster_verdict import INCOMPLETE, cluster_verdict, decisive
from pytest_cluster.evidence.gathered import NEAR, Gathered, Matrix, PassedRow, PassedRows
from pytest_cluster.evidence.tally import (
    SIMULATED_BANNER,
    ClauseTally,
    is_simulated,
    margin_text,
)
from pytest_cluster.evidence.verdict import ACCEPTED, NodeVerdict, by_verdict

if TYPE_CHECKING:
    from pytest_cluster.contract import Spec
    from pytest_cluster.evidence.sinks.results import EndLine

esc = html.escape
#: Where the passed lists go in the scorecard's text (an HTML comment, read by no browser
#: if it stays).
PASSED_LISTS = "<!-- pytest-cluster: passed lists -->"

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


def scorecard_html(spec: Spec, end: EndLine | None, verdicts: Sequence[NodeVerdict],
                   gathered: Gathered, coverage: str) -> str:
    nodes = spec.cluster.nodes
    cluster_failed = gathered.cluster_failed
    tallies = gathered.tallies
    failing = [t for t in tallies if t.failed]
    # the end record's, as verdict.json says it; decided here only before the run's end
    overall = str((end.get("verdict") if end else None) or cluster_verdict(
        end["status"] if end else None, verdicts, len(decisive(cluster_failed, verdicts))))
    counted = by_verdict(verdicts)
    parts = [STYLE, '<div id="scorecard">']
    if is_simulated(spec):
        parts.append(f'<p class="banner simulated">{esc(SIMULATED_BANNER)}</p>')
    if coverage:
        css = "incomplete" if coverage.startswith(INCOMPLETE) else "level"
        parts.append(f'<p class="banner {css}">{esc(coverage)}</p>')
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
    if gathered.findings:
        parts.append('<ul id="findings">' + "".join(
            f"<li>found: {esc(finding)}</li>" for finding in gathered.findings) + "</ul>")
    parts.append(_matrix_table(gathered.matrix))
    parts.append(_clause_table(tallies))
    parts.append(_not_checked(end))
    if gathered.passed.counts:
        parts.append(PASSED_LISTS)
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
    """Each clause: its cases passed and failed (cases, as the terminal, JUnit and
    verdict.json count them; failed with errors), the places that failed (a node, or a
    node's GPU), the worst value and its margin; the cases of every clause last."""
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
            f"<td>{t.passed_cases}</td><td>{t.failed_cases}</td><td>{esc(failed_nodes)}</td>"
            f"<td>{esc(t.worst_text())}</td><td>{esc(shown_margin)}</td></tr>")
    total = (f'<tr class="total"><th>Every clause</th><th></th>'
             f"<th>{sum(t.passed_cases for t in tallies)}</th>"
             f"<th>{sum(t.failed_cases for t in tallies)}</th><th></th><th></th><th></th>"
             "</tr>")
    return ('<h2>Clauses</h2><table id="clauses"><tr><th>Clause</th><th>Required</th>'
            "<th>Cases passed</th><th>Cases failed</th><th>Failed on (node or GPU)</th>"
            "<th>Worst measured</th><th>Margin</th></tr>" + "".join(rows) + total
            + "</table>")


def _not_checked(end: EndLine | None) -> str:
    if end is None or not end["not_checked"]:
        return ""
    items = []
    for row in end["not_checked"]:
        count = f" ({row['cases']} of {row['of']} cases)" if "cases" in row else ""
        items.append(f"<li>{esc(row['clause'])}: {esc(row['why'])}{count}</li>")
    return f"<h2>Not checked</h2><ul>{''.join(items)}</ul>"


def _row(row: PassedRow) -> str:
    return (f"<tr><td>{esc(row.case)}</td><td>{esc(row.measured)}</td>"
            f"<td>{esc(row.requirement)}</td><td>{esc(row.margin)}</td>"
            f"<td>{esc(row.of_reference)}</td></tr>")


def passed_lists(passed: PassedRows, references: dict[str, str] | None = None,
                 ) -> Iterator[str]:
    """Every passed check, collapsed per clause: where, measured, required, margin, and
    the ratio to the clause's published reference (named once, above its rows), rendered
    a piece at a time. (The results table below pytest-html's summary lists the checks
    that did not pass.)"""
    counts = passed.counts
    if not counts:
        return
    yield ("<h2>Passed checks</h2><p>Collapsed, one list per clause; the table below "
           "lists every check that did not pass, with its details.</p>")
    for clause, count in counts.items():
        reference = (references or {}).get(clause)
        named = (f"<p>Reference (informs, never decides): {esc(reference)}</p>"
                 if reference else "")
        yield (f"<details><summary>{esc(clause)}: {count} passed</summary>"
               f"{named}<table><tr><th>Case</th><th>Measured</th><th>Required</th>"
               f"<th>Margin</th><th>Of reference</th></tr>")
        batch: list[str] = []
        for row in passed.rows(clause):
            batch.append(_row(row))
            if len(batch) == 1000:
                yield "".join(batch)
                batch.clear()
        yield "".join(batch) + "</table></details>"
