"""A run's memory does not grow with its cases: each contract case's reports lose their
bulk once every reader has taken what it needs (a plugin beside the session, on the
controller; what it reaches inside pytest and pytest-html is in internals.py).

JUnit reads the teardown report's properties, pytest-html reads all three reports at
teardown, results.jsonl was written at the call (session.py). Then their properties (the
raw payloads) are dropped and pytest-html lets go of them; a passed setup or teardown with
no output leaves the terminal's list of reports at once (it prints nothing for it, and its
failure summary scans that list once per failed case), and a passed call leaves a token
there to be counted, unless -rp, -rP or -rA asks the terminal to list the passed cases.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import pytest

from pytest_cluster import internals
from pytest_cluster.evidence.results import makes_line

MEMORY_PLUGIN = "pytest-cluster-memory"


class _Counted:
    """What the terminal keeps of a passed case when it only counts it."""

    count_towards_summary = True


COUNTED = _Counted()


class CaseMemory:
    def __init__(self, config: pytest.Config, html_report: Callable[[], Any]) -> None:
        self.config = config
        self.html_report = html_report  # pytest-html's report object, or None (the session's)
        self._open: dict[str, list[pytest.TestReport]] = {}  # a case's reports until teardown

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, None, None]:
        """After every reader: the case's bulk dropped once its teardown has been read."""
        ours = (report.nodeid in self._open or makes_line(report)
                or getattr(report, "pytest_cluster_case", None) is not None)
        try:
            return (yield)
        finally:
            if ours:
                self._drop_bulk(report)

    def _drop_bulk(self, report: pytest.TestReport) -> None:
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if report.passed and report.when != "call" and not report.sections:
            kept = internals.terminal_reports(terminal, "")
            if kept and kept[-1] is report:
                kept.pop()
        elif report.passed and report.when == "call" and \
                not internals.terminal_lists_passed(terminal):
            kept = internals.terminal_reports(terminal, "passed")
            if kept and kept[-1] is report:
                kept[-1] = COUNTED  # the terminal only counts it
        if report.when != "teardown":
            self._open.setdefault(report.nodeid, []).append(report)
            return
        for each in (*self._open.pop(report.nodeid, ()), report):
            each.user_properties = []
            if each.passed:  # the terminal keeps it only to count it
                each.keywords = {}
        html_report = self.html_report()
        if html_report is not None:
            internals.html_forget(html_report, report.nodeid)
