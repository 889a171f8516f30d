"""Inline SVG charts for the HTML report (no plotting library on the controller): busbw vs
payload and busbw vs node count, each required busbw drawn as a labelled line and each node
count whose job failed marked with a cross on the x axis; and the latency heat map, one-way
latency between node pairs (a far node a bright row and column), its caption naming the
farthest node. Each chart is laid out here in pixels (a Drawing, records only) and drawn by
chart.svg.j2, which escapes every text."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_cluster.evidence.record.gathered import is_benchmark
from pytest_cluster.report.heatmap import heat_map
from pytest_cluster.report.templates import render
from pytest_cluster.units import format_number, format_size

if TYPE_CHECKING:
    from pytest_cluster.evidence.record.latency_map import LatencyMap
    from pytest_cluster.evidence.sinks.results import ResultLine

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf")
#: (colour, stroke-dasharray) of the required lines, one each, in order.
LINE_STYLES = (("#c00", "6,4"), ("#6a3d9a", "2,3"), ("#b15928", "10,3,2,3"), ("#000", "12,6"))
FAILED_COLOR = "#d00"
MAX_SERIES = 10
GB = 1e9  # the charts' busbw axis is in GB/s; records are in bytes/s
ROW_PX = 14  # the height of a text row: legend entries, the required lines' labels


@dataclass(frozen=True)
class PlotSeries:
    label: str
    points: tuple[tuple[float, float], ...]  # (x, y); x > 0 (log2 axis)


@dataclass(frozen=True)
class Line:
    """A required value, drawn across the chart and labelled at its right end."""

    label: str
    y: float
    note: str = ""  # the tooltip: which clause it comes from


@dataclass(frozen=True)
class Failure:
    """An x (a node count) whose job failed or measured nothing: a cross on the x axis."""

    x: float
    note: str  # the tooltip: what failed


@dataclass(frozen=True)
class Frame:
    """Where a chart's values land, in pixels: a log2 x axis and a linear y axis from 0."""

    low: float  # log2 of the smallest x
    span: float  # log2 of the largest x less low
    top_y: float  # the value at the top of the y axis
    width: int = 720
    height: int = 340
    left: int = 64
    right: int = 190
    top: int = 30
    bottom: int = 46

    def px(self, x: float) -> float:
        return self.left + (math.log2(x) - self.low) / self.span * (
            self.width - self.left - self.right)

    def py(self, y: float) -> float:
        return self.height - self.bottom - y / self.top_y * (
            self.height - self.top - self.bottom)

    @property
    def x_end(self) -> int:
        return self.width - self.right


@dataclass(frozen=True)
class Tick:
    at: float  # px along its axis
    text: str


@dataclass(frozen=True)
class Cross:
    x: float
    y: float
    size: float


@dataclass(frozen=True)
class RequiredDrawing:
    label: str
    note: str
    y: float
    label_y: float  # the label's row, moved apart from the others'
    color: str
    dashes: str


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    title: str

    @property
    def xy(self) -> str:
        return f"{self.x:.1f},{self.y:.1f}"


@dataclass(frozen=True)
class SeriesDrawing:
    color: str
    points: tuple[Point, ...]


@dataclass(frozen=True)
class FailureDrawing:
    note: str
    x: float
    cross: Cross


@dataclass(frozen=True)
class LegendEntry:
    y: float
    color: str
    label: str


@dataclass(frozen=True)
class FailedLegend:
    y: float
    cross: Cross


@dataclass(frozen=True)
class Drawing:
    """A chart in pixels, as chart.svg.j2 draws it."""

    title: str
    width: int
    height: int
    left: int
    top: int
    x_end: int
    zero: float  # the x axis' y
    middle: float  # the y axis title's y
    x_label: str
    y_label: str
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    required: tuple[RequiredDrawing, ...]
    series: tuple[SeriesDrawing, ...]
    failures: tuple[FailureDrawing, ...]
    legend: tuple[LegendEntry, ...]
    failed_legend: FailedLegend | None
    failed_color: str = FAILED_COLOR


def drawing(title: str, series: Sequence[PlotSeries], lines: Sequence[Line], x_label: str,
            y_label: str, x_text: Callable[[float], str],
            failures: Sequence[Failure] = ()) -> Drawing | None:
    """A chart with a log2 x axis (payloads, node counts) and a linear y axis from 0;
    `lines` are horizontal dashed lines (the required busbw), `failures` crosses on the x
    axis. None if there is nothing to draw."""
    shown = [s for s in series if s.points][:MAX_SERIES]
    xs = sorted({x for s in shown for x, _ in s.points} | {f.x for f in failures})
    if not xs:
        return None
    highest = max([y for s in shown for _, y in s.points] + [line.y for line in lines],
                  default=0.0)
    low = math.log2(xs[0])
    frame = Frame(low, math.log2(xs[-1]) - low or 1.0, nice_step(highest) * 5)
    styled = sorted(zip(lines, itertools.cycle(LINE_STYLES)), key=lambda item: -item[0].y)
    label_rows = spread_out([frame.py(line.y) + 4 for line, _ in styled], ROW_PX)
    zero = frame.py(0)
    legend_rows = free_rows(len(shown) + bool(failures), frame.top + ROW_PX, label_rows)
    return Drawing(
        title, frame.width, frame.height, frame.left, frame.top, frame.x_end, zero,
        (frame.top + frame.height - frame.bottom) / 2, x_label, y_label,
        tuple(Tick(frame.px(x), x_text(x)) for x in xs),
        tuple(Tick(frame.py(frame.top_y * step / 5), format_number(frame.top_y * step / 5))
              for step in range(6)),
        tuple(RequiredDrawing(line.label, line.note or line.label, frame.py(line.y), row,
                              color, dashes)
              for (line, (color, dashes)), row in zip(styled, label_rows, strict=True)),
        tuple(SeriesDrawing(COLORS[index % len(COLORS)], tuple(
            Point(frame.px(x), frame.py(y), f"{item.label}: {x_text(x)} {format_number(y)}")
            for x, y in sorted(item.points))) for index, item in enumerate(shown)),
        tuple(FailureDrawing(failure.note, frame.px(failure.x),
                             Cross(frame.px(failure.x), zero - 7, 6)) for failure in failures),
        tuple(LegendEntry(row, COLORS[index % len(COLORS)], item.label)
              for index, (item, row) in enumerate(zip(shown, legend_rows, strict=False))),
        FailedLegend(legend_rows[-1], Cross(frame.x_end + 9, legend_rows[-1] - 4, 4))
        if failures else None)


def chart(title: str, series: Sequence[PlotSeries], lines: Sequence[Line], x_label: str,
          y_label: str, x_text: Callable[[float], str],
          failures: Sequence[Failure] = ()) -> str:
    """The chart (see `drawing`) as SVG; empty if there is nothing to draw."""
    found = drawing(title, series, lines, x_label, y_label, x_text, failures)
    return render("chart.svg.j2", chart=found) if found is not None else ""


def spread_out(positions: Sequence[float], gap: float) -> list[float]:
    """`positions` (ascending) moved down as little as needed to be `gap` apart."""
    placed: list[float] = []
    for position in positions:
        placed.append(max(position, placed[-1] + gap) if placed else position)
    return placed


def free_rows(count: int, first: float, taken: Sequence[float]) -> list[float]:
    """`count` text rows (baselines) from `first` down, ROW_PX apart, none nearer than
    ROW_PX to a row `taken` already."""
    rows: list[float] = []
    row = first
    while len(rows) < count:
        clash = [other for other in taken if abs(row - other) < ROW_PX]
        if clash:
            row = max(clash) + ROW_PX
            continue
        rows.append(row)
        row += ROW_PX
    return rows


def nice_step(highest: float) -> float:
    """A round tick step (1, 2, 2.5 or 5 x 10^k) so that 5 steps cover `highest`."""
    if highest <= 0 or not math.isfinite(highest):
        return 0.2
    raw = highest * 1.05 / 5
    power = 10.0 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw))


def _judged(record: ResultLine) -> float:
    """The busbw the contract judged in the record (bytes/s): its measured_base, else (no
    number) its sweep's value at the largest payload."""
    if _is_number(record.get("measured_base")):
        return float(record["measured_base"])
    return float(record["raw"]["sweep"][-1][1])


def _by_run(runs: Sequence[ResultLine]) -> dict[str, list[ResultLine]]:
    """The records by the run (node, or multi-node job) that measured them: a run's cases
    (one per payload) share one sweep, so one line each."""
    grouped: dict[str, list[ResultLine]] = {}
    for r in runs:
        grouped.setdefault(str(r.get("node")), []).append(r)
    return grouped


def slowest_and_fastest(runs: Sequence[ResultLine]) -> tuple[str, str] | None:
    """The single nodes with the lowest and the highest worst judged busbw (each node's
    lowest over its cases, as the results table and the verdict judge it); None with fewer
    than two single nodes. A node whose figure was refused as a claim (`bad_output`: above
    the physical ceiling) is neither: its figure is no measurement to rank."""
    worst = {node: min(_judged(r) for r in mine)
             for node, mine in _by_run(runs).items() if mine[0].get("node_count") == 1
             and not any(r.get("error_kind") == "bad_output" for r in mine)}
    if len(worst) < 2:
        return None
    ranked = sorted(worst, key=lambda node: (worst[node], node))
    return ranked[0], ranked[-1]


def _payload_series(runs: Sequence[ResultLine]) -> list[PlotSeries]:
    """One line per run: every multi-node run; the single nodes all when they fit, else the
    slowest and the fastest node (slowest_and_fastest), labelled so; a multi-node run is
    never labelled slowest or fastest."""
    grouped = _by_run(runs)
    extremes = slowest_and_fastest(runs) if len(grouped) > MAX_SERIES else None
    series = []
    for node, mine in grouped.items():
        single = mine[0].get("node_count") == 1
        label = node
        if single and extremes is not None:
            if node not in extremes:
                continue
            label += " (slowest node)" if node == extremes[0] else " (fastest node)"
        series.append(PlotSeries(label, tuple(
            (float(b), float(v) / GB) for b, v in mine[0]["raw"]["sweep"])))
    if extremes is not None:  # the slowest first, then the fastest, then the multi-node runs
        series.sort(key=lambda s: (not s.label.endswith("(slowest node)"),
                                   not s.label.endswith("(fastest node)")))
    return series


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _payloads(records: Sequence[ResultLine]) -> list[float]:
    """The records' payloads (bytes), smallest first."""
    return sorted({float(r["payload"]) for r in records if _is_number(r.get("payload"))})


def _payloads_text(records: Sequence[ResultLine]) -> str:
    return ", ".join(format_size(p) for p in _payloads(records))


def nodes_text(counts: Sequence[int]) -> str:
    """Node counts for a label: '1 node', '4 nodes', '2-64 nodes'."""
    low, high = min(counts), max(counts)
    if low == high:
        return f"{low} node" + ("" if low == 1 else "s")
    return f"{low}-{high} nodes"


def _required_lines(records: Sequence[ResultLine]) -> list[Line]:
    """One line per distinct required busbw of `records` (GB/s), labelled with the node
    counts it applies to (failed jobs, which have no number, by their requirement's text),
    and with its payloads when it is not every payload's."""
    groups: dict[float, list[ResultLine]] = {}
    for r in records:
        if _is_number(r.get("required_base")):
            groups.setdefault(float(r["required_base"]) / GB, []).append(r)
    every_payload = _payloads(records)
    lines = []
    for value, numbered in groups.items():
        texts = {r.get("requirement") for r in numbered} - {None, ""}
        mine = numbered + [r for r in records if not _is_number(r.get("required_base"))
                           and r.get("requirement") in texts]
        where = nodes_text([int(r.get("node_count", 1)) for r in mine])
        if _payloads(mine) != every_payload:
            where += ", " + _payloads_text(mine)
        clauses = sorted({f"{r.get('spec_key')}: {r.get('requirement', '')}" for r in mine})
        lines.append(Line(f"required {format_number(value)} GB/s ({where})", value,
                          "; ".join(clauses)))
    return lines


def _failures(records: Sequence[ResultLine]) -> list[Failure]:
    """One cross per node count with a failed job (or one that measured nothing): its
    payloads and the first reason in the tooltip."""
    by_count: dict[int, list[ResultLine]] = {}
    for r in records:
        if r.get("outcome") in ("failed", "error") and not _is_number(r.get("measured_base")):
            by_count.setdefault(int(r.get("node_count", 1)), []).append(r)
    failures = []
    for count, mine in sorted(by_count.items()):
        nodes = sorted({str(r.get("node")) for r in mine}) if count == 1 else []
        reason = str(mine[0].get("message", "")).removeprefix("Failed: ")[:300]
        failures.append(Failure(float(count), f"{nodes_text([count])}"
                                + (f" ({', '.join(nodes)})" if nodes else "")
                                + f" failed at {_payloads_text(mine)}: {reason}"))
    return failures


def _has_sweep(record: ResultLine) -> bool:
    """Whether the record's benchmark run measured payloads (a failed job did not)."""
    return bool(record["raw"]["sweep"])


def _payload_chart(collective: str, mine: Sequence[ResultLine]) -> Drawing | None:
    """busbw over payloads: one line per benchmark run (see _payload_series)."""
    runs = [r for r in mine if _has_sweep(r)]
    return drawing(f"{collective}: busbw vs payload", _payload_series(runs),
                 _required_lines(mine), "payload", "busbw (GB/s)", format_size)


def _slowest_single(mine: Sequence[ResultLine]) -> dict[int, tuple[float, str]]:
    """Per payload, the single node with the lowest judged busbw: (busbw in GB/s, node)."""
    slowest: dict[int, tuple[float, str]] = {}
    for r in mine:
        if r.get("node_count") == 1 and _is_number(r.get("measured_base")):
            here = (float(r["measured_base"]) / GB, str(r.get("node")))
            slowest[int(r["payload"])] = min(slowest.get(int(r["payload"]), here), here)
    return slowest


def _one_node_text(slowest: dict[int, tuple[float, str]]) -> str:
    """What the 1-node points are, for the title: the slowest node, named when it is the
    same one at every payload."""
    nodes = sorted({node for _, node in slowest.values()})
    if len(nodes) == 1:
        return f"1 node: the slowest, {nodes[0]}"
    return "1 node: the slowest at each payload"


def _count_chart(collective: str, mine: Sequence[ResultLine]) -> Drawing | None:
    """busbw over node counts, one line per payload (at 1 node the slowest node at that
    payload, named in the title), a cross at each node count whose job failed; empty unless
    there are two node counts (None)."""
    slowest = _slowest_single(mine)
    by_payload: dict[int, dict[float, float]] = {
        payload: {1.0: busbw} for payload, (busbw, _) in slowest.items()}
    for r in mine:
        if r.get("node_count") != 1 and _is_number(r.get("measured_base")):
            counts = by_payload.setdefault(int(r["payload"]), {})
            x, y = float(r["node_count"]), float(r["measured_base"]) / GB
            counts[x] = min(counts.get(x, math.inf), y)
    failures = _failures(mine)
    if len({x for c in by_payload.values() for x in c} | {f.x for f in failures}) < 2:
        return None
    series = [PlotSeries(format_size(p), tuple(sorted(c.items())))
              for p, c in sorted(by_payload.items())]
    title = f"{collective}: busbw vs node count"
    if slowest:
        title += f" ({_one_node_text(slowest)})"
    return drawing(title, series, _required_lines(mine), "nodes", "busbw (GB/s)",
                   format_number, failures)


def interconnect_charts(records: Sequence[ResultLine],
                        latency: LatencyMap | None = None) -> str:
    """busbw vs payload (each benchmark run) and vs node count (each collective and contract
    payload) from the interconnect tests' records, and the latency heat map (heat_map),
    rendered by interconnect.html.j2; empty if there is neither."""
    mine = [r for r in records if is_benchmark(r)]
    runs = [r for r in mine if _has_sweep(r)]
    heatmap = heat_map(latency) if latency is not None else None
    if not runs and heatmap is None:
        return ""
    drawn: list[Drawing | None] = []
    for collective in sorted({str(r.get("collective")) for r in mine}):
        of_collective = [r for r in mine if r.get("collective") == collective]
        drawn.append(_payload_chart(collective, of_collective))
        drawn.append(_count_chart(collective, of_collective))
    theory = {("in one node" if r.get("node_count") == 1 else "across nodes"):
              str(r["derivation"]) for r in runs if r.get("derivation")}
    return render("interconnect.html.j2", theory=sorted(theory.items(), reverse=True),
                  charts=[found for found in drawn if found is not None], heatmap=heatmap)
