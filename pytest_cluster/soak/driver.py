"""The soak's driver, in the process the user started (soak.py says what a soak is).

Instead of running the collected cases itself, it runs the same command line as rounds,
each a child pytest run writing its own sealed evidence into SOAK/rounds/round-NNNN,
until the time or the round count is reached, each from the spec the soak started with
(pinned in SOAK/spec.yaml: an edit of the user's file mid-soak is said, never used).
After each round its result lines are copied into the soak's results.jsonl with the
round's number and UTC time, and a line is printed: round k, elapsed, time left, nodes
failing so far. Once the rounds end (their number, their time, or Ctrl-C or SIGTERM,
which stop the round in progress as a run is stopped and keep it), every collected case
is reported once over all rounds, then the cases only the rounds together decide: each
node's availability (and the SLA credit: availability.py), the counters that must not
grow, the figures that must stay steady. A soak that ended before all its rounds ran
(Ctrl-C, SIGTERM, a round that could not start) exits 2, INCOMPLETE.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from pytest_cluster.evidence.record.plan import CASE_KEY
from pytest_cluster.evidence.sinks.results import (
    COMPLETE,
    INTERRUPTED,
    PARTIAL,
    ResultLine,
    RoundLine,
    SoakEnd,
)
from pytest_cluster.evidence.verdict.sla import (
    FAILED,
    UNREACHABLE,
    NodeAvailability,
    Settlement,
    settle,
)
from pytest_cluster.evidence.verdict.timelines import Round, Timelines, clock, timelines
from pytest_cluster.report.soak import soak_html
from pytest_cluster.sim import round as round_env
from pytest_cluster.soak import rounds as soak
from pytest_cluster.soak import tally
from pytest_cluster.soak.availability import (
    NO_SLA,
    NOT_OBSERVED,
    SLA_NOT_JUDGED,
    availability_cases,
    availability_lines,
    observed,
)
from pytest_cluster.soak.case_reports import emit
from pytest_cluster.soak.round_process import noting_signals, stop_round
from pytest_cluster.units import utc

if TYPE_CHECKING:
    from pytest_cluster.contract import Spec
    from pytest_cluster.evidence.record.derived_cases import Case

SOAK_PLUGIN = "pytest-cluster-soak"


class Session(Protocol):
    """What the soak needs of the run's session (run/session.ClusterSession): a line
    written to results.jsonl, the derived cases reported, and the soak it drives."""

    soak: Any

    def write_line(self, record: ResultLine | RoundLine) -> None: ...

    def report_derived(self, cases: list[Case]) -> None: ...


class SoakStopped(Exception):
    """A round could not run at all: the soak ends, saying why (`why`: 'round 2 left no
    results (exit status 4)'; `log`: where the round's log is and what it said last;
    `code`: the round's exit status)."""

    def __init__(self, why: str, log: str = "", code: int | None = None) -> None:
        super().__init__(f"{why}; {log}" if log else why)
        self.why, self.log, self.code = why, log, code


class SoakDriver:
    def __init__(self, config: pytest.Config, spec: Spec, soak_dir: Path,
                 duration_s: float | None, max_rounds: int | None,
                 session_plugin: Session) -> None:
        self.config = config
        self.spec = spec
        self.soak_dir = soak_dir
        self.duration_s = duration_s
        self.max_rounds = max_rounds
        self.session_plugin = session_plugin
        self.rounds: list[Round] = []
        # what is kept of the rounds' lines and probes
        self.tally = tally.Tally(spec.fabric.flap_s if spec.fabric is not None else 30.0)
        self.started = time.time()
        self.earlier_s = 0.0  # the soak's time in rounds of earlier sessions (resumed)
        self.firsts: set[int] = set()  # the rounds a resumed session began with
        self.availability: list[NodeAvailability] = []
        self.settlement: Settlement | None = None
        self.stopped: SoakStopped | None = None  # a round that could not start
        self.pinned = soak_dir / soak.SPEC_FILE  # the spec the rounds run (begin)
        self.spec_changed = ""  # the spec file's edit since the soak began, as said

    # -- the state kept between sessions ---------------------------------------------------

    def begin(self) -> None:
        """The spec pinned (SOAK/spec.yaml: the rounds run it); soak.json written (a new
        soak) or read (resumed); earlier rounds read back; a resumed soak marks the round
        this session begins with (soak.begin_session)."""
        path = self.soak_dir / soak.SOAK_FILE
        self.pinned = soak.pin_spec(self.soak_dir, self.spec.text, self.spec.sha256)
        if path.is_file():
            known = soak.read_marker(path)  # checked when the soak was resumed
            self.duration_s = self.duration_s or known.get("duration_s")
            self.max_rounds = self.max_rounds or known.get("max_rounds")
        else:
            path.write_text(json.dumps({
                "cluster": self.spec.cluster.name, "spec_sha256": self.spec.sha256,
                "started_at": self.started, "started_utc": utc(self.started),
                "duration_s": self.duration_s, "max_rounds": self.max_rounds}, indent=1,
                sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")
        numbers = soak.round_numbers(self.soak_dir)
        if numbers:
            soak.begin_session(self.soak_dir, soak.next_round(self.soak_dir))
        self.firsts = soak.session_firsts(self.soak_dir)
        for number in numbers:
            self._take(number)
        self.earlier_s = self.timelines().observed_s

    def timelines(self) -> Timelines:
        """The nodes' timelines over the rounds so far (the pause between two sessions not
        observed)."""
        return timelines(self.rounds, firsts=self.firsts)

    def _round_dir(self, number: int) -> Path:
        return self.soak_dir / soak.ROUNDS_DIR / soak.round_name(number)

    # -- the rounds --------------------------------------------------------------------------

    def elapsed(self) -> float:
        return self.earlier_s + (time.time() - self.started)

    def more(self) -> bool:
        """Whether another round starts: the duration bounds when a round may start (the
        round under way runs to its end), and the soak's first round always starts, as a
        burn-in's first pass does, so a soak never ends having checked nothing."""
        if self.max_rounds is not None and len(self.rounds) >= self.max_rounds:
            return False
        return self.duration_s is None or not self.rounds or \
            self.elapsed() < self.duration_s

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            raise session.Interrupted(f"{session.testsfailed} error(s) during collection")
        if session.config.option.collectonly:
            return True
        interrupted, stopped = False, None
        try:
            self.begin()
            while self.more():
                self.check_spec()
                self.run_round(soak.next_round(self.soak_dir))
        except KeyboardInterrupt:
            interrupted = True
        except SoakStopped as exc:
            stopped = exc
            self.stopped = exc
            session.shouldstop = f"soak stopped: {exc}"
        finally:
            self.report(session)
        if interrupted:
            raise KeyboardInterrupt("the soak was stopped; every finished round is kept")
        if stopped is not None and not self.rounds:  # nothing was checked: never exit 0
            code = stopped.code if stopped.code in (
                pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR) \
                else pytest.ExitCode.INTERNAL_ERROR
            pytest.exit(f"the soak checked nothing: its first round left no results (exit "
                        f"status {code})", returncode=code)
        if stopped is not None:  # the rounds before it are kept: a soak cut short
            pytest.exit(f"the soak stopped before all its rounds ran: {stopped.why}",
                        returncode=pytest.ExitCode.INTERRUPTED)
        return True

    def run_round(self, number: int) -> None:
        logs = self.soak_dir / soak.LOGS_DIR
        logs.mkdir(exist_ok=True)
        argv = soak.round_argv(sys.executable, self.config.invocation_params.args,
                               self.soak_dir / soak.ROUNDS_DIR, number, self.pinned)
        env = {**os.environ, round_env.ENV: str(number)}
        log_path = logs / f"{soak.round_name(number)}.log"
        with log_path.open("x", encoding="utf-8") as log:
            child: subprocess.Popen[bytes] | None = None
            try:
                # its own session: Ctrl-C reaches the soak, which stops the round exactly
                # once; a Ctrl-C or SIGTERM while it is started waits until the soak holds
                # it (raised inside Popen, it would lose the child, which ran on alone)
                with noting_signals() as noted:
                    child = subprocess.Popen(argv, cwd=self.config.invocation_params.dir,
                                             env=env, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True)
                for signum in noted:
                    signal.raise_signal(signum)
                code = child.wait()
            except KeyboardInterrupt:
                if child is None:
                    raise
                stop_round(child)
                # a round stopped before it wrote anything (Ctrl-C as it started) is no
                # round that could not start: the soak was interrupted, and says so
                with contextlib.suppress(SoakStopped):
                    self._finish_round(number, log_path, child.returncode)
                raise
        self._finish_round(number, log_path, code)

    def check_spec(self) -> None:
        """Before each round: whether the spec file the soak was started with still holds
        the spec it pinned. An edit is said once (the terminal, the end record) and never
        used: the rounds go on with the pinned copy, so that the soak checks one contract."""
        if self.spec_changed:
            return
        given = Path(self.config.invocation_params.dir, self.spec.file)
        found = soak.file_sha256(given)
        if found == self.spec.sha256:
            return
        what = "can no longer be read" if found is None else \
            f"changed since the soak started (sha256 {found[:16]}...)"
        self.spec_changed = (f"{self.spec.file} {what}: the rounds go on with the spec the "
                             f"soak started with (sha256 {self.spec.sha256[:16]}...), "
                             f"{self.pinned}; the edit is not used")
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.ensure_newline()
            terminal.write_line(f"soak: {self.spec_changed}", yellow=True)

    def _finish_round(self, number: int, log_path: Path, code: int | None) -> None:
        found = self._take(number)
        if found is None:
            tail = " / ".join(log_path.read_text(encoding="utf-8", errors="replace")
                              .strip().splitlines()[-3:])
            raise SoakStopped(f"round {number} left no results (exit status {code})",
                              f"see {log_path}: {tail[-600:]}", code)
        self._progress(found)

    def _take(self, number: int) -> Round | None:
        """A round's directory read once: tallied, its lines copied, then let go."""
        path = self._round_dir(number)
        read = soak.read_round(path, number)
        if read is None:
            return None
        found, results = read
        self.rounds.append(found)
        fabric_spec = self.spec.fabric
        nics = tally.nic_readings(path, fabric_spec.devices) if fabric_spec is not None \
            else None
        self.tally.add(number, found.started, results, tally.gpu_payloads(path),
                       tally.gpu_payloads(path, "gpu_perf"), nics)
        self._copy(found, results)
        return found

    def _copy(self, found: Round, results: list[ResultLine]) -> None:
        """The round's result lines that did not pass into the soak's results.jsonl, with
        its number and UTC time, then a line for the round itself (every line of the round
        stays in its own sealed results.jsonl, which the round line names: copying the
        passed ones too would write a 48-hour soak's lines twice)."""
        write = self.session_plugin.write_line
        for record in results:
            if record.get("outcome") == "passed":
                continue
            at = record.get("finished_at")
            copied: ResultLine = {**record, "type": "round_result", "round": found.number,
                                  "utc": utc(float(at)) if isinstance(at, (int, float))
                                  else None}
            write(copied)
        by_state: dict[str, list[str]] = {}
        for node, state in found.states.items():
            by_state.setdefault(state, []).append(node)
        line: RoundLine = {"type": "round", "round": found.number, "status": found.status,
                           "started_at": found.started, "ended_at": found.ended,
                           "started_utc": utc(found.started), "ended_utc": utc(found.ended),
                           "counts": found.counts, "nodes": by_state,
                           "run_dir": str(found.path.relative_to(self.soak_dir)),
                           "nccl_ras": soak.ras_summaries(results)}
        write(line)
        self.config.hook.pytest_cluster_soak_round(config=self.config, record=line)

    def _progress(self, found: Round) -> None:
        failing: dict[str, int] = {}
        for each in self.rounds:
            for node, state in each.states.items():
                if state in (FAILED, UNREACHABLE):
                    failing.setdefault(node, each.number)
        left = ("" if self.duration_s is None else
                f", left {clock(max(0.0, self.duration_s - self.elapsed()))}")
        of = f" of {self.max_rounds}" if self.max_rounds else ""
        names = ", ".join(f"{node} (since round {k})" for node, k in list(failing.items())[:8])
        more = f" and {len(failing) - 8} more" if len(failing) > 8 else ""
        counts = found.counts
        line = (f"soak round {found.number}{of}: {found.status}, {counts.get('passed', 0)} "
                f"passed, {counts.get('failed', 0) + counts.get('error', 0)} failed in "
                f"{clock(found.ended - found.started)}; elapsed "
                f"{clock(self.elapsed())}{left}; nodes failing so far: "
                f"{(names + more) if failing else 'none'}")
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.ensure_newline()
            terminal.write_line(line, red=bool(failing), green=not failing)
        self._so_far()

    def _so_far(self) -> None:
        """Each node's availability and the credit owed so far, to the sinks
        (pytest_cluster_soak_progress: --cluster-metrics rewrites its file)."""
        sla = self.spec.sla or NO_SLA
        availability, settlement = self._settle()
        self.config.hook.pytest_cluster_soak_progress(
            config=self.config, rounds=len(self.rounds),
            availability={found.node: found.availability for found in availability
                          if found.window_s > 0},
            credit=str(settlement.owed) if observed(availability) else "",
            currency=sla.currency)

    # -- the soak's cases ---------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True, tryfirst=True, specname="pytest_runtestloop")
    def pytest_runtestloop_derived(self, session: pytest.Session) -> Generator[
            None, object, object]:
        """Once the terminal has written its final progress: the cases only the rounds
        together decide (after Ctrl-C too, over the rounds kept)."""
        try:
            return (yield)
        finally:
            if self.rounds:
                self.session_plugin.report_derived(self.derived())

    def report(self, session: pytest.Session) -> None:
        """Every collected case once over the rounds."""
        for item in session.items:
            case = item.stash.get(CASE_KEY, None)
            found = self.tally.cases.get(case.case_id) if case is not None else None
            if case is None or found is None:
                continue  # never ran in any round: the end says not run
            emit(self.config, item, case.to_json(), tally.aggregate(found))

    def derived(self) -> list[Case]:
        nodes = self.spec.cluster.nodes
        return [*self._availability(), *self.tally.counter_cases(nodes),
                *self.tally.stability_cases(self.spec.soak)]

    def _settle(self) -> tuple[list[NodeAvailability], Settlement]:
        """Each node's availability over the rounds so far, and the credit it is owed."""
        lines = self.timelines()
        return settle({node: lines.spans[node] for node in self.spec.cluster.nodes
                       if node in lines.spans}, lines.window, self.spec.sla or NO_SLA)

    def _availability(self) -> list[Case]:
        self.availability, self.settlement = self._settle()
        return availability_cases(self.spec, self.availability, self.settlement)

    def summary_lines(self) -> list[str]:
        if not self.rounds:
            return [f"soak: no round finished ({self.soak_dir})",
                    *([f"  soak stopped: {self.stopped}"] if self.stopped else [])]
        lines = self.timelines()
        last = self.rounds[-1]
        stopped = f" (round {last.number} stopped before its end)" \
            if last.status == INTERRUPTED else ""
        found = [f"soak: {len(self.rounds)} round(s){stopped}, {clock(lines.observed_s)} "
                 "observed "
                 f"({utc(lines.window[0])} to {utc(lines.window[1])})"
                 + (f", {clock(lines.unobserved_s)} not observed" if lines.unobserved_s
                    else "")]
        if self.stopped:
            found.append(f"  soak stopped: {self.stopped}")
        found += availability_lines(self.spec, self.availability, self.settlement)
        return found

    def html(self, mark: str = "") -> str:
        lines = self.timelines()
        sla = self.spec.sla
        seen = observed(self.availability)
        return soak_html(self.rounds, lines, self.availability,
                         self.settlement if sla is not None and seen else None,
                         (sla or NO_SLA).uptime, str(self.stopped or ""), mark,
                         unobserved="" if seen else
                         f"availability {NOT_OBSERVED}"
                         + (f"; SLA {SLA_NOT_JUDGED}" if sla is not None else ""))

    def end_record(self) -> SoakEnd:
        """The soak's part of the end record."""
        finished = [r for r in self.rounds if r.status in (COMPLETE, PARTIAL)]
        lines = self.timelines()
        found: SoakEnd = {
            "dir": str(self.soak_dir), "rounds": len(self.rounds),
            "rounds_finished": len(finished), "duration_s": self.duration_s,
            "max_rounds": self.max_rounds, "observed_s": round(lines.observed_s, 3),
            "unobserved_s": round(lines.unobserved_s, 3),
            "window": [utc(t) for t in lines.window] if self.rounds else [],
            "availability": {a.node: float(round(a.availability, 6))
                             for a in self.availability if a.window_s > 0},
        }
        if self.settlement is not None and self.spec.sla is not None \
                and observed(self.availability):
            found["credit"] = {"owed": str(self.settlement.owed),
                               "currency": self.settlement.currency,
                               "arithmetic": [c.arithmetic for c in self.settlement.credits],
                               "total": self.settlement.total_line()}
        if self.spec_changed:
            found["spec_changed"] = self.spec_changed
        if self.stopped is not None:
            found["stopped"] = self.stopped.why
            found["stopped_log"] = self.stopped.log
        return found


def start(config: pytest.Config, spec: Spec, soak_dir: Path, duration_s: float | None,
          max_rounds: int | None, session_plugin: Session) -> SoakDriver:
    driver = SoakDriver(config, spec, soak_dir, duration_s, max_rounds, session_plugin)
    session_plugin.soak = driver
    config.pluginmanager.register(driver, SOAK_PLUGIN)
    return driver
