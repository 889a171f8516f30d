"""The interconnect charts (inline SVG): failed node counts marked, required lines apart;
the latency heat map beside them (the map itself: tests/report/test_heatmap.py)."""

from __future__ import annotations

import json
from typing import Any, cast
from xml.etree import ElementTree

import pytest

from pytest_cluster.evidence.sinks.results import ResultLine
from pytest_cluster.report.heatmap import latency_heatmap
from pytest_cluster.report.plots import (
    free_rows,
    interconnect_charts,
    slowest_and_fastest,
    spread_out,
)
from tests.report.test_heatmap import SVG, gathered, latency_records

GIB = 2**30


def run(count: int, measured: float | None, required: float, payload: int = GIB,
        scope: str = "") -> ResultLine:
    """A benchmark run's record as the interconnect tests write it (busbw in bytes/s);
    measured None: the job failed, so no number and an empty sweep."""
    scope = scope or ("intra_node" if count == 1 else "inter_node")
    record: ResultLine = {
        "spec_key": f"interconnect.busbw[{scope}]", "collective": "all_reduce",
        "payload": payload, "node_count": count, "node": f"{count} nodes",
        "requirement": f">= {required / 1e9:g} GB/s", "required_base": required,
        "outcome": "passed", "raw": {"sweep": [[payload, measured]] if measured else []}}
    if measured is None:
        del record["required_base"]  # as evidence writes a failed job: no numbers
        record.update({"outcome": "failed", "message": "Failed: 8 nodes busbw[inter_node]: "
                                                   "node7: host probe unreachable"})
    else:
        record["measured_base"] = measured
    return record


def charts(records: list[ResultLine]) -> dict[str, ElementTree.Element]:
    """The SVG charts by title."""
    root = ElementTree.fromstring(interconnect_charts(records))
    return {str(svg.get("aria-label")): svg for svg in root.iter(f"{SVG}svg")}


def count_chart(records: list[ResultLine]) -> ElementTree.Element:
    (svg,) = [svg for title, svg in charts(records).items()
              if title.startswith("all_reduce: busbw vs node count")]
    return svg


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
    search: ResultLine = {
        "spec_key": "interconnect.busbw[node_network]", "collective": "all_reduce",
        "payload": GIB, "node_count": 2, "node": "node7", "measured_base": 100e9,
        "required_base": 320e9, "outcome": "failed", "raw": {"search": {}}}
    svg = count_chart([run(1, 400e9, 360e9), run(2, 350e9, 320e9), search])
    assert "1 GiB: 2 350" in ElementTree.tostring(svg, encoding="unicode")
    assert "failed" not in [g.get("class") for g in svg.iter(f"{SVG}g")]


def test_label_rows() -> None:
    assert spread_out([10.0, 15.0, 40.0], 14) == [10.0, 24.0, 40.0]
    assert free_rows(3, 44, taken=[60.0]) == [44, 74, 88]


# -- the charts of a whole simulated run: the legend names the node the verdict rejects ----

SLOW_GPU = """\
cluster: {{name: slowgpu, nodes: "n[01-{last}]", launcher: sim}}
interconnect:
  intra_node: {{kind: nvlink, rate: 450 GB/s}}
  inter_node: {{kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}}
  payloads: [4 GiB, 16 GiB]
  node_counts: [2]
  node_network: false
  busbw: ">= 80%"
  ranks_per_node: 8
  backend: nccl
sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 8
  faults: [{{node: n03, gpu: 5, bandwidth_factor: 0.8}}]
"""


def simulated_run(pytester: pytest.Pytester, nodes: int) -> tuple[list[dict[str, Any]], str]:
    """The intra-node busbw records of a simulated run (n03's GPU 5 slow) and its report."""
    (pytester.path / "t.yaml").write_text(SLOW_GPU.format(last=f"{nodes:02d}"))
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
    latest = pytester.path / "reports" / "latest"
    records = [json.loads(line) for line in
               (latest / "results.jsonl").read_text().splitlines()]
    intra = [r for r in records if r.get("type") == "result"
             and r.get("clause") == "interconnect.busbw[intra_node]"
             and r.get("collective") == "all_reduce"]
    return intra, (latest / "report.html").read_text()


def legend(svg: ElementTree.Element) -> list[str]:
    """The series' names beside their colour swatches."""
    texts = list(svg.iter())
    return [str(texts[i + 1].text) for i, e in enumerate(texts[:-1])
            if e.tag == f"{SVG}rect" and texts[i + 1].tag == f"{SVG}text"]


def report_charts(html: str) -> dict[str, ElementTree.Element]:
    start, end = html.index('<div id="interconnect-charts">'), html.index("</svg></div>")
    root = ElementTree.fromstring(html[start:end + len("</svg></div>")])
    return {str(svg.get("aria-label")): svg for svg in root.iter(f"{SVG}svg")}


def worst_per_node(records: list[dict[str, Any]]) -> dict[str, float]:
    worst: dict[str, float] = {}
    for r in records:
        worst[r["node"]] = min(worst.get(r["node"], r["measured_base"]), r["measured_base"])
    return worst


def test_the_slowest_node_in_the_legend_is_the_one_the_contract_failed(
        pytester: pytest.Pytester) -> None:
    """12 nodes and a 2-node run: too many lines, so the slowest and the fastest node are
    drawn, each once, the slowest being the node whose busbw failed (its worst case's)."""
    records, html = simulated_run(pytester, 12)
    worst = worst_per_node(records)
    slowest, fastest = min(worst, key=worst.__getitem__), max(worst, key=worst.__getitem__)
    assert {r["node"] for r in records if r["outcome"] == "failed"} == {slowest}
    charts = report_charts(html)
    names = legend(charts["all_reduce: busbw vs payload"])
    assert names == [f"{slowest} (slowest node)", f"{fastest} (fastest node)",
                     "2 nodes (n01..n02)"]
    assert f"all_reduce: busbw vs node count (1 node: the slowest, {slowest})" in charts


def test_when_every_node_fits_each_is_one_line_and_none_is_called_slowest(
        pytester: pytest.Pytester) -> None:
    records, html = simulated_run(pytester, 4)
    names = legend(report_charts(html)["all_reduce: busbw vs payload"])
    assert names == [*sorted({r["node"] for r in records}), "2 nodes (n01..n02)"]


# -- the latency heat map ----------------------------------------------------------------


def test_of_equal_medians_the_first_node_by_name_is_the_farthest() -> None:
    records = latency_records(4, far="n03", factor=1.0)
    for record in records:
        record["raw"]["median_us"] = 5.0
    assert gathered(records).farthest().node == "n01"  # type: ignore[union-attr]


def test_no_median_no_heatmap_and_the_charts_show_it_alone() -> None:
    records = latency_records(4, far="n03")
    assert interconnect_charts([], gathered(records)).startswith(
        '<div id="interconnect-charts"><h3>Interconnect</h3><figure id="latency-heatmap">')
    for record in records:  # a ping-pong that failed: no node has a median
        del record["raw"]["median_us"]
    assert latency_heatmap(gathered(records)) == ""
    assert interconnect_charts([], gathered(records)) == ""


def test_a_node_whose_busbw_was_refused_as_a_claim_is_neither_slowest_nor_fastest() -> None:
    """n03 claimed 10 x what its links carry (bad_output: no measured_base, its sweep the
    claim): the legend's fastest is the fastest measured node, never the liar (the truth
    oracle's seed 900 of 64 nodes called the liar fastest)."""
    def record(node: str, busbw: float | None, sweep: float, **more: Any) -> ResultLine:
        found: Any = {"node": node, "node_count": 1, "measured_base": busbw,
                      "raw": {"sweep": [[GIB, sweep]]}, **more}
        return cast("ResultLine", found)

    records = [record("n01", 300e9, 300e9), record("n02", 350e9, 350e9),
               record("n03", None, 3_500e9, error_kind="bad_output", outcome="failed")]
    assert slowest_and_fastest(records) == ("n01", "n02")
    assert slowest_and_fastest(records[1:]) is None  # one node measured: nothing to rank
