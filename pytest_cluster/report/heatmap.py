"""The latency heat map: one-way latency between node pairs at the latency size, rows and
columns the nodes, the farthest node named (as the colocation cases judge it). Inline SVG
from the latency cases' records (evidence/latency_map.py); renders records only."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_cluster.evidence.latency_map import MATRIX_UP_TO
from pytest_cluster.units import format_number, format_size

if TYPE_CHECKING:
    from pytest_cluster.evidence.latency_map import LatencyMap


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


def _farthest_text(latency: LatencyMap) -> str:
    """'Farthest node: <b>node04</b>, median 9.055 us to its peers, 2.90 x the median
    between the other nodes 3.124 us.' (HTML)"""
    far = latency.farthest()
    assert far is not None
    text = (f"Farthest node: <b>{html.escape(far.node)}</b>, median "
            f"{format_number(far.median_us)} us to its peers")
    if far.ratio is not None and far.others_median_us is not None:
        text += (f", {far.ratio:.2f} x the median between the other nodes "
                 f"{format_number(far.others_median_us)} us")
    return text + "."


def _heat_svg(title: str, nodes: Sequence[str], rows: Sequence[Sequence[float | None]],
              farthest: str) -> str:
    """Rows and columns the nodes, each cell the pair's one-way latency (us) in colour, a
    colour bar with its unit beside; the farthest node's labels in bold red."""
    esc, count = html.escape, len(nodes)
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

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="{font}" role="img" '
           f'aria-label="{esc(title)}">',
           f'<text x="{width / 2}" y="16" text-anchor="middle" font-size="13">'
           f"{esc(title)}</text>"]
    for index, node in enumerate(nodes):
        mark = ' font-weight="bold" fill="#c00"' if node == farthest else ""
        middle = index * cell + cell / 2
        out.append(f'<text x="{left - 4}" y="{top + middle + font / 3:.1f}" '
                   f'text-anchor="end"{mark}>{esc(node)}</text>')
        x = left + middle + font / 3
        out.append(f'<text x="{x:.1f}" y="{top - 4}" transform="rotate(-90 {x:.1f} '
                   f'{top - 4})"{mark}>{esc(node)}</text>')
    for i, (a, row) in enumerate(zip(nodes, rows, strict=True)):
        for j, (b, value) in enumerate(zip(nodes, row, strict=True)):
            x, y = left + j * cell, top + i * cell
            if i == j or value is None:
                said = f"{a}: itself" if i == j else f"{a} to {b}: not measured"
                fill = "#fff" if i == j else NOT_MEASURED
                out.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                           f'fill="{fill}" stroke="#eee"><title>{esc(said)}</title></rect>')
                continue
            out.append(f'<rect class="pair" x="{x}" y="{y}" width="{cell}" height="{cell}" '
                       f'fill="{heat_color(share(value))}"><title>{esc(a)} to {esc(b)}: '
                       f"{format_number(value)} us</title></rect>")
            if cell >= 40:
                ink = "#000" if share(value) > 0.6 else "#fff"
                out.append(f'<text x="{x + cell / 2}" y="{y + cell / 2 + 3}" '
                           f'text-anchor="middle" font-size="10" fill="{ink}">'
                           f"{format_number(value)}</text>")
    step = grid / HEAT_STEPS
    out.extend(f'<rect x="{bar}" y="{top + k * step:.2f}" width="16" height="{step + 0.5:.2f}" '
               f'fill="{heat_color(1 - (k + 0.5) / HEAT_STEPS)}"/>'
               for k in range(HEAT_STEPS))
    out.append(f'<rect x="{bar}" y="{top}" width="16" height="{grid}" fill="none" '
               'stroke="#333"/>')
    for value, share_up in ((high, 0.0), ((low + high) / 2, 0.5), (low, 1.0)):
        tick = top + grid * share_up + 4
        out.append(f'<text x="{bar + 20}" y="{tick:.1f}">{format_number(value)} us</text>')
    middle = top + grid / 2
    out.append(f'<text x="{width - 8}" y="{middle}" text-anchor="middle" '
               f'transform="rotate(90 {width - 8} {middle})">one-way latency (us)</text>')
    out.append("</svg>")
    return "".join(out)


def latency_heatmap(latency: LatencyMap) -> str:
    """The latency cases' matrix as a heat map, its caption naming the farthest node (the
    highest median to its peers, as colocation judges it); without a matrix in the cases
    (above MATRIX_UP_TO nodes), one line saying so and naming the farthest node; empty
    when no node has a median."""
    far = latency.farthest()
    if far is None or latency.size is None:
        return ""
    size, count = format_size(latency.size), latency.node_count
    rows = latency.one_way
    if rows is None or not any(v is not None for row in rows for v in row):
        why = (f"the cases keep the matrix up to {MATRIX_UP_TO} nodes" if count > MATRIX_UP_TO
               else "the cases keep no matrix")
        where = f"; {html.escape(latency.run_file)} has every pair measured" \
            if latency.run_file else ""
        return (f'<figure id="latency-heatmap"><figcaption>One-way latency at '
                f"{html.escape(size)}, {count} nodes: no heat map ({why}{where}). "
                f"{_farthest_text(latency)}</figcaption></figure>")
    title = f"interconnect latency at {size}: one-way, node to node (us)"
    return (f'<figure id="latency-heatmap">'
            f"{_heat_svg(title, latency.matrix_nodes, rows, far.node)}"
            f"<figcaption>One-way latency between node pairs at {html.escape(size)}, "
            f"{count} nodes: each cell the pair's one-way latency in us (microseconds), the "
            f"colour bar its scale, grey a pair not measured. {_farthest_text(latency)}"
            "</figcaption></figure>")
