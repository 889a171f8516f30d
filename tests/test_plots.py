"""The interconnect charts (inline SVG): failed node counts marked, required lines apart."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree

from pytest_cluster.report.plots import free_rows, interconnect_charts, spread_out

SVG = "{http://www.w3.org/2000/svg}"
GIB = 2**30


def run(count: int, measured: float | None, required: float, payload: int = GIB,
        scope: str = "") -> dict[str, Any]:
    """A benchmark run's record as the interconnect tests write it (busbw in bytes/s);
    measured None: the job failed, so no number and an empty sweep."""
    scope = scope or ("intra_node" if count == 1 else "inter_node")
    record: dict[str, Any] = {
        "spec_key": f"interconnect.busbw[{scope}]", "collective": "all_reduce",
        "payload": payload, "node_count": count, "node": f"{count} nodes",
        "requirement": f">= {required / 1e9:g} GB/s", "required_base": required,
        "outcome": "passed", "raw": {"sweep": [[payload, measured]] if measured else []}}
    if measured is None:
        del record["required_base"]  # as evidence writes a failed job: no numbers
        record.update(outcome="failed", message="Failed: 8 nodes busbw[inter_node]: "
                                                "node7: host probe unreachable")
    else:
        record["measured_base"] = measured
    return record


def charts(records: list[dict[str, Any]]) -> dict[str, ElementTree.Element]:
    """The SVG charts by title."""
    root = ElementTree.fromstring(interconnect_charts(records))
    return {str(svg.get("aria-label")): svg for svg in root.iter(f"{SVG}svg")}


def count_chart(records: list[dict[str, Any]]) -> ElementTree.Element:
    return charts(records)["all_reduce: busbw vs node count (1 node: the slowest)"]


def x_ticks(svg: ElementTree.Element) -> dict[str, float]:
    """The x axis' tick labels and where they are (px): the texts just under the axis."""
    axis = next(svg.iter(f"{SVG}line"))  # the x axis is drawn first
    tick_y = float(axis.get("y1", 0)) + 14
    return {str(t.text): float(t.get("x", 0)) for t in svg.iter(f"{SVG}text")
            if abs(float(t.get("y", 0)) - tick_y) < 0.1}


def test_a_node_count_whose_job_failed_is_on_the_x_axis_with_a_cross() -> None:
    svg = count_chart([run(1, 400e9, 360e9), run(2, 350e9, 320e9), run(4, 330e9, 320e9),
                       run(8, None, 320e9)])
    ticks = x_ticks(svg)
    assert list(ticks) == ["1", "2", "4", "8"]  # the axis reaches the failed count
    failed = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "failed"]
    assert len(failed) == 1
    assert failed[0].findtext(f"{SVG}title") == (
        "8 nodes failed at 1 GiB: 8 nodes busbw[inter_node]: node7: host probe unreachable")
    label = failed[0].find(f"{SVG}text")
    assert label is not None and label.text == "failed"
    assert float(label.get("x", 0)) == ticks["8"]  # above the 8 of the x axis
    cross = failed[0].find(f"{SVG}path")
    assert cross is not None and cross.get("stroke") == "#d00"
    legend = [t.text for t in svg.iter(f"{SVG}text")]
    assert "job failed: no busbw" in legend
    polyline = next(svg.iter(f"{SVG}polyline"))  # the measured line stops at 4 nodes
    assert polyline.get("points", "").count(",") == 3


def test_a_failed_job_is_charted_even_beside_a_single_measured_count() -> None:
    svg = count_chart([run(1, 400e9, 360e9), run(2, None, 320e9)])
    assert list(x_ticks(svg)) == ["1", "2"]
    assert [g.get("class") for g in svg.iter(f"{SVG}g")].count("failed") == 1


def test_nothing_failed_no_cross() -> None:
    svg = count_chart([run(1, 400e9, 360e9), run(2, 350e9, 320e9)])
    assert "failed" not in [g.get("class") for g in svg.iter(f"{SVG}g")]
    assert "job failed: no busbw" not in [t.text for t in svg.iter(f"{SVG}text")]


def required_lines(svg: ElementTree.Element) -> list[tuple[str, str, str, float, float]]:
    """(label, colour, dashes, the line's y, the label's y) of each required line."""
    found = []
    for group in svg.iter(f"{SVG}g"):
        if group.get("class") != "required":
            continue
        line, label = group.find(f"{SVG}line"), group.find(f"{SVG}text")
        assert line is not None and label is not None
        assert float(label.get("x", 0)) > float(line.get("x2", 0))  # at the line's end
        found.append((str(label.text), str(line.get("stroke")),
                      str(line.get("stroke-dasharray")), float(line.get("y1", 0)),
                      float(label.get("y", 0))))
    return found


def test_each_required_line_has_its_own_style_and_a_label_naming_it() -> None:
    records = [run(1, 400e9, 360e9), run(2, 350e9, 320e9), run(4, 330e9, 320e9),
               run(8, None, 320e9)]
    for svg in charts(records).values():
        lines = required_lines(svg)
        assert [label for label, *_ in lines] == ["required 360 GB/s (1 node)",
                                                  "required 320 GB/s (2-8 nodes)"]
        assert len({(color, dashes) for _, color, dashes, _, _ in lines}) == 2
        assert all(abs(label_y - (y + 4)) < 1 for *_, y, label_y in lines)  # beside it
        tooltips = [g.findtext(f"{SVG}title") for g in svg.iter(f"{SVG}g")
                    if g.get("class") == "required"]
        assert tooltips == ["interconnect.busbw[intra_node]: >= 360 GB/s",
                            "interconnect.busbw[inter_node]: >= 320 GB/s"]


def test_requirements_per_payload_name_their_payload() -> None:
    records = [run(count, 300e9, 200e9 if payload == GIB else 280e9, payload, "inter_node")
               for count in (2, 4) for payload in (GIB, 16 * GIB)]
    lines = required_lines(count_chart(records))
    assert sorted(label for label, *_ in lines) == ["required 200 GB/s (2-4 nodes, 1 GiB)",
                                                    "required 280 GB/s (2-4 nodes, 16 GiB)"]


def test_close_required_lines_keep_their_labels_apart() -> None:
    lines = required_lines(count_chart([run(1, 400e9, 321e9), run(2, 350e9, 320e9)]))
    assert len(lines) == 2
    assert abs(lines[0][4] - lines[1][4]) >= 14


def test_the_slow_node_search_is_not_a_benchmark_run() -> None:
    search = {"spec_key": "interconnect.busbw[node_network]", "collective": "all_reduce",
              "payload": GIB, "node_count": 2, "node": "node7", "measured_base": 100e9,
              "required_base": 320e9, "outcome": "failed", "raw": {"search": {}}}
    svg = count_chart([run(1, 400e9, 360e9), run(2, 350e9, 320e9), search])
    assert "1 GiB: 2 350" in ElementTree.tostring(svg, encoding="unicode")
    assert "failed" not in [g.get("class") for g in svg.iter(f"{SVG}g")]


def test_label_rows() -> None:
    assert spread_out([10.0, 15.0, 40.0], 14) == [10.0, 24.0, 40.0]
    assert free_rows(3, 44, taken=[60.0]) == [44, 74, 88]
