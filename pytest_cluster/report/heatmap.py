"""The latency heat map: one-way latency between node pairs at the latency size, rows and
columns the nodes, the farthest node named (as the colocation cases judge it). Inline SVG
from the latency cases' records (evidence/record/latency_map.py); renders records only, through
heatmap.html.j2."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_cluster.evidence.record.latency_map import MATRIX_UP_TO
from pytest_cluster.report.templates import render
from pytest_cluster.units import format_number, format_size

if TYPE_CHECKING:
    from pytest_cluster.evidence.record.latency_map import LatencyMap


#: The heat map's colours, low to high (viridis): a near pair dark, a far one bright.
HEAT = ("#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962",
        "#addc30", "#fde725")
NOT_MEASURED = "#d9d9d9"
HEAT_GRID_PX = 480  # the heat map's grid at most, in pixels (cells 12 to 48 px)
HEAT_STEPS = 32  # the colour bar's steps


def heat_color(share: float) -> str:
    """The colour of `share` on HEAT (0: the lowest value, 1: the highest)."""
    at = min(max(share, 0.0), 1.0) * (len(HEAT) - 1)
    low = min(int(at), len(HEAT) - 2)
    part = at - low
    a, b = HEAT[low], HEAT[low + 1]
    mixed = (round(int(a[i:i + 2], 16) * (1 - part) + int(b[i:i + 2], 16) * part)
             for i in (1, 3, 5))
    return "#" + "".join(f"{c:02x}" for c in mixed)


@dataclass(frozen=True)
class Label:
    """A node's name beside its row, or (`column`) above its column, turned."""

    x: float
    y: float
    text: str
    far: bool  # the farthest node's: bold red
    column: bool


@dataclass(frozen=True)
class HeatCell:
    x: int
    y: int
    fill: str
    title: str  # on hover: the pair and its latency, itself, or not measured
    value: str | None = None  # the latency (us) of a measured pair
    ink: str = ""  # the colour its value is written in on the cell; "": not written


@dataclass(frozen=True)
class BarStep:
    y: float
    height: float
    fill: str


@dataclass(frozen=True)
class BarTick:
    y: float
    text: str


@dataclass(frozen=True)
class HeatDrawing:
    """The heat map in pixels, as heatmap.html.j2 draws it."""

    title: str
    width: int
    height: int
    font: int
    cell: int
    top: int
    grid: int  # the grid's side
    bar: int  # the colour bar's x
    middle: float  # the colour bar's title's y
    labels: tuple[Label, ...]
    cells: tuple[HeatCell, ...]
    bar_steps: tuple[BarStep, ...]
    ticks: tuple[BarTick, ...]


@dataclass(frozen=True)
class FarthestShown:
    node: str
    median: str  # us
    ratio: str = ""  # its median over the others', or "" when there are no others
    others_median: str = ""


@dataclass(frozen=True)
class HeatMap:
    size: str
    count: int
    farthest: FarthestShown
    drawing: HeatDrawing | None  # None: no matrix in the cases (why says why)
    why: str = ""
    run_file: str = ""


def _farthest(latency: LatencyMap) -> FarthestShown:
    """'Farthest node: node04, median 9.055 us to its peers, 2.90 x the median between the
    other nodes 3.124 us.'"""
    far = latency.farthest()
    assert far is not None
    if far.ratio is not None and far.others_median_us is not None:
        return FarthestShown(far.node, format_number(far.median_us), f"{far.ratio:.2f}",
                             format_number(far.others_median_us))
    return FarthestShown(far.node, format_number(far.median_us))


def heat_drawing(title: str, nodes: Sequence[str], rows: Sequence[Sequence[float | None]],
                 farthest: str) -> HeatDrawing:
    """Rows and columns the nodes, each cell the pair's one-way latency (us) in colour, a
    colour bar with its unit beside; the farthest node's labels in bold red."""
    count = len(nodes)
    cell = max(12, min(48, HEAT_GRID_PX // count))
    font = 11 if cell >= 14 else 9
    label = math.ceil(max(len(n) for n in nodes) * font * 0.62) + 8
    left, top = 10 + label, 30 + label
    grid = cell * count
    bar = left + grid + 20
    width, height = bar + 16 + 70 + 20, top + grid + 16
    values = [v for row in rows for v in row if v is not None]
    low, high = min(values), max(values)

    def share(value: float) -> float:
        return (value - low) / (high - low) if high > low else 0.5

    labels: list[Label] = []
    for index, node in enumerate(nodes):
        middle = index * cell + cell / 2
        labels.append(Label(left - 4, top + middle + font / 3, node, node == farthest, False))
        labels.append(Label(left + middle + font / 3, top - 4, node, node == farthest, True))
    cells: list[HeatCell] = []
    for i, (a, row) in enumerate(zip(nodes, rows, strict=True)):
        for j, (b, value) in enumerate(zip(nodes, row, strict=True)):
            x, y = left + j * cell, top + i * cell
            if i == j or value is None:
                cells.append(HeatCell(x, y, "#fff" if i == j else NOT_MEASURED,
                                      f"{a}: itself" if i == j else f"{a} to {b}: not measured"))
                continue
            ink = ("#000" if share(value) > 0.6 else "#fff") if cell >= 40 else ""
            cells.append(HeatCell(x, y, heat_color(share(value)),
                                  f"{a} to {b}: {format_number(value)} us",
                                  format_number(value), ink))
    step = grid / HEAT_STEPS
    return HeatDrawing(
        title, width, height, font, cell, top, grid, bar, top + grid / 2, tuple(labels),
        tuple(cells),
        tuple(BarStep(top + k * step, step + 0.5, heat_color(1 - (k + 0.5) / HEAT_STEPS))
              for k in range(HEAT_STEPS)),
        tuple(BarTick(top + grid * share_up + 4, f"{format_number(value)} us")
              for value, share_up in ((high, 0.0), ((low + high) / 2, 0.5), (low, 1.0))))


def heat_map(latency: LatencyMap) -> HeatMap | None:
    """The latency cases' matrix as a heat map, its caption naming the farthest node (the
    highest median to its peers, as colocation judges it); without a matrix in the cases
    (above MATRIX_UP_TO nodes), one line saying so and naming the farthest node; None
    when no node has a median."""
    far = latency.farthest()
    if far is None or latency.size is None:
        return None
    size, count = format_size(latency.size), latency.node_count
    rows = latency.one_way
    if rows is None or not any(v is not None for row in rows for v in row):
        why = (f"the cases keep the matrix up to {MATRIX_UP_TO} nodes" if count > MATRIX_UP_TO
               else "the cases keep no matrix")
        return HeatMap(size, count, _farthest(latency), None, why, latency.run_file or "")
    title = f"interconnect latency at {size}: one-way, node to node (us)"
    return HeatMap(size, count, _farthest(latency),
                   heat_drawing(title, latency.matrix_nodes, rows, far.node))


def latency_heatmap(latency: LatencyMap) -> str:
    """The heat map (see `heat_map`) as HTML; empty when no node has a median."""
    found = heat_map(latency)
    return render("heatmap.html.j2", heatmap=found) if found is not None else ""
