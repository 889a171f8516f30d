"""pytest-html's hooks of a contract run (registered beside the session, on the controller):
the report's title; above pytest-html's table, a soak's account, the scorecard, the
baseline, the busbw charts and the latency heat map, each node's storage and latency
figures charted, and the evidence itself (each rendered
by its template in report/templates/); the table's Measured, Required, Reference and Fault
columns (results_table.html.j2); a passed contract check left out of the table (it
is a line of the scorecard's collapsed lists instead) but counted. The scorecard's passed
lists are written into report.html once pytest-html has written it, a piece at a time
(report/splice.py), and pytest-html's "Report generated on" line (local time, no zone; no
hook sets it) in UTC, as every other time of the run: "Report generated on
2026-11-27T05:06:56Z by"."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cluster import internals
from pytest_cluster.evidence.record.summary import is_simulated, measured_text
from pytest_cluster.evidence.verdict.faults import FAULT_KEYS
from pytest_cluster.report.bars import figures_html
from pytest_cluster.report.plots import interconnect_charts
from pytest_cluster.report.scorecard import PASSED_LISTS, passed_lists, scorecard_html
from pytest_cluster.report.sections import baseline_html, sealing_html
from pytest_cluster.report.splice import splice
from pytest_cluster.report.templates import macros
from pytest_cluster.units import utc

if TYPE_CHECKING:
    from pytest_cluster.run.session import ClusterSession

HTML_PLUGIN = "pytest-cluster-html"
PASSED_LISTS_MARK = re.compile(re.escape(PASSED_LISTS.encode("utf-8")))


def _soak(run: ClusterSession) -> str | None:
    """A soak's availability and credit (first: they are what a soak is for)."""
    if run.soak is None:
        return None
    return run.soak.html("[SIMULATED] " if is_simulated(run.spec) else "")


def _scorecard(run: ClusterSession) -> str:
    return scorecard_html(run.spec, run.end, run.verdicts, run.ledger.gathered(),
                          run.coverage_line(), run.ledger.kept)


def _baseline(run: ClusterSession) -> str:
    return baseline_html(run.baseline, run.after_checks.baseline_cases,
                         run.spec.baseline.tolerance,
                         run.baseline.notes(run.spec) if run.baseline else ())


def _charts(run: ClusterSession) -> str:
    return interconnect_charts(run.ledger.kept, run.ledger.latency)


def _figures(run: ClusterSession) -> str:
    """Each node's storage and latency figures against their requirement, charted."""
    return figures_html(run.ledger.figures)


def _inventory(run: ClusterSession) -> str:
    """What was tested (inventory.json), rendered when it was taken."""
    return run.after_checks.inventory_html


def _sealing(run: ClusterSession) -> str | None:
    """How the evidence is sealed."""
    if run.run_dir is None:
        return None
    return sealing_html([s.keyid for s in run.signers], str(run.run_dir))


def generated_in_utc(match: re.Match[bytes]) -> Iterator[bytes]:
    """pytest-html's "Report generated on DD-Mon-YYYY at HH:MM:SS by" (local time) as
    "Report generated on 2026-11-27T05:06:56Z by"; the time now if its date cannot be
    read (a locale's month names)."""
    at = internals.html_generated_at(match)
    yield f"Report generated on {utc(time.time() if at is None else at)} by".encode()


#: The report's sections above pytest-html's table, the one registry of them, in order:
#: each renders from the run's records through its template (report/templates/: HTML, or
#: None for no section). A new section is a function here and its line below.
SECTIONS: tuple[Callable[[ClusterSession], str | None], ...] = (
    _soak, _scorecard, _baseline, _charts, _figures, _inventory, _sealing)
#: The columns added to pytest-html's results table, after its Result and Test columns
#: (Fault: a failed case's code, what to do and who acts: evidence/verdict/faults.py).
COLUMNS = ("Measured", "Required", "Reference", "Fault")


class HtmlHooks:
    def __init__(self, session: ClusterSession) -> None:
        self.session = session

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list[str], summary: list[str],
                                    postfix: list[str]) -> None:
        for section in SECTIONS:
            text = section(self.session)
            if text:
                prefix.append(text)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None]:
        """After pytest-html wrote report.html: its time in UTC, and the passed lists where
        the scorecard left their place (a failure is the run's late failure, not a
        traceback)."""
        yield
        html_report = self.session.html_report()
        path = internals.html_path(html_report) if html_report is not None else None
        if path is None:
            return
        try:
            splice(path, internals.HTML_GENERATED, generated_in_utc, count=1)
            gathered = self.session.ledger.gathered()
            splice(path, PASSED_LISTS_MARK,
                   lambda _: (piece.encode("utf-8") for piece in passed_lists(
                       gathered.passed, gathered.references)), count=1)
        except Exception as exc:
            self.session.late_failure("report.html's passed lists written in", exc,
                                      session)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_report_title(self, report: Any) -> None:
        sim = " (SIMULATED)" if is_simulated(self.session.spec) else ""
        report.title = f"pytest-cluster: {self.session.spec.cluster.name}{sim}"

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        table = macros("results_table.html.j2")
        for at, name in enumerate(COLUMNS, start=2):
            cells.insert(at, str(table.heading(name)))

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        """pytest-html's table lists the checks that did not pass, in full; a passed
        contract check is one line of the scorecard's collapsed list instead (thousands of
        rows rendered by pytest-html's script take tens of seconds to open). It still
        counts among pytest-html's 'Passed'."""
        contract = hasattr(report, "pytest_cluster_case")
        if contract and report.passed and (
                report.when == "setup" or (report.when == "teardown" and not report.sections)):
            del cells[:]  # pytest-html shows nothing of it either: only its work is saved
            return
        props = dict(getattr(report, "user_properties", ()))
        contract = contract or "spec_key" in props
        if contract and report.when == "call" and report.passed:
            del cells[:]
            html_report = self.session.html_report()
            if html_report is not None:
                internals.html_count_passed(html_report)
            return
        table = macros("results_table.html.j2")
        cells[2:2] = [str(table.cell(measured_text(props), bool(props.get("simulated")))),
                      str(table.cell(str(props.get("requirement", "")))),
                      str(table.cell(str(props.get("reference", "")))),
                      str(table.fault(*(str(props.get(key, "")) for key in FAULT_KEYS)))]
