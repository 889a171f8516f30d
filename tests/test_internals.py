"""The internals of pytest, pytest-html and pytest-xdist that a run reaches for
(pytest_cluster/internals.py), each found where it is used, on the versions installed:
an upgrade that moves one fails here, naming it, not somewhere in a contract run."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster import internals

TEST = "def test_passes():\n    pass\n"


class Looks:
    """Looks for each internal at the moment the run uses it."""

    def __init__(self) -> None:
        self.found: dict[str, Any] = {}
        self.config: pytest.Config | None = None

    def pytest_configure(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        assert self.config is not None
        xml = internals.junit_writer(self.config)
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        html = internals.html_plugin(self.config)
        if report.when == "call":
            self.found.update({
                "junit writer": xml is not None,
                "junit testcase opened": internals.open_junit_reporter(xml, report)
                is not None,
                "junit testcase": internals.junit_reporter(xml, report) is not None,
                "junit testcases in order": len(internals.junit_reporters_in_order(xml)),
                "terminal keeps the passed report": report in internals.terminal_reports(
                    terminal, "passed"),
                "pytest-html plugin": html is not None,
                "pytest-html holds the reports": report.nodeid in getattr(html, "_reports",
                                                                           {}),
            })
        if report.when == "teardown" and html is not None:
            rows = getattr(getattr(html, "_report", None), "_data", {}).get("tests")
            self.found["pytest-html rows by case"] = isinstance(rows, dict)
            self.found["pytest-html counts outcomes"] = isinstance(
                getattr(type(html._report), "outcomes", None), property)
            internals.html_forget(html, report.nodeid)
            self.found["pytest-html let go"] = report.nodeid not in html._reports
            where = internals.html_path(html)
            self.found["pytest-html writes to"] = where.name if where is not None else None


def test_every_internal_is_where_the_run_reaches_for_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TEST)
    looks = Looks()
    before = int(time.time())
    result = pytester.runpytest("-p", "no:cacheprovider", "--junitxml=j.xml",
                                "--html=r.html", plugins=[looks])
    assert result.ret == pytest.ExitCode.OK
    assert looks.found == {
        "junit writer": True, "junit testcase opened": True, "junit testcase": True,
        "junit testcases in order": 1, "terminal keeps the passed report": True,
        "pytest-html plugin": True, "pytest-html holds the reports": True,
        "pytest-html rows by case": True, "pytest-html counts outcomes": True,
        "pytest-html let go": True, "pytest-html writes to": "r.html"}
    written = (pytester.path / "r.html").read_bytes()
    [generated] = internals.HTML_GENERATED.finditer(written)  # its local time, unzoned
    at = internals.html_generated_at(generated)
    assert at is not None and before <= at <= time.time()


INTERRUPTED = """
import pytest
from pytest_cluster import internals

begun = []

def pytest_runtest_logreport(report):
    if report.when == "setup" and report.nodeid.endswith("test_two"):
        begun.append(report)

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    internals.junit_forget(internals.junit_writer(session.config), begun[0])
"""


def test_the_junit_writer_forgets_a_testcase_begun(pytester: pytest.Pytester) -> None:
    """Ctrl-C inside test_two (its setup reported); its testcase taken back from the JUnit
    writer at the session's end, before it writes: no testcase, nothing counted for it."""
    pytester.makeconftest(INTERRUPTED)
    pytester.makepyfile("def test_one():\n    pass\n\n"
                        "def test_two():\n    raise KeyboardInterrupt\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--junitxml=j.xml")
    suite = ET.parse(pytester.path / "j.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "1"
    assert [case.get("name") for case in suite.findall("testcase")] == ["test_one"]


@pytest.mark.slow
def test_the_terminal_says_whether_it_lists_passed_cases(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TEST)
    for chars, lists in (("fE", False), ("A", True), ("p", True), ("P", True)):
        config = pytester.parseconfigure(f"-r{chars}")
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        assert internals.terminal_reads_every_report(terminal) is lists, chars
    for style, reads in (("times", True), ("progress", False), ("count", False)):
        config = pytester.parseconfigure("-rfE", "-o", f"console_output_style={style}")
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        assert internals.terminal_reads_every_report(terminal) is reads, style


@pytest.mark.slow
def test_an_xdist_worker_gets_what_the_controller_hands_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import json\nfrom pathlib import Path\nfrom pytest_cluster import internals\n"
        "def pytest_configure_node(node):\n"
        "    node.workerinput['handed'] = 'yes'\n"
        "def pytest_configure(config):\n"
        "    found = internals.worker_input(config)\n"
        "    name = 'worker.json' if found is not None else 'controller.json'\n"
        "    Path(name).write_text(json.dumps(found and found.get('handed')))\n")
    pytester.makepyfile(TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "1")
    assert result.ret == pytest.ExitCode.OK
    assert json.loads(Path(pytester.path / "worker.json").read_text()) == "yes"
    assert json.loads(Path(pytester.path / "controller.json").read_text()) is None


def test_without_junit_the_writer_is_none_and_dropping_it_is_harmless(
        pytester: pytest.Pytester) -> None:
    config = pytester.parseconfigure()
    assert internals.junit_writer(config) is None
    internals.drop_junit_writer(config)
    with_xml = pytester.parseconfigure("--junitxml=j.xml")
    assert internals.junit_writer(with_xml) is not None
    internals.drop_junit_writer(with_xml)
    assert internals.junit_writer(with_xml) is None


def test_the_terminal_s_progress_and_writer_are_where_derived_cases_reach(
        pytester: pytest.Pytester) -> None:
    config = pytester.parseconfigure()
    terminal: Any = config.pluginmanager.get_plugin("terminalreporter")
    shown = terminal._show_progress_info  # 'progress', 'count', ... or False
    assert shown
    with internals.no_progress(terminal):
        assert terminal._show_progress_info is False
    assert terminal._show_progress_info is shown
    terminal._tw.write("half a line")
    assert terminal._tw.width_of_current_line > 0
    internals.end_line(terminal)
    assert terminal._tw.width_of_current_line == 0


def test_an_item_s_location_is_a_cached_property_that_can_be_dropped(
        pytester: pytest.Pytester) -> None:
    item = pytester.getitem("def test_it(): pass", funcname="test_it")
    assert item.location[2] == "test_it"
    assert "location" in item.__dict__
    internals.forget_location(item)
    assert "location" not in item.__dict__ and item.location[2] == "test_it"


def test_a_finished_case_s_stand_in_says_what_its_item_said(
        pytester: pytest.Pytester) -> None:
    """The terminal's "times" progress reads the items' `location` (its file, its name)."""
    from pytest_cluster.run.memory import FinishedItem

    pytester.mkpydir("sub")
    module = pytester.path / "sub" / "test_it.py"
    module.write_text("import pytest\nclass TestIt:\n"
                      "    @pytest.mark.parametrize('x', ['a::b', 'c'])\n"
                      "    def test_it(self, x): pass\n", encoding="utf-8")
    items, _ = pytester.inline_genitems("sub")
    assert len(items) == 2
    for item in items:
        finished = FinishedItem(item.nodeid, item.location[0])
        assert finished.location[0] == item.location[0] == "sub/test_it.py"
        assert (finished.name, finished.location[2]) == (item.name, item.location[2])
    assert items[1].location[2] == "TestIt.test_it[c]"


WARN_AT = """\
import pytest
from pytest_cluster import internals

def pytest_configure(config):
    internals.warn_at(config, UserWarning("a slip"), "spec.yaml", 2)
"""


@pytest.mark.slow
@pytest.mark.parametrize(("args", "shown"), [((), True), (("-W", "error"), False)])
def test_a_warning_at_a_place_in_another_file_follows_the_run_s_filters(
        pytester: pytest.Pytester, args: tuple[str, ...], shown: bool) -> None:
    """pytest's filters (-W) apply to it as to any warning at configure time; shown, it
    is at its place, quoting that line."""
    pytester.makepyfile(TEST, warnat=WARN_AT)
    pytester.makefile(".yaml", spec="first: line\nsecond: line\n")
    pytester.syspathinsert()
    # a process of its own: in this one pytest_cluster is imported already, which pytest
    # warns of (it cannot rewrite its asserts), an error too under -W error
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "warnat", *args)
    if shown:
        result.assert_outcomes(passed=1, warnings=1)
        result.stdout.fnmatch_lines(["spec.yaml:2", "  spec.yaml:2: UserWarning: a slip",
                                     "    second: line"])
    else:
        assert result.ret == pytest.ExitCode.INTERNAL_ERROR
        result.stderr.fnmatch_lines(["*UserWarning: a slip"])
