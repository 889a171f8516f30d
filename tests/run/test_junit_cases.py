"""junit.xml's testcases as the session writes them (pytest_cluster/run/junit_cases.py):
the suite named for the cluster with the run's first properties, one testcase for every
case that ran (a failed one with its failure), each classname from its case id (the same
from any directory), and after Ctrl-C only the cases that ran."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from pytest_cluster import __version__
from tests.conftest import on
from tests.run.test_runs import (
    INTERRUPT_AFTER_3,
    cases,
    interrupted_run,
    lines,
    per_node,
    run,
    run_dirs,
    suite,
    suite_props,
)


def test_every_collected_case_has_one_testcase_and_a_failed_one_its_failure(
        pytester: pytest.Pytester) -> None:
    every = cases(pytester)
    run(pytester, faults="{node: n2, down: true}")
    run_dir, = run_dirs(pytester)
    testcases = list(suite(run_dir).iter("testcase"))
    names = [str(tc.get("name")) for tc in testcases]
    assert sorted(names) == sorted(every)
    failed = {str(tc.get("name")) for tc in testcases if tc.find("failure") is not None}
    results = [r for r in lines(run_dir) if r["type"] == "result"]
    assert failed == {r["case"].rpartition("::")[2] for r in results
                      if r["outcome"] == "failed"}
    assert set(on(every, "n2")) <= failed
    assert not failed & set(on(every, "n1"))
    assert int(suite(run_dir).get("tests", "0")) == len(every)
    assert int(suite(run_dir).get("failures", "0")) == len(failed)


def test_the_suite_is_named_for_the_cluster_with_the_runs_first_properties(
        pytester: pytest.Pytester) -> None:
    run(pytester, "-k", "n1")
    run_dir, = run_dirs(pytester)
    written = (pytester.path / "trial.yaml").read_bytes()
    assert suite(run_dir).get("name") == "small"
    props = suite_props(run_dir)
    assert {name: props[name] for name in ("cluster", "spec_sha256", "simulated",
                                           "tool_version")} == {
        "cluster": "small", "spec_sha256": hashlib.sha256(written).hexdigest(),
        "simulated": "true", "tool_version": __version__}


def test_a_run_that_writes_no_junit_xml_still_runs(pytester: pytest.Pytester) -> None:
    """--cluster-reports= (empty): no junit.xml, and nothing of JUnit's to feed or finish."""
    result = run(pytester, "-k", "n1", "--cluster-reports=")
    result.assert_outcomes(passed=per_node(pytester))
    assert not list(pytester.path.rglob("junit.xml"))


# -- moved from tests/run/test_runs.py ---------------------------------------------------------

INTERRUPT_IN_CALL_3 = """  # a plugin: the third case begun (set up), then Ctrl-C
count = 0

def pytest_runtest_call(item):
    global count
    count += 1
    if count == 3:
        raise KeyboardInterrupt
"""


@pytest.mark.parametrize("interrupter", [INTERRUPT_AFTER_3, INTERRUPT_IN_CALL_3],
                         ids=["between cases", "inside a case"])
def test_an_interrupted_runs_junit_counts_what_ran_as_the_terminal(
        pytester: pytest.Pytester, interrupter: str) -> None:
    """The cases not reached are no testcases of junit.xml (they were listed as skipped,
    which the terminal and report.html never said): JUnit has one testcase per case that
    ran (not the case Ctrl-C stopped inside), its suite's `not_run` property counts the
    others as results.jsonl's not_run lines, and the oracle finds no view that disagrees."""
    from tests.oracle import check

    every = len(cases(pytester))
    result = interrupted_run(pytester, interrupter)
    run_dir, = run_dirs(pytester)
    results = [r for r in lines(run_dir) if r["type"] == "result"]
    not_run = {r["case"].rpartition("::")[2] for r in results if r["outcome"] == "not_run"}
    ran = {r["case"].rpartition("::")[2] for r in results} - not_run
    testcases = list(suite(run_dir).iter("testcase"))
    names = [str(tc.get("name")) for tc in testcases]
    assert len(names) == len(set(names)) and set(names) == ran
    assert len(not_run) >= every - 3 and len(ran) + len(not_run) == every
    assert int(suite(run_dir).get("tests", 0)) == len(ran)
    assert int(suite(run_dir).get("skipped", 0)) == 0
    assert suite_props(run_dir)["not_run"] == str(len(not_run))
    # named as the cases that ran: the module of each case id, wherever pytest ran
    assert {str(tc.get("classname")) for tc in testcases} == {
        r["case"].partition(".py::")[0].replace("/", ".") for r in results
        if r["outcome"] != "not_run"}
    assert check(run_dir, result.stdout.str()) == []


def test_junit_names_are_the_same_from_any_directory(pytester: pytest.Pytester) -> None:
    mine = per_node(pytester)
    run(pytester, "-k", "n1")
    elsewhere = pytester.path / "elsewhere"
    elsewhere.mkdir()
    os.chdir(elsewhere)
    pytester.runpytest(f"--cluster={pytester.path / 'trial.yaml'}", "-p", "no:cacheprovider",
                       "-k", "n1", f"--cluster-reports={pytester.path / 'reports'}")
    first, second = run_dirs(pytester)

    def names(run_dir: Path) -> set[tuple[str, str]]:
        return {(c.get("classname", ""), c.get("name", ""))
                for c in suite(run_dir).iter("testcase")}

    assert names(first) == names(second)
    assert ("acceptance.test_gpus", "test_gpu_count[n1]") in names(first)
    assert suite(first).get("name") == "small"
    testcases = list(suite(first).iter("testcase"))
    assert len(testcases) == int(suite(first).get("tests", "0")) == mine  # one per check
