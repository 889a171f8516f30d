"""The report's account of a soak: the rounds, each node's timeline (healthy, failed,
unreachable) as a chart, the availability table and the SLA credit with its arithmetic.
Renders records only; every value is escaped."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from html import escape as esc

from pytest_cluster.evidence.sla import (
    FAILED,
    HEALTHY,
    UNREACHABLE,
    NodeAvailability,
    Settlement,
    Span,
    availability_text,
    hours_text,
)
from pytest_cluster.evidence.timelines import Round, Timelines, clock, ranges
from pytest_cluster.money import percent
from pytest_cluster.units import utc

MAX_ROWS = 64  # nodes drawn and tabled: those that were down first; JUnit has every node
COLOURS = {HEALTHY: "#3a9a4a", FAILED: "#d08a1e", UNREACHABLE: "#c0392b"}
WIDTH, ROW, LABEL = 760, 16, 120


def _order(found: Sequence[NodeAvailability]) -> list[NodeAvailability]:
    return sorted(found, key=lambda a: (a.availability, a.node))[:MAX_ROWS]


def _outages(outages: Sequence[tuple[float, float]], most: int = 5) -> str:
    shown = ", ".join(f"{utc(a)} to {utc(b)}" for a, b in outages[:most])
    return shown + (f" and {len(outages) - most} more" if len(outages) > most else "")


def _joined(spans: Sequence[Span]) -> list[Span]:
    """Consecutive spans of one state drawn as one bar (a 48-hour soak's healthy node is
    one bar, not one per round)."""
    found: list[Span] = []
    for piece in spans:
        if found and found[-1].state == piece.state and piece.start <= found[-1].end:
            found[-1] = Span(found[-1].start, max(found[-1].end, piece.end), piece.state)
        else:
            found.append(piece)
    return found


def timeline_svg(lines: Timelines, shown: Sequence[str]) -> str:
    """A row per node: a bar per round in the colour of its state, on one time axis."""
    start, end = lines.window
    span = max(end - start, 1e-9)
    scale = (WIDTH - LABEL - 10) / span
    height = ROW * len(shown) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" '
             f'height="{height}" role="img" aria-label="each node\'s state over the soak">']
    for row, node in enumerate(shown):
        y = row * ROW + 4
        parts.append(f'<text x="0" y="{y + 11}" font-size="11">{esc(node[:18])}</text>')
        for piece in _joined(lines.spans.get(node, [])):
            x = LABEL + (piece.start - start) * scale
            w = max((piece.end - piece.start) * scale, 1.0)
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{ROW - 4}" '
                         f'fill="{COLOURS.get(piece.state, "#999")}"><title>'
                         f'{esc(node)} {esc(piece.state)} {utc(piece.start)} to '
                         f'{utc(piece.end)}</title></rect>')
    axis = ROW * len(shown) + 20
    parts.append(f'<text x="{LABEL}" y="{axis}" font-size="11">{utc(start)}</text>')
    parts.append(f'<text x="{WIDTH - 10}" y="{axis}" font-size="11" text-anchor="end">'
                 f'{utc(end)} ({clock(end - start)})</text>')
    parts.append("</svg>")
    return "".join(parts)


def soak_html(rounds: Sequence[Round], lines: Timelines, found: Sequence[NodeAvailability],
              settlement: Settlement | None, uptime: Decimal, stopped: str = "",
              mark: str = "", unobserved: str = "") -> str:
    """The soak's section; `mark` ('[SIMULATED] ') heads it and its credit when the
    cluster is simulated, as the terminal's lines are headed. `unobserved`: why the
    rounds give no availability and no credit (no round judged a node), said instead."""
    if not rounds:
        return f"<h2>{esc(mark)}Soak</h2><p>No round finished.</p>"
    shown = _order(found)
    legend = " ".join(f'<span style="color:{c}">&#9632; {esc(s)}</span>'
                      for s, c in COLOURS.items())
    down = [a for a in shown if a.down_s > 0]
    rows = "".join(
        f"<tr><td>{esc(a.node)}</td><td>{availability_text(a.availability, uptime)}</td>"
        f"<td>{clock(a.down_s)}</td><td>{hours_text(a.down_s)}</td>"
        f"<td>{esc(_outages(a.outages))}</td></tr>"
        for a in down)
    always = len([a for a in found if a.down_s == 0])
    more = (f"<p>{len(found) - always} node(s) down at some time"
            + (f" ({len(found) - always - len(down)} more than shown)"
               if len(found) - always > len(down) else "")
            + f"; {always} node(s) up all through (100 %); every node is in JUnit and "
            "results.jsonl</p>")
    credit = f"<p><b>{esc(mark + unobserved)}</b></p>" if unobserved else ""
    if settlement is not None:
        owing = [c for c in settlement.credits if c.owed > 0]
        listed = "".join(f"<li>{esc(c.arithmetic)}</li>" for c in owing[:MAX_ROWS])
        credit = (f"<h3>{esc(mark)}SLA credit</h3>"
                  f"<p><b>{esc(mark + settlement.total_line())}</b></p>"
                  f"<ul>{listed}</ul>")
    by_status: dict[str, list[int]] = {}
    for each in rounds:
        by_status.setdefault(each.status, []).append(each.number)
    statuses = "; ".join(f"{esc(status)} {ranges(numbers)}"
                         for status, numbers in by_status.items())
    stop = f'<p class="banner incomplete">{esc(stopped)}</p>' if stopped else ""
    return (f"<h2>{esc(mark)}Soak</h2>{stop}<p>{len(rounds)} round(s) from "
            f"{utc(lines.window[0])} to "
            f"{utc(lines.window[1])}: {clock(lines.observed_s)} observed"
            + (f", {clock(lines.unobserved_s)} not observed (the soak was stopped)"
               if lines.unobserved_s else "")
            + f"; promised availability {percent(uptime)} per node. Rounds: {statuses}.</p>"
            f"{credit}"
            "<table id=\"availability\"><tr><th>Node</th><th>Availability</th>"
            "<th>Down (h:mm:ss)</th><th>Node-hours lost</th><th>Outages (UTC)</th></tr>"
            f"{rows}</table>{more}"
            f"<p>{legend}</p>{timeline_svg(lines, [a.node for a in shown])}")
