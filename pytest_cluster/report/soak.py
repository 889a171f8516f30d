"""The report's account of a soak: the rounds, each node's timeline (healthy, failed,
unreachable) as a chart, the availability table and the SLA credit with its arithmetic.
Renders records only, through templates (soak.html.j2, timeline.svg.j2), which
escape every value."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from pytest_cluster.evidence.verdict.sla import (
    FAILED,
    HEALTHY,
    UNREACHABLE,
    NodeAvailability,
    Settlement,
    Span,
    availability_text,
    hours_text,
)
from pytest_cluster.evidence.verdict.timelines import Round, Timelines, clock, ranges
from pytest_cluster.money import percent
from pytest_cluster.report.templates import render
from pytest_cluster.units import utc

MAX_ROWS = 64  # nodes drawn and tabled: those that were down first; JUnit has every node
COLOURS = {HEALTHY: "#3a9a4a", FAILED: "#d08a1e", UNREACHABLE: "#c0392b"}
WIDTH, ROW, LABEL = 760, 16, 120


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    fill: str
    title: str  # on hover: the node, its state, from when to when


@dataclass(frozen=True)
class TimelineRow:
    label: str
    y: int
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Timeline:
    """The timeline chart, in pixels."""

    width: int
    height: int
    bar_height: int
    rows: tuple[TimelineRow, ...]
    axis_x: int
    axis_y: int
    start: str  # the soak's start (UTC), under the axis' left end
    end: str  # its end and length, under the right end


@dataclass(frozen=True)
class AvailabilityRow:
    node: str
    availability: str
    down: str  # h:mm:ss
    hours_lost: str
    outages: str


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


def timeline(lines: Timelines, shown: Sequence[str]) -> Timeline:
    """A row per node: a bar per spell of one state in its colour, on one time axis."""
    start, end = lines.window
    span = max(end - start, 1e-9)
    scale = (WIDTH - LABEL - 10) / span
    rows = []
    for row, node in enumerate(shown):
        rows.append(TimelineRow(node[:18], row * ROW + 4, tuple(
            Bar(LABEL + (piece.start - start) * scale,
                max((piece.end - piece.start) * scale, 1.0), COLOURS.get(piece.state, "#999"),
                f"{node} {piece.state} {utc(piece.start)} to {utc(piece.end)}")
            for piece in _joined(lines.spans.get(node, [])))))
    return Timeline(WIDTH, ROW * len(shown) + 30, ROW - 4, tuple(rows), LABEL,
                    ROW * len(shown) + 20, utc(start), f"{utc(end)} ({clock(end - start)})")


def timeline_svg(lines: Timelines, shown: Sequence[str]) -> str:
    """The timeline (see `timeline`) as SVG."""
    return render("timeline.svg.j2", timeline=timeline(lines, shown))


def soak_html(rounds: Sequence[Round], lines: Timelines, found: Sequence[NodeAvailability],
              settlement: Settlement | None, uptime: Decimal, stopped: str = "",
              mark: str = "", unobserved: str = "") -> str:
    """The soak's section; `mark` ('[SIMULATED] ') heads it and its credit when the
    cluster is simulated, as the terminal's lines are headed. `unobserved`: why the
    rounds give no availability and no credit (no round judged a node), said instead."""
    if not rounds:
        return render("soak.html.j2", mark=mark, rounds=0)
    shown = _order(found)
    down = [a for a in shown if a.down_s > 0]
    by_status: dict[str, list[int]] = {}
    for each in rounds:
        by_status.setdefault(each.status, []).append(each.number)
    always = len([a for a in found if a.down_s == 0])
    credit = None
    if settlement is not None:
        credit = {"total": settlement.total_line(), "owing": [
            c.arithmetic for c in settlement.credits if c.owed > 0][:MAX_ROWS]}
    return render(
        "soak.html.j2", mark=mark, rounds=len(rounds), stopped=stopped,
        window_start=utc(lines.window[0]), window_end=utc(lines.window[1]),
        observed=clock(lines.observed_s),
        unobserved_time=clock(lines.unobserved_s) if lines.unobserved_s else "",
        uptime=percent(uptime),
        statuses=[f"{status} {ranges(numbers)}" for status, numbers in by_status.items()],
        credit=credit, unobserved=unobserved,
        down=[AvailabilityRow(a.node, availability_text(a.availability, uptime),
                              clock(a.down_s), hours_text(a.down_s), _outages(a.outages))
              for a in down],
        down_count=len(found) - always, always=always, colours=COLOURS,
        timeline=timeline(lines, [a.node for a in shown]))
