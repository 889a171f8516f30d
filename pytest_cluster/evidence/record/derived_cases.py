"""Cases derived from the whole run once every check has ended (the baseline comparison,
a soak's availability, counters and steadiness):
reported through pytest's own report hooks on the controller, exactly as pytest-xdist
reports its workers' cases, so the terminal, JUnit, pytest-html, results.jsonl and the
exit status take them like any other case.

They cannot be collected items: each reads results that other cases (on any worker)
produce, so they are decided after the run loop, where no item can run any more.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from pytest_cluster import internals
from pytest_cluster.evidence.sinks.results import carry_case
from pytest_cluster.evidence.verdict.faults import fault_properties


@dataclass(frozen=True)
class Case:
    """One derived case: its id's parameter, clause, node, GPU, outcome and evidence.
    A case with `not_judged` (why) could not be judged: it is skipped, saying why, and
    neither passes nor fails (a soak that observed no node owes no verdict on its SLA)."""

    param: str
    clause: str
    node: str
    passed: bool
    message: str
    gpu: int | None = None
    props: dict[str, Any] = field(default_factory=dict)
    not_judged: str = ""

    @property
    def failed(self) -> bool:
        return not self.passed and not self.not_judged

    @property
    def family(self) -> str:
        """'baseline.performance' of 'baseline.performance[gpus.matmul.bf16]'."""
        return self.clause.split("[", 1)[0]

    @property
    def test(self) -> str:
        return TESTS[self.family][1]

    @property
    def source(self) -> str:
        """The module whose derived case it is: the id's path, JUnit's classname."""
        return TESTS[self.family][0]


#: Per family of derived cases: the module it is reported from and the test's name. These
#: are the cases' ids, kept as they were when the modules had these paths, so that ids in
#: earlier runs' evidence (baselines, dashboards) still name the same cases.
TESTS = {
    "baseline.nodes": ("pytest_cluster/baseline.py", "test_same_nodes"),
    "baseline.hardware": ("pytest_cluster/baseline.py", "test_same_hardware"),
    "baseline.performance": ("pytest_cluster/baseline.py", "test_not_worse"),
    "soak.availability": ("pytest_cluster/soak.py", "test_available"),
    "soak.sla": ("pytest_cluster/soak.py", "test_no_credit_owed"),
    "soak.counters": ("pytest_cluster/soak.py", "test_counters_steady"),
    "soak.stability": ("pytest_cluster/soak.py", "test_steady"),
}


WHEN: tuple[Literal["setup", "call", "teardown"], ...] = ("setup", "call", "teardown")


def case_id(case: Case) -> str:
    return f"{case.source}::{case.test}[{case.param}]"


def report(case: Case, when: Literal["setup", "call", "teardown"], now: float,
           simulated: bool) -> pytest.TestReport:
    """A case's report at one phase: a case not judged is skipped at its setup, as
    pytest skips a test (it then has no call)."""
    mark = "[SIMULATED] " if simulated else ""
    failed = when == "call" and case.failed
    skipped = when == "setup" and bool(case.not_judged)
    props = {"spec_key": case.clause, "node": case.node, "simulated": simulated,
             **({"gpu": case.gpu} if case.gpu is not None else {}), **case.props}
    if case.failed:  # its fault in every phase's report: JUnit writes the teardown's
        props.update(fault_properties(case.clause, props))
    longrepr: Any = None
    if failed:
        longrepr = f"{mark}{case.message}"
    elif skipped:
        longrepr = (case.source, None, f"{mark}{case.not_judged}")
    made = pytest.TestReport(
        nodeid=case_id(case), location=(case.source, None, f"{case.test}[{case.param}]"),
        keywords={case.test: 1, case.family.split(".")[0]: 1},
        outcome="failed" if failed else "skipped" if skipped else "passed",
        longrepr=longrepr, when=when, sections=[], duration=0.0, start=now, stop=now,
        user_properties=list(props.items()))
    carry_case(made, (case_id(case), case.clause, case.node))
    return made


def emit(config: pytest.Config, cases: Sequence[Case],
         simulated: bool) -> None:
    """Report every case: setup, call and teardown, as a worker would. The terminal
    shows them after the run's cases, without a progress percentage (the percentage is of
    the cases collected, which they are not)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    with internals.no_progress(terminal):
        if cases and terminal is not None:
            internals.end_line(terminal)
            terminal.write_sep("-", "derived from the whole run")
        for case in cases:
            now = time.time()
            log(config, case_id(case), (case.source, None, f"{case.test}[{case.param}]"),
                [report(case, when, now, simulated) for when in WHEN
                 if not (case.not_judged and when == "call")])


def log(config: pytest.Config, nodeid: str, location: tuple[str, int | None, str],
        reports: Iterable[pytest.TestReport]) -> None:
    """A case's reports through pytest's report hooks, between its start and finish, as
    the controller gets a pytest-xdist worker's."""
    hook = config.hook
    hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
    for made in reports:
        hook.pytest_runtest_logreport(report=made)
    hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)
