"""report/heatmap.py: the latency heat map of node pairs."""

from __future__ import annotations

import statistics
from typing import Any
from xml.etree import ElementTree

from pytest_cluster.evidence.latency_map import LatencyMap
from pytest_cluster.hostlist import compress_hostlist
from pytest_cluster.report.heatmap import NOT_MEASURED, heat_color, latency_heatmap

SVG = "{http://www.w3.org/2000/svg}"


def latency_records(count: int, far: str, factor: float = 3.0, size: int = 8,
                    matrix: bool = True, missing: tuple[int, int] | None = None
                    ) -> list[dict[str, Any]]:
    """The latency and colocation cases of a `count`-node run (nodes n01...) where `far`
    is `factor` x farther from every peer, as acceptance/test_interconnect.py writes them
    (the matrix in every case's raw when `matrix`; the pair `missing` not measured)."""
    nodes = [f"n{i:02d}" for i in range(1, count + 1)]
    one_way: list[list[float | None]] = [
        [None if i == j else round(3.0 * (factor if far in (a, b) else 1.0) + 0.01 * (i + j), 3)
         for j, b in enumerate(nodes)] for i, a in enumerate(nodes)]
    if missing is not None:
        one_way[missing[0]][missing[1]] = one_way[missing[1]][missing[0]] = None
    medians = {a: statistics.median(v for v in row if v is not None)
               for a, row in zip(nodes, one_way, strict=True)}
    middle = statistics.median(medians.values())
    records = []
    for node in nodes:
        for clause in ("interconnect.latency", "interconnect.colocation"):
            raw: dict[str, Any] = {
                "run": {"id": "interconnect-1", "file": "probes/interconnect-1.json",
                        "nodes": compress_hostlist(nodes)},
                "size": size, "median_us": medians[node], "others_median_us": middle,
                "ratio": round(medians[node] / middle, 3)}
            if matrix:
                raw["matrix_us"] = {"nodes": nodes, "size": size, "one_way": one_way}
            records.append({"spec_key": clause, "clause": clause, "node": node,
                            "outcome": "failed" if node == far else "passed", "raw": raw})
    return records


def gathered(records: list[dict[str, Any]]) -> LatencyMap:
    found = LatencyMap()
    for record in records:
        found.add(record)
    return found


def heatmap(records: list[dict[str, Any]]) -> ElementTree.Element:
    return ElementTree.fromstring(latency_heatmap(gathered(records)))


def caption_of(figure: ElementTree.Element) -> str:
    caption = figure.find("figcaption")
    assert caption is not None
    return ElementTree.tostring(caption, encoding="unicode")


def luminance(color: str) -> float:
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_a_far_node_is_a_bright_row_and_column_named_in_the_caption() -> None:
    figure = heatmap(latency_records(8, far="n05"))
    (svg,) = figure.iter(f"{SVG}svg")
    assert svg.get("aria-label") == "interconnect latency at 8 B: one-way, node to node (us)"
    pairs = {str(r.findtext(f"{SVG}title")): str(r.get("fill")) for r in svg.iter(f"{SVG}rect")
             if r.get("class") == "pair"}
    assert len(pairs) == 8 * 7
    near = [luminance(c) for t, c in pairs.items() if "n05" not in t]
    far = [luminance(c) for t, c in pairs.items() if "n05" in t]
    assert len(far) == 14 and min(far) > max(near)  # its row and its column, brighter
    assert "n05 to n01: 9.04 us" in pairs  # 3 x 3 us, + 0.01 x (4 + 0)
    bold = {t.text for t in svg.iter(f"{SVG}text") if t.get("font-weight") == "bold"}
    assert bold == {"n05"}  # its row's and its column's label
    texts = [str(t.text) for t in svg.iter(f"{SVG}text")]
    assert "one-way latency (us)" in texts  # the colour bar's unit
    assert {"3.01 us", "9.11 us"} <= set(texts)  # its lowest and highest
    caption = caption_of(figure)
    assert "between node pairs at 8 B, 8 nodes" in caption
    assert "Farthest node: <b>n05</b>, median 9.07 us to its peers, 2.94 x" in caption


def test_the_colour_bar_runs_from_dark_to_bright() -> None:
    assert luminance(heat_color(0.0)) < luminance(heat_color(0.5)) < luminance(heat_color(1.0))
    assert heat_color(-1) == heat_color(0.0) and heat_color(2) == heat_color(1.0)


def test_a_pair_not_measured_is_grey_and_the_size_is_the_cases() -> None:
    figure = heatmap(latency_records(4, far="n02", size=65536, missing=(0, 2)))
    (svg,) = figure.iter(f"{SVG}svg")
    grey = [r.findtext(f"{SVG}title") for r in svg.iter(f"{SVG}rect")
            if r.get("fill") == NOT_MEASURED]
    assert grey == ["n01 to n03: not measured", "n03 to n01: not measured"]
    assert "64 KiB" in str(svg.get("aria-label"))


def test_above_32_nodes_one_line_says_so_and_names_the_farthest_node() -> None:
    figure = heatmap(latency_records(40, far="n33", matrix=False))
    assert not list(figure.iter(f"{SVG}svg"))
    caption = caption_of(figure)
    assert "One-way latency at 8 B, 40 nodes: no heat map (the cases keep the matrix up to " \
           "32 nodes; probes/interconnect-1.json has every pair measured)" in caption
    assert "Farthest node: <b>n33</b>" in caption
