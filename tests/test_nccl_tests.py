"""nccl-tests' output read as its versions print it: the table (published outputs quoted in
NCCL and nccl-tests issues, exact strings, and the 2.19 per-iteration table as its source
prints it) and the `-J` JSON file of 2.17 on (as src/util.cu writes it, both spellings of
its average); anything else is refused saying why."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_cluster.measure import nccl_tests
from pytest_cluster.measure.nccl_tests import Side

#: Outputs published in issues, byte for byte as quoted there (trailing blanks included).
CAPTURES = Path(__file__).resolve().parent / "captures" / "nccl-tests"

# nccl-tests 2.13 era (NVIDIA/nccl-tests#252, 2024): 2.10 on, `redop root` and `#wrong`
V2_13 = (CAPTURES / "2.13-nccl-tests-252.txt").read_text(encoding="utf-8")

# wrong results counted per side (NVIDIA/nccl#1184, 2024, NCCL 2.18.3 with NCCL_PROTO=SIMPLE)
WRONG = (CAPTURES / "wrong-nccl-1184.txt").read_text(encoding="utf-8")

# before 2.10 (NVIDIA/nccl-tests#176, 2023): no `root`, and `error` is the largest relative
# error, not a count
OLD = (CAPTURES / "before-2.10-nccl-tests-176.txt").read_text(encoding="utf-8")


def test_the_table_of_2_10_on_reads_both_sides_and_the_footer() -> None:
    report = nccl_tests.parse_text(V2_13)
    assert report.source == "text" and len(report.rows) == 5
    first = report.rows[0]
    assert (first.bytes, first.count, first.type, first.redop) == (536870912, 134217728,
                                                                  "float", "sum")
    assert first.out_of_place == Side(10052, 53.41e9, 93.46e9, 0)
    assert first.in_place == Side(9676.9, 55.48e9, 97.09e9, 0)
    assert first.busbw == 93.46e9  # the figure is out-of-place, as nccl-tests' users quote
    assert report.out_of_bounds == 0 and report.avg_busbw == pytest.approx(95.3009e9)


def test_wrong_elements_are_counted_per_row() -> None:
    rows = nccl_tests.parse_text(WRONG).rows
    assert [row.wrong for row in rows] == [0, 0, 237858 + 238038]
    assert rows[2].out_of_place is not None and rows[2].out_of_place.wrong == 237858


def test_the_table_before_2_10_has_no_count_of_wrong_elements() -> None:
    report = nccl_tests.parse_text(OLD)
    assert [row.bytes for row in report.rows] == [4096, 8192, 131072]
    assert report.rows[2].out_of_place == Side(120.9, 1.08e9, 2.15e9, None)
    assert report.rows[2].redop == "sum" and report.out_of_bounds is None


def test_the_per_iteration_table_of_2_19_reads_by_its_header() -> None:
    """2.19's per-iteration columns and a -R timestamp, as writeResultHeader and
    writeBenchmarkLineBody (src/util.cu, 2.19.6) print them, with NCCL's log between."""
    text = (
        "# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\n"
        "# Collective test starting: all_reduce_perf\n"
        "#\n"
        "#                                                   out-of-place (+ per-iteration)"
        "                                in-place (+ per-iteration)\n"
        "#       size         count      type   redop    root     time   algbw   busbw "
        "#wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw #wrong    "
        "i_min    i_max    i_p99    i_cv%           timestamp\n"
        "node1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
        "    16777216       4194304     float     sum      -1   121.33  138.28  242.00      "
        "0   119.10   125.02   124.88     1.21   120.47  139.26  243.71      0   118.90   "
        "122.40   122.31     0.95  2026-07-09 16:03:21\n"
        "# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 242.855 \n")
    report = nccl_tests.parse_text(text)
    assert report.version == "2.19.6"
    (row,) = report.rows
    assert row.out_of_place == Side(121.33, 138.28e9, 242.0e9, 0)
    assert row.in_place == Side(120.47, 139.26e9, 243.71e9, 0)
    assert report.avg_busbw == pytest.approx(242.855e9)


def _json(average_key: str = "average_bus_bandwidth", bandwidth_key: str = "bandwidth",
          busbw: str = "93.460000") -> str:
    """The -J file as jsonOutputInit, writeBenchmarkLine* and writeResultFooter write it
    (src/util.cu): no spaces, doubles with %lf, booleans as strings."""
    return (
        '{"version":1,"start_time":"2026-11-26 01:00:00","args":["./all_reduce_perf","-b",'
        '"512M","-e","1G","-J","r.json"],"env":["AWS_SECRET_ACCESS_KEY=do-not-keep"],'
        '"nccl_version":22803,"config":{"nthreads":1,"ngpus":8},"devices":[],"results":['
        '{"size":536870912,"count":134217728,"type":"float","redop":"sum","root":"    -1",'
        '"out_of_place":{"time":10052.000000,"alg_bw":53.410000,"bus_bw":' + busbw + ','
        '"nwrong":0.000000},"in_place":{"time":9676.900000,"alg_bw":55.480000,'
        '"bus_bw":97.090000,"nwrong":0.000000},"actual_iterations":20,"experiment_name":'
        '"all_reduce_perf"},{"size":1073741824,"count":268435456,"type":"float","redop":'
        '"sum","root":"    -1","out_of_place":null,"in_place":{"time":19265.000000,'
        '"alg_bw":55.740000,"bus_bw":97.540000,"nwrong":null},"actual_iterations":20,'
        '"experiment_name":"all_reduce_perf"}],"out_of_bounds":{"count":0,"okay":"true"},'
        f'"{average_key}":{{"{bandwidth_key}":95.300900,"okay":"unchecked"}},'
        '"errors":[],"end_time":"2026-11-26 01:00:09"}')


@pytest.mark.parametrize(("average", "bandwidth"), [
    ("average_bus_bandwidth", "bandwidth"),  # 2.17.9 on
    ("average_bus_bandwidith", "bandwidith"),  # 2.17.0-2.17.8
])
def test_the_json_file_of_2_17_on_reads_with_either_spelling(average: str,
                                                              bandwidth: str) -> None:
    report = nccl_tests.parse_json(_json(average, bandwidth))
    assert report.source == "json" and len(report.rows) == 2
    assert report.rows[0].out_of_place == Side(10052, 53.41e9, 93.46e9, 0)
    # a trace replay's row: in-place only, wrong elements not checked (-c 0)
    assert report.rows[1].out_of_place is None
    assert report.rows[1].in_place == Side(19265, 55.74e9, 97.54e9, None)
    assert report.rows[1].busbw == 97.54e9
    assert report.out_of_bounds == 0 and report.avg_busbw == pytest.approx(95.3009e9)


def test_nccl_tests_json_quirks_read_as_numbers() -> None:
    """A NaN is written "nan" (a string) and an infinity bare (`inf`, not JSON)."""
    assert math.isnan(nccl_tests.parse_json(_json(busbw='"nan"')).rows[0].busbw)
    assert nccl_tests.parse_json(_json(busbw="inf")).rows[0].busbw == math.inf


@pytest.mark.parametrize(("text", "message"), [
    ("", "not JSON"),
    ("[1, 2]", "not nccl-tests' JSON output: no list of results"),
    ('{"results": [{"count": 1}]}', "result 0 has no 'size'"),
    ('{"results": [{"size": 8, "out_of_place": {"time": "fast"}}]}',
     "result 0 out_of_place.time is not a number: 'fast'"),
    ('{"results": [{"size": 8, "out_of_place": {"time": 1, "alg_bw": 1, "bus_bw": 1, '
     '"nwrong": -3}}]}', "result 0 out_of_place.nwrong is not a count: -3"),
    ('{"results": [' + ",".join(['{"size": 8}'] * 5000) + "]}", "5000 results (at most 4096)"),
])
def test_json_that_is_not_nccl_tests_output_is_refused_saying_why(text: str,
                                                                  message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        nccl_tests.parse_json(text)


def test_the_json_file_wins_and_the_table_is_the_fallback() -> None:
    assert nccl_tests.parse(V2_13, _json()).source == "json"
    assert nccl_tests.parse(V2_13, "{truncated").source == "text"
    assert nccl_tests.parse(V2_13, None).source == "text"
    with pytest.raises(ValueError) as caught:
        nccl_tests.parse("Segmentation fault (core dumped)\n", "{")
    assert str(caught.value).startswith("the JSON file: not JSON: ")
    assert str(caught.value).endswith("; the output: no nccl-tests table (no header line "
                                      "with size and busbw)")
    with pytest.raises(ValueError, match="the nccl-tests table has no rows"):
        nccl_tests.parse_text(V2_13.split("   536870912", maxsplit=1)[0])


def test_a_huge_output_is_read_from_its_end_within_bounds() -> None:
    noise = "x" * (nccl_tests.MAX_TEXT + 10) + "\n"
    assert len(nccl_tests.parse_text(noise + V2_13).rows) == 5
    assert json.dumps(nccl_tests.MAX_ROWS) == "4096"
