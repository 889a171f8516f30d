"""JUnit spooled to a file case by case is the file pytest writes, byte for byte; its
testsuite timestamp in UTC."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cluster.run.junit_spool import closing, junit_in_utc

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


def test_the_testsuite_timestamp_is_rewritten_in_utc(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text('<testsuites><testsuite name="a" timestamp="2026-11-27T00:10:52.619352'
                     '-05:00"><testcase timestamp="2026-11-27T00:10:52-05:00"/></testsuite>'
                     '</testsuites>', encoding="utf-8")
    junit_in_utc(junit)
    text = junit.read_text(encoding="utf-8")
    assert 'timestamp="2026-11-27T05:10:52.619352+00:00"' in text
    assert 'testcase timestamp="2026-11-27T00:10:52-05:00"' in text  # the suite's only
    junit_in_utc(None)  # no junit.xml: nothing to do


def test_the_teardown_made_for_an_interrupted_case_carries_its_properties() -> None:
    begun = pytest.TestReport(nodeid="t.py::test_x[n1]", location=("t.py", 1, "test_x[n1]"),
                              keywords={}, outcome="passed", longrepr=None, when="call")
    begun.node = "gw1"  # type: ignore[attr-defined]  # pytest-xdist's worker
    made = closing(begun, [("measured", 3.0)])
    assert (made.nodeid, made.location, made.when, made.outcome) == (
        begun.nodeid, begun.location, "teardown", "passed")
    assert made.user_properties == [("measured", 3.0)]
    assert getattr(made, "node", None) == "gw1"
    assert not hasattr(closing(pytest.TestReport(
        nodeid="t.py::y", location=("t.py", 2, "y"), keywords={}, outcome="passed",
        longrepr=None, when="call"), []), "node")
