"""pytester, simulated clusters: what keeps a run's cost per case and its memory flat in the
cluster's size - the slow-node search recorded once and referred to by id, each
node_network line the same size whatever the node count, and a case's bulk let go once
results.jsonl, JUnit and pytest-html have it."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_cluster.evidence.sinks.results import ResultLine
from tests.conftest import planned

SPEC = """\
cluster: {{name: scale, nodes: "n[01-{nodes:02d}]", launcher: sim}}
host:
  cpu_cores: ">= 1"
interconnect:
  intra_node: {{kind: nvlink, rate: 450 GB/s}}
  inter_node: {{kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}}
  payloads: [4 GiB]
  node_counts: [2]
  busbw: ">= 80%"
  ranks_per_node: 8
sim:
  gpus_per_node: 8
  faults: [{{node: n02, link_factor: 0.5}}]
"""


def run(pytester: pytest.Pytester, nodes: int, *args: str, apart: bool = False) -> Path:
    """`apart`: in a process of its own (in this one, pytester records every hook call,
    and with it every item)."""
    (pytester.path / "trial.yaml").write_text(SPEC.format(nodes=nodes), encoding="utf-8")
    runpytest = pytester.runpytest_subprocess if apart else pytester.runpytest
    runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", *args)
    return pytester.path / "reports" / "latest"


def results(run_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    """(line as written, line parsed) of each result line."""
    text = (run_dir / "results.jsonl").read_text(encoding="utf-8")
    parsed = [(line, json.loads(line)) for line in text.splitlines()]
    return [(line, record) for line, record in parsed if record["type"] == "result"]


def node_network(run_dir: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    return {record["node"]: (line, record) for line, record in results(run_dir)
            if "test_node_network" in record["nodeid"]}


def test_the_search_is_written_once_and_each_node_refers_to_it(
        pytester: pytest.Pytester) -> None:
    run_dir = run(pytester, 6)
    cases = node_network(run_dir)
    assert sorted(cases) == [f"n{i:02d}" for i in range(1, 7)]
    files = {record["raw"]["search"]["file"] for _, record in cases.values()}
    assert len(files) == 1  # one search, the same for every node
    search = json.loads((run_dir / files.pop()).read_text(encoding="utf-8"))
    assert sorted(search["verdicts"]) == sorted(cases)
    assert search["verdicts"]["n02"]["status"] == "slow"
    for node, (_, record) in cases.items():
        # each node keeps its own verdict, partners and busbw; never the whole search
        assert "verdicts" not in record["raw"]["search"]
        own = record["raw"]["verdict"]
        assert own["node"] == node and own == search["verdicts"][node]
        assert record["measured_base"] == own["busbw"]
        assert record["raw"]["search"]["rounds"] == len(search["rounds"])
    assert cases["n02"][1]["outcome"] == "failed"
    assert "so this node is the slow one" in cases["n02"][1]["message"]
    assert {r["outcome"] for n, (_, r) in cases.items() if n != "n02"} == {"passed"}


@pytest.mark.slow
def test_a_node_network_line_does_not_grow_with_the_cluster(
        pytester: pytest.Pytester) -> None:
    small = max(len(line) for line, _ in node_network(run(pytester, 4)).values())
    large = max(len(line) for line, _ in node_network(run(pytester, 32)).values())
    # 8 times the nodes: a few more characters in names and ids, not 8 times the line
    assert large < small + 100, (small, large)
    assert large < 3000


CONFTEST = """
import gc
import json
import weakref
import pytest

ITEMS = []


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    ITEMS.extend(weakref.ref(item) for item in session.items)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    gc.collect()  # a failed case's traceback is a cycle: it holds the case until collected
    terminal = session.config.pluginmanager.get_plugin("terminalreporter")
    reports = [r for reports in terminal.stats.values() for r in reports
               if hasattr(r, "user_properties")]
    html = next(p for p in session.config.pluginmanager.get_plugins()
                if type(p).__module__.startswith("pytest_html") and hasattr(p, "_reports"))
    held = {
        "items": len(session.items),
        "items_with_properties": sum(bool(i.user_properties) for i in session.items),
        "reports": len(reports),
        "reports_with_properties": sum(bool(r.user_properties) for r in reports),
        "setup_teardown_reports": len(terminal.stats.get("", [])),
        "html_reports": len(html._reports),
        "finished": sorted({type(i).__name__ for i in session.items}),
        "items_alive": sum(ref() is not None for ref in ITEMS),
        "deselected_items": sum(isinstance(i, pytest.Item)
                                for i in terminal.stats.get("deselected", [])),
    }
    with open("held.json", "w") as out:
        json.dump(held, out)
"""


def test_a_case_lets_go_of_its_bulk_once_written(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    run_dir = run(pytester, 4, apart=True)
    held = json.loads((pytester.path / "held.json").read_text(encoding="utf-8"))
    assert held["items"] > 10
    # every case's item is freed once it has run: the list keeps a stand-in
    assert held["finished"] == ["FinishedItem"] and held["items_alive"] == 0
    assert held["items_with_properties"] == 0
    assert held["reports"] == 2  # the failed calls': a passed one leaves a token, counted
    assert held["reports_with_properties"] == 0
    assert held["setup_teardown_reports"] == 0  # passed, no output: nothing to print
    assert held["html_reports"] == 0
    # ... while results.jsonl and JUnit still carry every value, raw payloads included
    lines = results(run_dir)
    assert len(lines) == held["items"]
    intra = [r for _, r in lines if "intra_node" in r["nodeid"]]
    assert intra and all(r["raw"]["sweep"] and r["measured_base"] > 0 for r in intra)
    root = ET.parse(run_dir / "junit.xml").getroot()
    cases = root.iter("testcase")
    props = [{p.get("name"): p.get("value") for p in case.iter("property")} for case in cases]
    assert len(props) == held["items"]
    assert all("spec_key" in p and "measured" in p for p in props)
    assert sum("raw" in p for p in props) == sum("raw" in r for _, r in lines) > len(intra)
    # the HTML report still shows the failed node's case
    assert "test_node_network[n02]" in (run_dir / "report.html").read_text(encoding="utf-8")


def test_deselected_cases_are_counted_not_held(pytester: pytest.Pytester) -> None:
    every = planned(pytester, SPEC.format(nodes=4))
    chosen = planned(pytester, SPEC.format(nodes=4), "-k", "n01 or n02")
    pytester.makeconftest(CONFTEST)
    (pytester.path / "trial.yaml").write_text(SPEC.format(nodes=4), encoding="utf-8")
    result = pytester.runpytest_subprocess("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                           "-k", "n01 or n02")
    held = json.loads((pytester.path / "held.json").read_text(encoding="utf-8"))
    assert held["deselected_items"] == 0
    # still counted: the cases of clauses the spec lacks, and those -k leaves out: every
    # collected case is selected or deselected
    counts = re.search(r"collected (\d+) items / (\d+) deselected / (\d+) selected",
                       result.stdout.str())
    assert counts is not None
    collected, deselected, selected = map(int, counts.groups())
    assert (selected, deselected) == (len(chosen), collected - len(chosen))
    result.stdout.fnmatch_lines([f"* {deselected} deselected*",
                                 f"selection: -k n01 or n02; {len(every) - len(chosen)} "
                                 "check(s) deselected"])
    assert held["items_alive"] == 0


def test_the_terminal_s_times_progress_reads_finished_cases(
        pytester: pytest.Pytester) -> None:
    """pytest's "times" progress reads every item's location and every report: finished
    cases' stand-ins answer it, and their reports are kept for it."""
    (pytester.path / "trial.yaml").write_text(SPEC.format(nodes=2), encoding="utf-8")
    every = planned(pytester, SPEC.format(nodes=2))
    result = pytester.runpytest_subprocess("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                           "-o", "console_output_style=times")
    result.assert_outcomes(passed=len(every) - 3, failed=3)  # n02's half-rate link: no node
    # known good
    # each file's time, once all its cases have run (the items' locations counted them)
    result.stdout.fnmatch_lines(["test_host.py .. *[0-9]ms*", "test_software.py ...... *ms*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_the_controller_holds_a_line_without_its_bulk() -> None:
    from pytest_cluster.evidence.ledger import held

    line = {"type": "result", "case": "acceptance/test_gpus.py::test_gpu_ecc[n1-gpu0]",
            "clause": "gpus.ecc", "node": "n1", "outcome": "failed", "phase": "call",
            "measured": 3.0, "unit": "", "error_kind": None, "method": "NVML " * 40,
            "raw": {"volatile": list(range(100))}, "probe_run": "x" * 32,
            "busbw_GBps[4GiB]": 1.0}
    kept: Mapping[str, object] = held(cast("ResultLine", line))
    assert {k: kept[k] for k in ("case", "clause", "node", "outcome", "phase", "measured",
                                 "unit", "error_kind")} == {
        k: line[k] for k in ("case", "clause", "node", "outcome", "phase", "measured", "unit",
                             "error_kind")}
    assert not {"raw", "method", "probe_run", "busbw_GBps[4GiB]"} & set(kept)
    sweep = {"sweep": [[2**30, 3e11]], "nodes": ["n1"], "details": {"x": 1}}
    charts = held(cast("ResultLine", {**line, "raw": sweep}))["raw"]
    assert charts == {"sweep": [[2**30, 3e11]]}  # the charts'


@pytest.mark.slow
def test_the_collector_is_tuned_while_the_cases_run_and_put_back_after(
        pytester: pytest.Pytester) -> None:
    """What collection built is frozen and young collections are rarer while the cases
    run; the process gets its own settings back when the run ends."""
    import gc

    from pytest_cluster.run.collector_gc import RUN_THRESHOLDS

    pytester.syspathinsert()
    pytester.makepyfile(gcspy="""
        import gc, json, pathlib
        def pytest_runtest_call(item):
            pathlib.Path("gc.json").write_text(json.dumps(
                [gc.get_threshold(), gc.get_freeze_count()]))
    """)
    before = (gc.get_threshold(), gc.get_freeze_count())
    run(pytester, 2, "-p", "gcspy")
    during = json.loads((pytester.path / "gc.json").read_text(encoding="utf-8"))
    assert tuple(during[0]) == RUN_THRESHOLDS != before[0]
    assert during[1] > before[1] + 1000
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_without_a_spec_the_collector_is_left_alone(pytester: pytest.Pytester) -> None:
    import gc

    pytester.makepyfile("""
        import gc
        def test_it():
            assert gc.get_freeze_count() == 0
            assert gc.get_threshold()[0] != 20_000
    """)
    assert gc.get_freeze_count() == 0
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


SPOOLS = """
import pytest
from pytest_cluster import internals
from pytest_cluster.run.junit_spool import JunitSpool

SPOOL = []


def pytest_sessionstart(session):
    SPOOL.append(JunitSpool(internals.junit_writer(session.config)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_logreport(report):
    spooled = report.when == "teardown" and "kept" not in report.nodeid
    testcase = SPOOL[0].open_reporter(report) if spooled else None
    try:
        return (yield)
    finally:
        if testcase is not None:
            SPOOL[0].spool(testcase)


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionfinish(session):
    ordered = internals.junit_reporters_in_order(internals.junit_writer(session.config))
    __import__("pathlib").Path("held.txt").write_text(" ".join(
        f"{type(r).__name__}:{getattr(r, 'count', 1)}" for r in ordered))
    yield
    SPOOL[0].restore(__import__("pathlib").Path(internals.junit_writer(session.config).logfile))
"""

SUITE = """
import pytest

@pytest.mark.parametrize("i", range(5))
def test_first(record_property, i):
    record_property("measured", f"{i} <GB/s> & ü")
    assert i != 3, "three is out"

def test_kept(record_property):
    record_property("x", "not spooled: it breaks the run of spooled cases")

@pytest.mark.skip(reason="not here")
def test_skipped():
    pass

@pytest.mark.parametrize("i", range(3))
def test_then(i):
    print("out", i)
"""


def test_junit_spooled_in_runs_of_cases_is_what_pytest_writes(
        pytester: pytest.Pytester) -> None:
    """Byte for byte, but for times and addresses: cases spooled one after another share a
    placeholder, and one left in pytest's writer between them splits the run."""
    import re

    pytester.makepyfile(test_suite=SUITE)
    pytester.runpytest("-p", "no:cacheprovider", "-o", "junit_family=xunit1",
                       "--junitxml=plain.xml")
    pytester.makeconftest(SPOOLS)
    pytester.runpytest("-p", "no:cacheprovider", "-o", "junit_family=xunit1",
                       "--junitxml=spooled.xml")

    def timeless(name: str) -> str:
        text = (pytester.path / name).read_text(encoding="utf-8")
        text = re.sub(r' (time|timestamp)="[^"]*"', "", text)
        return re.sub(r"0x[0-9a-f]+", "0x", text)  # addresses in the failure's traceback

    spooled, plain = timeless("spooled.xml"), timeless("plain.xml")
    assert spooled == plain
    assert plain.count("<testcase ") == 10 and "three is out" in plain
    held = (pytester.path / "held.txt").read_text(encoding="utf-8")
    assert held == "_Spooled:5 _NodeReporter:1 _Spooled:4"
    assert 'value="3 &lt;GB/s&gt; &amp; ü"' in plain and "pytest-cluster-spooled" not in plain
