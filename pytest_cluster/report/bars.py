"""Per-node bar charts for the HTML report (inline SVG): for each filesystem, each of its
clauses that measures a number (write, read, metadata, import latency, the checkpoint's
and the data loader's rates), and the peers' latency (interconnect.latency, beside the
heat map): a bar per node, its measured figure, the requirement drawn as a labelled
dashed line across them, the unit on the axis; a failed node's bar red. A chart shows
MAX_BARS nodes at most: past that, the worst ones (the furthest below a minimum, or
above a maximum), and says of how many. Laid out here in pixels (records only),
drawn by bars.svg.j2, which escapes every text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_cluster.evidence.record.figures import LATENCY
from pytest_cluster.report.plots import nice_step
from pytest_cluster.report.templates import render
from pytest_cluster.units import format_number

if TYPE_CHECKING:
    from pytest_cluster.evidence.record.figures import Bar, ClauseFigures, NodeFigures

MAX_BARS = 40  # bars a chart, the worst first past that
ROW = 16  # a bar's row, px
WIDTH = 820
TOP, BOTTOM, RIGHT = 30, 40, 230
PASSED_COLOR, FAILED_COLOR, REQUIRED_COLOR = "#4a9a4a", "#cc2222", "#c00"


@dataclass(frozen=True)
class BarRow:
    label: str  # the node
    y: float
    width: float
    passed: bool
    color: str
    value: str  # '1.25 GB/s'
    title: str  # on hover: the node, its figure, passed or failed


@dataclass(frozen=True)
class Tick:
    x: float
    text: str


@dataclass(frozen=True)
class BarChart:
    """A chart in pixels, as bars.svg.j2 draws it."""

    title: str
    width: int
    height: int
    left: int  # the bars' x (after the node labels)
    top: int
    plot_width: float
    bottom: float  # the x axis' y
    axis_label: str  # 'write (GB/s)'
    ticks: tuple[Tick, ...]
    rows: tuple[BarRow, ...]
    required_x: float
    required_label: str  # 'required >= 2 GB/s'
    note: str  # 'the 40 worst of 1,000 nodes', or ''


def _worst_first(figures: ClauseFigures) -> list[Bar]:
    """The bars, the failed first, then the furthest from the requirement's good side."""
    upper = figures.comparison in ("<=", "<")
    return sorted(figures.bars.values(),
                  key=lambda b: (b.passed, -b.measured if upper else b.measured, b.node))


def bar_chart(figures: ClauseFigures) -> BarChart | None:
    """A clause's chart; None without a bar."""
    bars = list(figures.bars.values())
    if not bars:
        return None
    note = ""
    if len(bars) > MAX_BARS:
        bars = _worst_first(figures)[:MAX_BARS]
        note = f"the {MAX_BARS} worst of {len(figures.bars):,} nodes"
    unit = figures.unit
    top_value = nice_step(max([b.measured for b in bars] + [figures.required])) * 5
    label_px = max(48, max(len(b.node) for b in bars) * 7 + 10)
    left = label_px
    plot_width = WIDTH - left - RIGHT
    height = TOP + len(bars) * ROW + BOTTOM
    bottom = TOP + len(bars) * ROW

    def x(value: float) -> float:
        return left + value / top_value * plot_width

    rows = tuple(BarRow(
        b.node, TOP + index * ROW, x(b.measured) - left, b.passed,
        PASSED_COLOR if b.passed else FAILED_COLOR, f"{format_number(b.measured)} {unit}",
        f"{b.node}: {format_number(b.measured)} {unit}, "
        f"{'passed' if b.passed else 'failed'} ({figures.requirement})")
        for index, b in enumerate(bars))
    metric = figures.clause.split("].", 1)[-1] if figures.filesystem else "median latency"
    whose = ("every node at once" if set(figures.bars) == {"all"} else
             f"each node's {metric}" + (" to its peers" if figures.clause == LATENCY else ""))
    return BarChart(
        f"{figures.clause}: {whose} ({unit})" + (f", {note}" if note else ""),
        WIDTH, height, left, TOP, plot_width, bottom, f"{metric} ({unit})",
        tuple(Tick(x(top_value * k / 5), format_number(top_value * k / 5)) for k in range(6)),
        rows, x(figures.required), f"required {figures.requirement}", note)


@dataclass(frozen=True)
class FilesystemCharts:
    path: str
    charts: tuple[BarChart, ...]


def figure_charts(figures: NodeFigures) -> tuple[list[FilesystemCharts], BarChart | None]:
    """The storage charts per filesystem (in the order first seen) and the latency chart."""
    by_path: dict[str, list[BarChart]] = {}
    for clause in figures.clauses.values():
        if not clause.filesystem:
            continue
        chart = bar_chart(clause)
        if chart is not None:
            by_path.setdefault(clause.filesystem, []).append(chart)
    latency = figures.clauses.get(LATENCY)
    return ([FilesystemCharts(path, tuple(charts)) for path, charts in by_path.items()],
            bar_chart(latency) if latency is not None else None)


def figures_html(figures: NodeFigures) -> str:
    """The storage and latency charts (node_figures.html.j2, a bars.svg.j2 each); empty
    without any."""
    storage, latency = figure_charts(figures)
    if not storage and latency is None:
        return ""
    return render("node_figures.html.j2", storage=storage, latency=latency)

