"""The run's testcases in junit.xml, as the session sees them: the suite named for the
cluster with the run's properties, each testcase's classname from its case id (the same
from any directory), each testcase spooled to disk as it closes (junit_spool.py), the
cases never reached left out and one begun but never judged taken back, the timestamp in
UTC and the spooled testcases put back once pytest has written the file, and the suite's
properties at the end (report/junit_properties.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_cluster import __version__, internals
from pytest_cluster.evidence.tally import is_simulated
from pytest_cluster.report.junit_properties import suite_properties
from pytest_cluster.run.junit_spool import JunitSpool, closing, junit_in_utc

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pytest

    from pytest_cluster.contract import Spec
    from pytest_cluster.evidence.baseline.accepted import Baseline
    from pytest_cluster.evidence.plan import PlannedCase
    from pytest_cluster.evidence.sinks.results import EndLine
    from pytest_cluster.evidence.verdict import NodeVerdict


class JunitCases:
    """pytest's JUnit writer (--junitxml) fed and finished for one run; nothing where the
    run writes no junit.xml."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._spool: JunitSpool | None = None  # JUnit testcases on disk as they finish
        #: the cases begun and not yet torn down: case id -> its last report
        self._begun: dict[str, pytest.TestReport] = {}

    def start(self, spec: Spec) -> None:
        """The suite named for the cluster, with the run's first properties."""
        xml = internals.junit_writer(self.config)
        if xml is not None:
            xml.suite_name = spec.cluster.name
            xml.add_global_property("cluster", spec.cluster.name)
            xml.add_global_property("spec_sha256", spec.sha256)
            xml.add_global_property("simulated", str(is_simulated(spec)).lower())
            xml.add_global_property("tool_version", __version__)
            self._spool = JunitSpool(xml)

    def begin(self, report: pytest.TestReport) -> None:
        """A report of a case of ours, before JUnit reads it: its setup names the testcase;
        until its teardown, the case is begun."""
        case = getattr(report, "pytest_cluster_case", None)
        if case is None:
            return
        if report.when == "setup":  # it opens the case's testcase
            self._names(report, str(case[0]))
        if report.when == "teardown":
            self._begun.pop(str(case[0]), None)
        else:
            self._begun[str(case[0])] = report

    def opened(self, report: pytest.TestReport) -> Any:
        """The testcase a teardown report closes (spooled once JUnit has read it), or
        None."""
        if self._spool is not None and report.when == "teardown":
            return self._spool.open_reporter(report)
        return None

    def spool(self, testcase: Any) -> None:
        """A closed testcase (opened) written to disk, out of pytest's writer."""
        if testcase is not None and self._spool is not None:
            self._spool.spool(testcase)

    def not_reached(self, case: PlannedCase) -> None:
        """A case never reached is no testcase of junit.xml: JUnit counts the cases that
        ran, as the terminal and report.html do (the suite's `not_run` property counts the
        others, as results.jsonl's not_run lines); one Ctrl-C stopped inside, begun but
        never judged, has its testcase taken back."""
        begun = self._begun.pop(case.case_id, None)
        xml = internals.junit_writer(self.config)
        if begun is not None and xml is not None:
            internals.junit_forget(xml, begun)

    def log(self, reports: Iterable[pytest.TestReport]) -> None:
        """Reports no hook carried, to pytest's JUnit writer alone; each testcase closed
        is spooled, as those that ran."""
        xml = internals.junit_writer(self.config)
        if xml is None:
            return
        for made in reports:
            testcase = self.opened(made)
            internals.junit_log(xml, made)
            self.spool(testcase)

    def close_begun(self) -> None:
        """The cases that ran and were left in their teardown (a Ctrl-C): closed."""
        for begun in list(self._begun.values()):
            self.log([closing(begun, begun.user_properties)])
        self._begun.clear()

    def _names(self, report: pytest.TestReport, case_id: str) -> None:
        """JUnit classname from the case id: the same from any directory."""
        xml = internals.junit_writer(self.config)
        if xml is None:
            return
        path = case_id.split("::", 1)[0]
        reporter = internals.junit_reporter(xml, report)
        reporter.add_attribute("classname", path.removesuffix(".py").replace("/", "."))

    def status(self, end: EndLine, baseline: Baseline | None, coverage: str,
               verdicts: Iterable[NodeVerdict]) -> None:
        """The suite's properties the end record says (suite_properties)."""
        xml = internals.junit_writer(self.config)
        if xml is None:
            return
        for name, value in suite_properties(end, baseline, coverage, verdicts):
            xml.add_global_property(name, value)

    def put_back(self) -> None:
        """After pytest's JUnit writer: its timestamp in UTC, as every other time of the
        run (before the testcases go back in, while the file is small: at 1,024 nodes it
        is 200 MB after), then the spooled testcases put back in junit.xml."""
        xml = internals.junit_writer(self.config)
        if xml is not None:
            junit_in_utc(Path(xml.logfile))
        if self._spool is not None:
            spool, self._spool = self._spool, None
            spool.restore(Path(xml.logfile) if xml is not None else None)
