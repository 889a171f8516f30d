"""A run's memory does not grow with its cases: a case's bulk, its item and its reports
are let go once every reader has them; deselected cases are counted, not held."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from pytest_cluster.run.memory import FinishedItem
from tests.conftest import planned
from tests.run.test_scale import SPEC, results, run

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


@pytest.mark.parametrize(("nodeid", "name", "location"), [
    ("acceptance/test_gpus.py::test_gpu_count[n1]", "test_gpu_count[n1]",
     ("acceptance/test_gpus.py", None, "test_gpu_count[n1]")),
    ("t.py::TestA::test_b[x::y]", "test_b[x::y]", ("t.py", None, "TestA.test_b[x::y]")),
    ("t.py::test_c", "test_c", ("t.py", None, "test_c")),
])
def test_a_finished_item_answers_with_its_name_and_location(
        nodeid: str, name: str, location: tuple[str, None, str]) -> None:
    """What the terminal still reads of a case that has run: its name and location (an id's
    parameters may hold '::'), and nothing it recorded."""
    finished = FinishedItem(nodeid, location[0])
    assert (finished.nodeid, finished.name, finished.location) == (nodeid, name, location)
    assert finished.user_properties == () and dict(finished.keywords) == {}
