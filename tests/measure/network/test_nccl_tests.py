"""nccl-tests' output read as its versions print it: the table (published outputs quoted in
NCCL and nccl-tests issues, exact strings, and the 2.19 per-iteration table as its source
prints it) and the `-J` JSON file of 2.17 on (as src/util.cu writes it, both spellings of
its average); anything else is refused saying why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import pytest

from pytest_cluster.contract.sections.busbw import CollectiveRun
from pytest_cluster.measure.network import nccl_tests
from pytest_cluster.measure.network.nccl_tests import Side

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


#: The 2.13 table's first row, as printed; each case below changes one of its figures.
ROW = ("   536870912     134217728     float     sum      -1    10052   53.41   93.46      0"
       "   9676.9   55.48   97.09      0")


@pytest.mark.parametrize(("old", "new", "message"), [
    ("93.46", "nan", "the row of size 536870912: out-of-place busbw is not a finite number: "
                     "'nan'"),
    ("93.46", "inf", "the row of size 536870912: out-of-place busbw is not a finite number: "
                     "'inf'"),
    ("93.46", "-5", "the row of size 536870912: out-of-place busbw is negative: '-5'"),
    ("55.48", "-nan", "the row of size 536870912: in-place algbw is not a finite number: "
                      "'-nan'"),
    ("10052", "-10052", "the row of size 536870912: out-of-place time is negative: '-10052'"),
    ("97.09      0", "97.09     -3", "the row of size 536870912: in-place #wrong is not a "
                                     "count: '-3'"),
    ("# Avg bus bandwidth    : 95.3009", "# Avg bus bandwidth    : nan",
     "the footer's Avg bus bandwidth is not a finite number: 'nan'"),
    ("# Out of bounds values : 0 OK", "# Out of bounds values : -3 OK",
     "the footer's Out of bounds values is not a count: '-3'"),
])
def test_the_table_refuses_figures_that_are_not_finite_or_are_negative(
        old: str, new: str, message: str) -> None:
    """As the JSON file's are: a NaN, an infinity or a negative figure is never read as a
    measurement (nor passed over as 'not a row')."""
    text = V2_13.replace(ROW, ROW.replace(old, new, 1)) if old in ROW else V2_13.replace(
        old, new)
    assert text != V2_13
    with pytest.raises(ValueError) as caught:
        nccl_tests.parse_text(text)
    assert str(caught.value) == message


def test_a_line_with_words_where_numbers_go_is_not_a_row() -> None:
    noise = ("   536870912 bytes of shared memory could not be mapped (fast path off)\n"
             "   8   2   warnings: the plugin said so, and more words follow here\n")
    assert nccl_tests.parse_text(V2_13 + noise).rows == nccl_tests.parse_text(V2_13).rows


@pytest.mark.parametrize("label", ["0: ", " 0: ", "12: "])
def test_output_labelled_by_srun_reads_as_the_table(label: str) -> None:
    """`srun -l` / `--label` puts the task's number before every line."""
    labelled = "".join(label + line for line in V2_13.splitlines(keepends=True))
    assert nccl_tests.parse_text(labelled) == nccl_tests.parse_text(V2_13)
    versioned = label + "# nccl-tests version 2.13.8 nccl-headers=21903\n" + labelled
    assert nccl_tests.parse_text(versioned).version == "2.13.8"


def test_json_nested_deeper_than_a_reader_follows_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^not JSON: nested too deeply$"):
        nccl_tests.parse_json("[" * 100_000)


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


@pytest.mark.parametrize(("busbw", "shown"), [('"nan"', "'nan'"), ("inf", "'inf'"),
                                              ("-inf", "'-inf'"), ("1e400", "inf")])
def test_nccl_tests_json_quirks_are_read_and_refused(busbw: str, shown: str) -> None:
    """A NaN is written "nan" (a string) and an infinity bare (`inf`, not JSON): read, and
    refused as a figure, as the table's are."""
    with pytest.raises(ValueError) as caught:
        nccl_tests.parse_json(_json(busbw=busbw))
    assert str(caught.value) == f"result 0 out_of_place.bus_bw is not a finite number: {shown}"


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


# -- the probe that runs nccl-tests on a node, and its answer read into a run ---------------

def test_the_probe_runs_the_payloads_on_a_doubling_grid_and_the_others_alone() -> None:
    from pytest_cluster.probes import nccl_tests as probe

    assert probe.runs([1 << 20, 4 << 20, 1 << 30]) == [(1 << 20, 1 << 30)]
    assert probe.runs([1 << 20, 3 << 20, 1 << 30]) == [(1 << 20, 1 << 30), (3 << 20, 3 << 20)]
    assert probe.argv("/opt/nt/all_reduce_perf", 8, 1024, 8, 5, 20, "/tmp/r0.json") == [
        "/opt/nt/all_reduce_perf", "-b", "8", "-e", "1024", "-f", "2", "-g", "8", "-w", "5",
        "-n", "20", "-c", "1", "-J", "/tmp/r0.json"]
    assert probe.argv("/opt/nt/all_reduce_perf", 8, 8, 1, 5, 20, None)[-2:] == ["-c", "1"]
    assert nccl_tests.probe_args("/opt/nt", "reduce_scatter", [8, 16], 4, 2, 10, 600.0) == (
        "--dir", "/opt/nt", "--binary", "reduce_scatter_perf", "--sizes", "8,16",
        "--gpus", "4", "--warmup", "2", "--iterations", "10", "--timeout", "600")


#: A stand-in for an nccl-tests binary (no GPU here): it prints the published 2.13 table
#: and, given -J, writes a JSON file with the environment in it, as nccl-tests does. The
#: probe's process handling is what it tests; nccl-tests itself runs on a GPU machine.
STAND_IN = """\
#!/bin/sh
case "$1" in -h) echo "[-J,--output_file <file> write output to filepath]"; exit 0;; esac
cat "$TABLE"
while [ $# -gt 0 ]; do
  if [ "$1" = "-J" ]; then printf '%s' "$DOCUMENT" > "$2"; fi
  shift
done
exit "${EXIT:-0}"
"""


def test_the_probe_sends_back_the_table_and_the_json_without_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_cluster.probes import nccl_tests as probe

    binary = tmp_path / "all_reduce_perf"
    binary.write_text(STAND_IN)
    binary.chmod(0o755)
    monkeypatch.setenv("TABLE", str(CAPTURES / "2.13-nccl-tests-252.txt"))
    monkeypatch.setenv("DOCUMENT", _json(busbw="94.000000"))
    data = probe.measure({"--dir": str(tmp_path), "--binary": "all_reduce_perf",
                          "--sizes": "536870912,1073741824", "--gpus": "8"})
    assert data["json_output"] is True and len(data["runs"]) == 1
    (run,) = data["runs"]
    assert run["exit_code"] == 0 and run["argv"][-2] == "-J"
    text = cast("str", run["json"])
    assert "AWS_SECRET" not in text and json.loads(text)["results"]
    base = CollectiveRun("all_reduce", "nccl", ("n1",), 8)
    found = nccl_tests.to_run(base, data, [536870912, 1073741824])
    assert [p.busbw for p in found.points] == [94e9, 97.54e9]  # from the JSON file
    assert found.details["nccl_tests"][0]["source"] == "json"
    assert found.details["in_place_busbw"] == {"536870912": 97.09e9, "1073741824": 97.54e9}
    monkeypatch.setenv("EXIT", "3")
    failed = nccl_tests.to_run(base, probe.measure(
        {"--dir": str(tmp_path), "--binary": "all_reduce_perf", "--sizes": "8"}), [8])
    assert failed.error.startswith(f"`{binary} -b 8 -e 8 -f 2 -g 1 -w 5 -n 20 -c 1 -J ")
    # nothing on stderr: the last lines it printed say where it stopped
    assert failed.error.endswith("exited with 3: # Out of bounds values : 0 OK # Avg bus "
                                 "bandwidth    : 95.3009")
    assert probe.measure({"--dir": str(tmp_path), "--binary": "rm"}) == {
        "error": "not a binary of nccl-tests this probe runs: 'rm'"}
    assert probe.measure({"--dir": "/nonexistent", "--binary": "all_reduce_perf"}) == {
        "error": "no executable /nonexistent/all_reduce_perf on this node (build nccl-tests "
                 "there, `make -C nccl-tests`, or set interconnect.nccl_tests)"}


@pytest.mark.parametrize(("payload", "error"), [
    ("a list", "the nccl_tests probe's answer is not a map of runs"),
    ({"error": "no executable /x/all_reduce_perf"}, "no executable /x/all_reduce_perf"),
    ({"runs": ["x"]}, "the nccl_tests probe's run 0 is not a map"),
    ({"runs": [{"argv": ["a"], "exit_code": 0, "stdout": "Segmentation fault"}]},
     "`a`: the output: no nccl-tests table (no header line with size and busbw)"),
    ({"runs": [{"argv": ["a"], "exit_code": 0, "stdout": V2_13}]},
     "nccl-tests printed none of the payloads asked for"),
    ({"runs": [{"argv": {"a": 1}, "exit_code": 0, "stdout": V2_13.replace("93.46", "nan")}]},
     "``: the output: the row of size 536870912: out-of-place busbw is not a finite number: "
     "'nan'"),
])
def test_an_answer_that_does_not_read_is_the_runs_error(payload: object, error: str) -> None:
    base = CollectiveRun("all_reduce", "nccl", ("n1",), 8)
    assert nccl_tests.to_run(base, payload, [4096]).error == error


# -- the spec's engine, and a simulated cluster measured by it ----------------------------

SIM_HEAD = "cluster: {name: c, nodes: [a, b], launcher: sim}\nsim: {}\n"
ENGINE = "interconnect:\n  busbw: '>= 10 GB/s'\n  payloads: [1 GiB]\n  ranks_per_node: 8\n"


@pytest.mark.parametrize(("body", "message"), [
    ("  backend: gloo\n  engine: nccl-tests\n  nccl_tests: /opt/nt\n",
     "t.yaml:8: interconnect.engine: nccl-tests runs NCCL: needs backend nccl (this spec's "
     "is gloo)"),
    ("  backend: nccl\n  engine: nccl-tests\n",
     "t.yaml:8: interconnect.nccl_tests: missing: the folder nccl-tests was built in"),
    ("  backend: nccl\n  nccl_tests: /opt/nt\n",
     "t.yaml:8: interconnect.nccl_tests: only used with engine: nccl-tests"),
    ("  backend: nccl\n  engine: nccl-tests\n  nccl_tests: 'opt/nt; rm -rf /'\n",
     "t.yaml:9: interconnect.nccl_tests: expected the absolute path of the folder"),
    ("  backend: nccl\n  engine: nccl-tests\n  nccl_tests: /opt/../etc\n",
     "t.yaml:9: interconnect.nccl_tests: expected the absolute path"),
    ("  backend: nccl\n  engine: mpi\n", "t.yaml:8: interconnect.engine: expected torch or "
                                          "nccl-tests, got 'mpi'"),
])
def test_a_bad_engine_is_a_usage_error_naming_the_key(body: str, message: str) -> None:
    from pytest_cluster.contract import parse_spec
    from pytest_cluster.errors import SpecError

    with pytest.raises(SpecError) as caught:
        parse_spec(SIM_HEAD + ENGINE + body, "t.yaml")
    assert message in str(caught.value)


def test_a_simulated_cluster_measured_by_nccl_tests_fills_the_same_cases(
        pytester: pytest.Pytester) -> None:
    """engine: nccl-tests on the sim: each node's job is nccl-tests' (its table and JSON
    as 2.19 prints them, read by the same parser), and so is the job across nodes (-g 1,
    one task per GPU, as the launcher's MPI launch would start it); a node with 7 GPUs
    fails as nccl-tests does, in its words."""
    from tests.conftest import faulted, on_nodes, planned
    from tests.test_plugin import jsonl

    text = ("cluster: {name: nt, nodes: 'n[1-3]', launcher: sim}\n"
            "interconnect:\n  intra_node: {kind: nvlink, rate: 450 GB/s}\n"
            "  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}\n"
            "  payloads: [4 GiB]\n  busbw: '>= 75%'\n  node_network: false\n"
            "  node_counts: [2]\n  ranks_per_node: 8\n  backend: nccl\n"
            "  engine: nccl-tests\n  nccl_tests: /opt/nccl-tests/build\n"
            "sim:\n  gpu_model: H100-SXM-80GB\n  faults:\n    - {node: n3, gpus: 7}\n")
    (pytester.path / "trial.yaml").write_text(text)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-k", "collective")
    # the node short of a GPU fails its own; the job across nodes runs on two good ones
    cases = planned(pytester, text, "-k", "collective")
    short = on_nodes(cases, faulted(text, "gpus"))
    result.assert_outcomes(passed=len(cases) - len(short), failed=len(short))
    lines = {r["case"].split("::")[1]: r for r in jsonl(pytester) if r.get("type") == "result"}
    good = lines["test_collective_intra_node[n1-all_reduce-4GiB]"]
    assert good["outcome"] == "passed" and good["simulated"] is True
    assert good["method"].startswith("nccl-tests all_reduce_perf -g 8: one process")
    assert good["raw"]["details"]["nccl_tests"][0]["source"] == "json"
    assert good["raw"]["details"]["nccl_tests"][0]["version"] == "2.19.6"
    assert lines["test_collective_intra_node[n3-all_reduce-4GiB]"]["message"] == (
        "Failed: [SIMULATED] n3 busbw[intra_node]: all_reduce 4 GiB: `/opt/nccl-tests/build/"
        "all_reduce_perf -b 1048576 -e 4294967296 -f 2 -g 8` exited with 1: Invalid number "
        "of GPUs: 8 requested but only 7 were found. Please check the number of processes "
        "and GPUs per process.")
    inter = lines["test_collective_inter_node[all_reduce-4GiB-2nodes]"]
    assert inter["outcome"] == "passed"
    assert inter["method"].startswith("nccl-tests all_reduce_perf -g 1, 8 task(s) per node "
                                      "started as one MPI job by the launcher")
    assert inter["raw"]["details"]["nccl_tests"][0]["source"] == "text"  # no -J file
    assert inter["raw"]["details"]["nccl_tests"][0]["argv"] == (
        "/opt/nccl-tests/build/all_reduce_perf -b 1048576 -e 4294967296 -f 2 -g 1 -w 5 "
        "-n 20 -c 1")


def test_a_launcher_without_an_mpi_launch_measures_across_nodes_with_torch() -> None:
    """ssh and local offer no MPI launch (run_program is None), so a job across nodes
    stays torch's (Cluster.collective falls back when it gets None)."""
    from pytest_cluster.contract.model import ClusterSpec
    from pytest_cluster.launchers.local import LocalLauncher

    launcher = LocalLauncher(ClusterSpec("t", ("a", "b"), "local", "python3", 60, 8))
    assert launcher.run_program(["/opt/nt/all_reduce_perf"], ["a", "b"], 8, 60) is None
