"""Inline SVG line charts for the HTML report (no plotting library on the controller):
busbw vs payload and busbw vs node count, with the required value drawn as a line."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_cluster.units import format_number, format_size

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf")
MAX_SERIES = 10


@dataclass(frozen=True)
class Series:
    label: str
    points: tuple[tuple[float, float], ...]  # (x, y); x > 0 (log2 axis)


@dataclass(frozen=True)
class Line:
    label: str
    y: float


def chart(title: str, series: Sequence[Series], lines: Sequence[Line], x_label: str,
          y_label: str, x_text: Callable[[float], str]) -> str:
    """An SVG chart with a log2 x axis (payloads, node counts) and a linear y axis from 0;
    `lines` are horizontal dashed lines (the required busbw)."""
    width, height, left, right, top, bottom = 720, 340, 64, 190, 30, 46
    shown = [s for s in series if s.points][:MAX_SERIES]
    xs = sorted({x for s in shown for x, _ in s.points})
    if not xs:
        return ""
    step = nice_step(max([y for s in shown for _, y in s.points] + [line.y for line in lines]))
    top_y = step * 5
    low, high = math.log2(xs[0]), math.log2(xs[-1])
    span = high - low or 1.0

    def px(x: float) -> float:
        return left + (math.log2(x) - low) / span * (width - left - right)

    def py(y: float) -> float:
        return height - bottom - y / top_y * (height - top - bottom)

    esc = html.escape
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11" role="img" aria-label="{esc(title)}">',
           f'<text x="{width / 2}" y="16" text-anchor="middle" font-size="13">{esc(title)}'
           "</text>",
           f'<line x1="{left}" y1="{py(0)}" x2="{width - right}" y2="{py(0)}" stroke="#333"/>',
           f'<line x1="{left}" y1="{py(0)}" x2="{left}" y2="{top}" stroke="#333"/>']
    for x in xs:
        out.append(f'<text x="{px(x):.1f}" y="{py(0) + 14:.1f}" text-anchor="middle">'
                   f"{esc(x_text(x))}</text>")
    for step in range(6):
        y = top_y * step / 5
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">'
                   f"{esc(format_number(y))}</text>")
        out.append(f'<line x1="{left}" y1="{py(y):.1f}" x2="{width - right}" y2="{py(y):.1f}" '
                   'stroke="#ddd"/>')
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - 8}" '
               f'text-anchor="middle">{esc(x_label)}</text>')
    out.append(f'<text x="14" y="{(top + height - bottom) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(top + height - bottom) / 2})">{esc(y_label)}</text>')
    for index, line in enumerate(lines):
        legend_y = top + 14 * (index + 1)
        out.append(f'<line x1="{left}" y1="{py(line.y):.1f}" x2="{width - right}" '
                   f'y2="{py(line.y):.1f}" stroke="#c00" stroke-dasharray="6,4"/>')
        out.append(f'<line x1="{width - right + 4}" y1="{legend_y - 3}" '
                   f'x2="{width - right + 14}" y2="{legend_y - 3}" stroke="#c00" '
                   f'stroke-dasharray="3,2"/><text x="{width - right + 18}" y="{legend_y + 1}" '
                   f'fill="#c00">{esc(line.label)}</text>')
    for index, item in enumerate(shown):
        color = COLORS[index % len(COLORS)]
        points = sorted(item.points)
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" '
                   'stroke-width="2"/>')
        out.extend(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}">'
                   f"<title>{esc(item.label)}: {esc(x_text(x))} {esc(format_number(y))}"
                   "</title></circle>" for x, y in points)
        legend_y = top + 14 * (index + len(lines) + 1)
        out.append(f'<rect x="{width - right + 4}" y="{legend_y - 8}" width="10" height="10" '
                   f'fill="{color}"/><text x="{width - right + 18}" y="{legend_y + 1}">'
                   f"{esc(item.label)}</text>")
    out.append("</svg>")
    return "".join(out)


def nice_step(highest: float) -> float:
    """A round tick step (1, 2, 2.5 or 5 x 10^k) so that 5 steps cover `highest`."""
    if highest <= 0 or not math.isfinite(highest):
        return 0.2
    raw = highest * 1.05 / 5
    power = 10.0 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw))


def _payload_runs(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs drawn over payloads: every multi-node run; the single-node runs all when
    few, else the slowest and the fastest node (by their busbw at the largest payload)."""
    single = [r for r in records if r.get("node_count") == 1]
    multi = [r for r in records if r.get("node_count") != 1]
    if len(single) + len({str(r.get("node")) for r in multi}) > MAX_SERIES:
        ranked = sorted(single, key=lambda r: float(r["raw"]["sweep"][-1][1]))
        single = ranked[:1] + ranked[-1:] if ranked else []
    return single + multi


def _required_lines(records: Sequence[dict[str, Any]]) -> list[Line]:
    """One dashed line per distinct required busbw of `records` (GB/s)."""
    lines: dict[str, float] = {}
    for r in records:
        if isinstance(r.get("required_base"), (int, float)):
            value = float(r["required_base"]) / 1e9
            one = " (1 node)" if r.get("node_count") == 1 else ""
            lines[f"required {format_number(value)} GB/s{one}"] = value
    return [Line(label, value) for label, value in lines.items()]


def interconnect_charts(records: Sequence[dict[str, Any]]) -> str:
    """busbw vs payload (each benchmark run) and vs node count (each collective and contract
    payload) from the interconnect tests' records; empty if there are none."""
    runs = [r for r in records if isinstance(r.get("raw"), dict) and r["raw"].get("sweep")
            and str(r.get("spec_key", "")).startswith("interconnect.busbw")]
    if not runs:
        return ""
    parts = []
    for collective in sorted({str(r.get("collective")) for r in runs}):
        mine = [r for r in runs if r.get("collective") == collective]
        seen: dict[str, Series] = {}
        for r in _payload_runs(mine):
            label = str(r.get("node"))
            if r.get("node_count") == 1 and len(mine) > MAX_SERIES:
                label += " (slowest node)" if not seen else " (fastest node)"
            seen.setdefault(label, Series(label, tuple(
                (float(b), float(v) / 1e9) for b, v in r["raw"]["sweep"])))
        parts.append(chart(f"{collective}: busbw vs payload", list(seen.values()),
                           _required_lines(mine), "payload", "busbw (GB/s)", format_size))
        by_payload: dict[int, dict[float, float]] = {}
        for r in mine:
            if not isinstance(r.get("measured_base"), (int, float)):
                continue
            counts = by_payload.setdefault(int(r["payload"]), {})
            x, y = float(r["node_count"]), float(r["measured_base"]) / 1e9
            counts[x] = min(counts.get(x, math.inf), y)  # several nodes at 1: the slowest
        series = [Series(format_size(p), tuple(sorted(c.items())))
                  for p, c in sorted(by_payload.items()) if len(c) > 1]
        if series:
            inter = [r for r in mine if r.get("node_count", 1) != 1]
            parts.append(chart(f"{collective}: busbw vs node count (1 node: the slowest)",
                               series, _required_lines(inter), "nodes", "busbw (GB/s)",
                               format_number))
    theory = {("in one node" if r.get("node_count") == 1 else "across nodes"):
              str(r["derivation"]) for r in runs if r.get("derivation")}
    said = "".join(f"<li>Theoretical busbw {html.escape(where)}: {html.escape(text)}</li>"
                   for where, text in sorted(theory.items(), reverse=True))
    return ('<div id="interconnect-charts"><h3>Interconnect</h3>'
            + (f"<ul>{said}</ul>" if said else "") + "".join(parts) + "</div>")
