"""The controller's side of a run: results.jsonl as cases end, then the end record,
verdict.json, the terminal section and the JUnit suite properties (its HTML:
html_hooks.py; junit.xml's testcases: junit_cases.py; the seal at the end: sealed.py).

Registered only on the controller (never on pytest-xdist workers), only with --cluster.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from pytest_cluster import __version__, internals
from pytest_cluster.errors import clip
from pytest_cluster.evidence.record import derived_cases
from pytest_cluster.evidence.record.end import RunFacts, end_record, verdict_document
from pytest_cluster.evidence.record.ledger import Ledger
from pytest_cluster.evidence.record.plan import (
    PLAN_FILE,
    PLAN_KEY,
    NotChecked,
    Plan,
    selection,
    why_left_out,
)
from pytest_cluster.evidence.record.rundir import (
    evidence_line,
    outside,
    point_latest,
    remove_if_empty,
)
from pytest_cluster.evidence.record.summary import SIMULATED_BANNER, is_simulated
from pytest_cluster.evidence.sinks.results import (
    EndLine,
    ResultLine,
    ResultsWriter,
    RoundLine,
    RunLine,
    SoakEnd,
    makes_line,
    report_record,
)
from pytest_cluster.evidence.verdict.age import DEFAULT_VALID_FOR_S
from pytest_cluster.launchers.process import (
    hold_interrupts,
    release_interrupts,
    stop_everything,
)
from pytest_cluster.report.terminal import (
    NEEDS_A_SOAK,
    RunSummary,
    coverage_line,
    terminal_lines,
)
from pytest_cluster.run import disabling
from pytest_cluster.run.junit_cases import JunitCases
from pytest_cluster.run.lifecycle import run_launcher
from pytest_cluster.run.sealed import seal_and_say
from pytest_cluster.run.stash import VALID_FOR_KEY

if TYPE_CHECKING:
    from pytest_cluster.contract import Spec
    from pytest_cluster.evidence.baseline.accepted import Baseline
    from pytest_cluster.evidence.bundle.keys import Signer
    from pytest_cluster.evidence.record.derived_cases import Case
    from pytest_cluster.evidence.verdict.nodes import NodeVerdict
    from pytest_cluster.run.after_checks import AfterChecks

SESSION_PLUGIN = "pytest-cluster-session"
_UNKNOWN = object()
#: At most this many late failures are kept (a sink failing on every line is one story).
MOST_FAILURES = 20
#: Said once when Ctrl-C or SIGTERM arrives while the evidence is written (hold_interrupts).
FINISHING_EVIDENCE = ("pytest-cluster: finishing the run's evidence (results.jsonl, "
                      "junit.xml, verdict.json, report.html, the manifest); this signal is "
                      "noted and does not cut it short (SIGKILL would leave it unsealed)")


class SoakPart(Protocol):
    """What a soak adds to its own evidence (soak_driver.SoakDriver)."""

    def end_record(self) -> SoakEnd: ...

    def summary_lines(self) -> list[str]: ...

    def html(self, mark: str = "") -> str: ...


class ClusterSession:
    """Controller-only: the evidence of one run, in its own run directory."""

    def __init__(self, config: pytest.Config, spec: Spec, run_dir: Path | None,
                 cache_dir: Path, after_checks: AfterChecks, runs_checks: bool = True,
                 signers: tuple[Signer, ...] = (), accepted: Baseline | None = None) -> None:
        self.config = config
        self.baseline = accepted  # the run this one is compared with (--cluster-baseline)
        self.derived: list[Case] = []  # every derived case reported (baseline, soak)
        self.links_latest = True  # False: a soak's round (the soak's directory is latest)
        self.soak: SoakPart | None = None  # the soak this run drives (--cluster-soak)
        self.signers = signers  # who signs the manifest at the end
        self.cache_dir = cache_dir  # the probe results and the plan (the run's probes/)
        self.runs_checks = runs_checks  # False: --collect-only, --fixtures, ...
        self.spec = spec
        self.run_dir = run_dir
        self.ledger = Ledger(spec.cluster.nodes)  # what the end reads of the result lines
        self.writer: ResultsWriter | None = None
        self.run_line_sent = False  # results.jsonl's first line, before the first result
        self.started = time.time()
        self.end: EndLine | None = None
        self.verdicts: list[NodeVerdict] = []
        self.plan = Plan(known=False)
        self.evidence_written = False
        #: what failed once the checks had run (a report that could not be written, a
        #: hook that raised): said on the terminal and recorded in the manifest
        self.late_failures: list[str] = []
        self.collected_nothing = False
        self.latest_moved = False
        self._html: Any = _UNKNOWN
        self.junit = JunitCases(config)  # junit.xml's testcases, spooled as they finish
        #: inventory.json and the baseline's cases, once every check has run
        self.after_checks = after_checks
        self.holding = False  # Ctrl-C and SIGTERM held while the evidence is written

    # -- start ----------------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.junit.start(self.spec)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Ctrl-C or SIGTERM: no probe or rank launched keeps running on any node (the
        signal handler of launchers.process stopped them already; this is the backstop)."""
        stop_everything()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["cluster_cache_dir"] = str(self.cache_dir)

    # -- each case --------------------------------------------------------------------------

    def _write(self, record: Mapping[str, Any]) -> None:
        """A line of results.jsonl: every sink of pytest_cluster_result_line gets it, the
        run's results.jsonl among them (below); the run line goes first."""
        hook = self.config.hook.pytest_cluster_result_line
        if not self.run_line_sent:
            self.run_line_sent = True
            hook(config=self.config, record=self._run_record())
        hook(config=self.config, record=record)

    @pytest.hookimpl(tryfirst=True)
    def pytest_cluster_result_line(self, record: Mapping[str, Any]) -> None:
        """The run's results.jsonl, written line by line (a sink like any other, first)."""
        if self.run_dir is None:
            return
        if self.writer is None:
            self.writer = ResultsWriter(self.run_dir / "results.jsonl")
            # reports/latest/results.jsonl can be followed while the run goes on
            self.latest_moved = self.links_latest and point_latest(self.run_dir)
        self.writer.write(record)

    def write_line(self, record: ResultLine | RoundLine) -> None:
        """A line of results.jsonl that is no case of this run (a soak's rounds)."""
        self._write(record)

    def report_derived(self, cases: list[Case]) -> None:
        """Cases derived from the whole run, reported now; counted apart from the
        contract's checks."""
        self.derived.extend(cases)
        derived_cases.emit(self.config, cases, is_simulated(self.spec))

    def _run_record(self) -> RunLine:
        spec = self.spec
        return {"type": "run", "tool_version": __version__, "cluster": spec.cluster.name,
                "spec": spec.file, "spec_sha256": spec.sha256,
                "nodes": list(spec.cluster.nodes), "launcher": spec.cluster.launcher,
                "simulated": is_simulated(spec), "started_at": self.started,
                "spec_warnings": [str(warning) for warning in spec.warnings],
                "run_dir": str(self.run_dir),
                **({"extends": spec.extends} if spec.extends else {})}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, None, None]:
        """Before every other reader (JUnit, pytest-html, the terminal): the JUnit names
        and the result line, written at once (memory.py drops the case's bulk after them
        all)."""
        self.junit.begin(report)
        if makes_line(report):
            record = report_record(report)
            if record is not None:
                self._write(record)
                self.ledger.add(record)
        testcase = self.junit.opened(report)
        try:
            return (yield)
        finally:
            self.junit.spool(testcase)

    # -- after the checks: the inventory ------------------------------------------------------

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """Once every check has run (on every worker): inventory.json, then the cases
        derived from the whole run. After Ctrl-C it holds what was already probed, and
        asks no node for more. The outermost wrapper: the terminal has written its final
        progress before the derived cases are reported."""
        finished = False
        try:
            result = yield
            finished = True
            return result
        finally:
            if not finished:  # interrupted: a second Ctrl-C cannot cut the evidence short
                self._hold_interrupts()
            if self.runs_checks and not self.collected_nothing and self.run_dir is not None:
                after = self.after_checks
                taken = after.take_inventory(self.spec, self.cache_dir,
                                             run_launcher(self.config), self.run_dir,
                                             may_probe=finished)
                if finished and self.baseline is not None and taken is not None:
                    plan = self.config.stash.get(PLAN_KEY, None) or Plan.read(self.cache_dir)
                    self.report_derived(after.compare_with_baseline(
                        self.baseline, taken, self.run_dir / "results.jsonl",
                        self.spec.baseline.tolerance, self.spec.cluster,
                        plan.checked_nodes()))
            self._hold_interrupts()  # the inventory asked its nodes (a Ctrl-C stops that)

    def _hold_interrupts(self) -> None:
        """From now until the run's directory is sealed (pytest_unconfigure), Ctrl-C and
        SIGTERM do not cut the evidence short: said once, noted, and the run ends as it
        was going to (interrupted, exit 2, after a first Ctrl-C)."""
        if self.runs_checks and self.run_dir is not None and not self.holding:
            self.holding = True
            hold_interrupts(FINISHING_EVIDENCE)

    # -- end ----------------------------------------------------------------------------------

    def late_failure(self, what: str, exc: BaseException,
                     session: pytest.Session | None = None) -> None:
        """`what` failed after the checks ran (`exc` says why): kept for the manifest and
        the terminal, and the run's exit status made INTERNAL_ERROR; the evidence written
        so far is sealed all the same."""
        said = clip(f"{what}: {type(exc).__name__}: {exc}", 500)
        if said not in self.late_failures and len(self.late_failures) < MOST_FAILURES:
            self.late_failures.append(said)
        if session is not None:
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.plan = self.config.stash.get(PLAN_KEY, None) or Plan.read(self.cache_dir)
        if not self.runs_checks or self.collected_nothing:
            return
        self._hold_interrupts()  # interrupted before the checks' loop (collection)
        try:
            self._finish(session, int(exitstatus))
        except Exception as exc:  # whatever is written so far is sealed, the failure said
            self.late_failure("the run's end records (results.jsonl, verdict.json)", exc,
                              session)
        finally:
            self.evidence_written = self.run_dir is not None

    @pytest.hookimpl(wrapper=True, trylast=True, specname="pytest_sessionfinish")
    def pytest_sessionfinish_guard(self, session: pytest.Session) -> Generator[None]:
        """Innermost around every plugin's pytest_sessionfinish (pytest-html writing
        report.html, pytest's JUnit writer, ours above): one that raises (a full disk, a
        file made unwritable since the start) is a late failure, said and recorded, not a
        traceback that leaves the run's directory unsealed."""
        try:
            yield
        except Exception as exc:
            if not self.runs_checks or self.run_dir is None:
                raise
            self.late_failure("writing the reports at the run's end (report.html, "
                              "junit.xml)", exc, session)

    def _finish(self, session: pytest.Session, exitstatus: int) -> None:
        """The run's end: the checks not reached, each node's verdict, the end record,
        verdict.json and JUnit's properties."""
        ran = set(self.ledger.ran)  # a copy: the not-run lines below join the ledger
        for case in self.plan.cases:
            if case.case_id in self.plan.selected and case.case_id not in ran:
                record: ResultLine = {"type": "result", "case": case.case_id, "clause": case.clause,
                          "spec_key": case.clause, "node": case.node, "outcome": "not_run",
                          "message": "not reached: the run ended before this check"}
                self.ledger.add(record)
                self._write(record)
                self.junit.not_reached(case)
        self.junit.close_begun()  # ran, left in its teardown
        self.verdicts = self.ledger.verdicts(self.plan, why_left_out(selection(self.config)))
        hook = self.config.hook
        try:
            for verdict in self.verdicts:
                hook.pytest_cluster_node_verdict(config=self.config,
                                                 verdict=verdict.to_json())
        except Exception as exc:  # a sink's failure costs no evidence of ours
            self.late_failure("a pytest_cluster_node_verdict hook", exc, session)
        self.end = self._end_record(exitstatus, ran)
        self._write(self.end)
        try:
            hook.pytest_cluster_run_ended(config=self.config, end=self.end)
        except Exception as exc:
            self.late_failure("a pytest_cluster_run_ended hook", exc, session)
        if self.writer is not None:
            self.writer.close()
        if self.run_dir is not None:
            self._write_verdict()
        if self.end is not None:
            self.junit.status(self.end, self.baseline, self.coverage_line(), self.verdicts)

    @pytest.hookimpl(hookwrapper=True, specname="pytest_sessionfinish")
    def pytest_sessionfinish_junit(self, session: pytest.Session) -> Generator[None]:
        """After pytest's JUnit writer: the spooled testcases put back in junit.xml."""
        yield
        try:
            self.junit.put_back()  # its timestamp in UTC too
        except Exception as exc:
            self.late_failure("junit.xml's testcases put back", exc, session)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not session.items:
            self._write_nothing()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not ids:
            self._write_nothing()

    def _write_nothing(self) -> None:
        """Nothing was collected: no evidence, and no empty run directory (decided before
        the run, while pytest-html and JUnit can still be told not to write)."""
        self.collected_nothing = True
        if self.run_dir is None:
            return
        html_report = self.html_report()
        if html_report is not None:
            self.config.pluginmanager.unregister(html_report)
            self._html = None
        internals.drop_junit_writer(self.config)
        with contextlib.suppress(FileNotFoundError):
            (self.cache_dir / PLAN_FILE).unlink()
        remove_if_empty(self.run_dir)
        self.run_dir = None

    def _end_record(self, exit_code: int, ran: set[str]) -> EndLine:
        disabled, expired = disabling.entries(self.config, self.ledger.disabled)
        return end_record(RunFacts(
            spec=self.spec, plan=self.plan, ledger=self.ledger, ran=ran,
            verdicts=self.verdicts, exit_code=exit_code, started=self.started,
            selection=selection(self.config), derived=self.derived,
            not_checked=self._needs_a_soak(), baseline=self.baseline,
            baseline_cases=self.after_checks.baseline_cases,
            soak=self.soak.end_record() if self.soak is not None else None,
            disabled=disabled, disabled_expired=expired))

    def _write_verdict(self) -> None:
        assert self.run_dir is not None and self.end is not None
        document = verdict_document(self.spec, self.end, self.verdicts, self.ledger,
                                    self.run_dir.name,
                                    self.config.stash.get(VALID_FOR_KEY, DEFAULT_VALID_FOR_S))
        path = self.run_dir / "verdict.json"
        path.write_text(json.dumps(document, indent=1, sort_keys=True, allow_nan=False),
                        encoding="utf-8")

    def coverage_line(self) -> str:
        return coverage_line(self.end)

    def html_report(self) -> Any:
        """pytest-html's report object, or None; looked up once (it is asked for every
        case)."""
        if self._html is _UNKNOWN:
            self._html = internals.html_plugin(self.config)
        return self._html

    # -- terminal -----------------------------------------------------------------------------

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        write = terminalreporter.write_line
        terminalreporter.section("pytest-cluster")
        if is_simulated(self.spec):
            write(SIMULATED_BANNER, yellow=True, bold=True)
        for warning in self.spec.warnings:
            write(f"spec warning: {warning}", yellow=True)
        for line in self.summary_lines():
            red = line.startswith(("INCOMPLETE", "  REJECTED", "  UNREACHABLE"))
            write(line, red=red, bold=line.startswith("INCOMPLETE"),
                  yellow=line.startswith(("disabled", "warning", "  baseline warning")))

    def summary_lines(self) -> list[str]:
        """The terminal's section (report/terminal.py writes it from these facts)."""
        evidence = (self._evidence_line(self.run_dir)
                    if self.run_dir is not None and self.evidence_written else None)
        return terminal_lines(RunSummary(
            spec=self.spec, end=self.end, runs_checks=self.runs_checks,
            verdicts=tuple(self.verdicts), cluster_failures=self.ledger.cluster_failures(),
            soak_lines=self.soak.summary_lines() if self.soak is not None else None,
            baseline=self.baseline, coverage=self.coverage_line(),
            not_in_contract=tuple(sorted(set(self.plan.left_out))),
            inventory_error=self.after_checks.inventory_error, evidence=evidence,
            findings=tuple(self.ledger.findings)))

    def _evidence_line(self, run_dir: Path) -> str:
        return evidence_line(run_dir, self.latest_moved, self._elsewhere(run_dir))

    def _elsewhere(self, run_dir: Path) -> list[str]:
        """Reports put outside the run's directory by --junitxml or --html: not in its
        manifest."""
        return outside(run_dir, (self.config.option.xmlpath,
                                 getattr(self.config.option, "htmlpath", None)))

    def _needs_a_soak(self) -> list[NotChecked]:
        """The sla: section, in a run that is no soak: given, but not checked."""
        if self.spec.sla is None or self.soak is not None:
            return []
        return [{"clause": "sla", "why": NEEDS_A_SOAK}]

    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """The run's directory sealed, whatever failed before (first: a later plugin's
        unconfigure that raises cannot stop it)."""
        try:
            self.ledger.close()
            if self.writer is not None:
                self.writer.close()
        except Exception as exc:
            self.late_failure("closing results.jsonl", exc)
        finally:
            try:
                if self.run_dir is not None and self.evidence_written:
                    self._seal(self.run_dir)
                if self.run_dir is None:
                    shutil.rmtree(self.cache_dir, ignore_errors=True)
            finally:
                if self.holding:
                    self.holding = False
                    release_interrupts()

    def _seal(self, run_dir: Path) -> None:
        """Last: the run's directory sealed (sealed.py)."""
        end = self.end  # the run's times as every other view says them
        times = ((end["started_at"], end["ended_at"]) if end is not None
                 else (self.started, time.time()))
        seal_and_say(self.config, self.spec, run_dir, times, end, self.verdicts,
                     self._elsewhere(run_dir), self.late_failures, self.signers)
