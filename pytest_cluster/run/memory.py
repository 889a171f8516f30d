"""A run's memory does not grow with its cases: each contract case's reports lose their
bulk once every reader has taken what it needs (a plugin beside the session, on the
controller; what it reaches inside pytest and pytest-html is in internals.py).

JUnit reads the teardown report's properties, pytest-html reads all three reports at
teardown, results.jsonl was written at the call (session.py). Then their properties (the
raw payloads) are dropped and pytest-html lets go of them; a passed setup or teardown with
no output leaves the terminal's list of reports at once (it prints nothing for it, and its
failure summary scans that list once per failed case), and a passed call leaves a token
there to be counted, unless -rp, -rP or -rA asks the terminal to list the passed cases or
its "times" progress reads them all.

The items go too, in every process that runs them (module hooks, beside the plugin): pytest
keeps each collected item in `session.items`, and the terminal each deselected one in its
list, until the run ends - 3 KB each, 600 MB at 1,024 nodes x 8 GPUs. A deselected item is
counted by a token instead; a contract case that has run is replaced in `session.items` by
a `FinishedItem` that keeps its node id, name and location, so that it is freed.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from types import MappingProxyType
from typing import Any

import pytest

from pytest_cluster import internals
from pytest_cluster.evidence.record.plan import CASE_KEY
from pytest_cluster.evidence.sinks.results import makes_line
from pytest_cluster.run.stash import SPEC_KEY

MEMORY_PLUGIN = "pytest-cluster-memory"


class _Counted:
    """What the terminal keeps of a passed case when it only counts it."""

    count_towards_summary = True


COUNTED = _Counted()
#: A finished item's keywords, shared: nothing is matched against it any more.
_NO_KEYWORDS: dict[str, object] = {}
_NO_MATCHES: set[str] = set()
#: A finished item's user properties, shared: its reports were read.
_NO_PROPERTIES: list[tuple[str, object]] = []
#: Where a contract case stands in `session.items`.
_INDEX_KEY = pytest.StashKey[int]()


class FinishedItem:
    """What `session.items` keeps of a contract case that has run: its node id, name and
    location (pytest's terminal reads the items' locations for its "times" progress), and
    the empty properties and keywords a finished case had already let go of."""

    __slots__ = ("nodeid", "path")
    user_properties: tuple[tuple[str, object], ...] = ()
    keywords: Mapping[str, object] = MappingProxyType({})

    def __init__(self, nodeid: str, path: str) -> None:
        self.nodeid = nodeid
        self.path = path  # its location's file, relative to the rootdir (one string each)

    def _names(self) -> tuple[str, str]:
        """(class::function, [its parameters]): an id may hold '::' (its own text)."""
        head, bracket, params = self.nodeid.partition("::")[2].partition("[")
        return head, bracket + params

    @property
    def name(self) -> str:
        head, params = self._names()
        return head.rpartition("::")[2] + params

    @property
    def location(self) -> tuple[str, int | None, str]:
        head, params = self._names()
        return self.path, None, head.replace("::", ".") + params

    def __repr__(self) -> str:
        return f"<FinishedItem {self.nodeid}>"


@pytest.hookimpl(trylast=True)
def pytest_deselected(items: list[pytest.Item]) -> None:
    """After the terminal has listed them: it counts the deselected items of a contract
    run, so it keeps tokens instead."""
    if not items or items[0].config.stash.get(SPEC_KEY, None) is None:
        return
    terminal = items[0].config.pluginmanager.get_plugin("terminalreporter")
    kept = internals.terminal_reports(terminal, "deselected")
    for index in range(max(0, len(kept) - len(items)), len(kept)):  # it added them last
        if isinstance(kept[index], pytest.Item):
            kept[index] = COUNTED


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Each contract case's place in `session.items` (the order it runs in, or the index
    pytest-xdist asks for it by)."""
    if session.config.stash.get(SPEC_KEY, None) is None:
        return
    for index, item in enumerate(session.items):
        if CASE_KEY in item.stash:
            item.stash[_INDEX_KEY] = index


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[
        None, object, object]:
    """Once a contract case's reports are made and read (results.jsonl, JUnit, ...), the
    run lets go of its item: pytest's loop only looks ahead."""
    try:
        return (yield)
    finally:
        let_go(item)


def let_go(item: pytest.Item) -> None:
    """A contract case that has run: what it recorded, its keywords (read by -k and its
    reports only) and its cached location are dropped, and `session.items` keeps a
    FinishedItem in its place."""
    index = item.stash.get(_INDEX_KEY, None)
    if index is None:
        return
    item.user_properties = _NO_PROPERTIES
    item.keywords = _NO_KEYWORDS
    item.extra_keyword_matches = _NO_MATCHES
    items = item.session.items
    if index < len(items) and items[index] is item:
        stand_in = FinishedItem(item.nodeid, item.location[0])
        items[index] = stand_in  # type: ignore[call-overload]
    internals.forget_location(item)


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
        if not report.passed or internals.terminal_reads_every_report(terminal):
            pass
        elif report.when != "call" and not report.sections:
            kept = internals.terminal_reports(terminal, "")
            if kept and kept[-1] is report:
                kept.pop()
        elif report.when == "call":
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
