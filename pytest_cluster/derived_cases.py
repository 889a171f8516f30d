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
from collections.abc import Sequence
from typing import Literal

import pytest

from pytest_cluster.baseline import TESTS, Case

#: Where derived cases say they come from (the id's path, JUnit's classname).
SOURCES = tuple(sorted({source for source, _ in TESTS.values()}))


WHEN: tuple[Literal["setup", "call", "teardown"], ...] = ("setup", "call", "teardown")


def case_id(case: Case) -> str:
    return f"{case.source}::{case.test}[{case.param}]"


def report(case: Case, when: Literal["setup", "call", "teardown"], now: float,
           simulated: bool) -> pytest.TestReport:
    failed = when == "call" and not case.passed
    props = {"spec_key": case.clause, "node": case.node, "simulated": simulated,
             **({"gpu": case.gpu} if case.gpu is not None else {}), **case.props}
    made = pytest.TestReport(
        nodeid=case_id(case), location=(case.source, None, f"{case.test}[{case.param}]"),
        keywords={case.test: 1, case.family.split(".")[0]: 1},
        outcome="failed" if failed else "passed",
        longrepr=f"{'[SIMULATED] ' if simulated else ''}{case.message}" if failed else None,
        when=when, sections=[], duration=0.0, start=now, stop=now,
        user_properties=list(props.items()))
    made.pytest_cluster_case = (case_id(case), case.clause, case.node)  # type: ignore[attr-defined]
    return made


def is_derived(case_id: str) -> bool:
    """Whether a case id is of a derived case (not of the spec's contract)."""
    return case_id.startswith(tuple(f"{source}::" for source in SOURCES))


def emit(config: pytest.Config, cases: Sequence[Case],
         simulated: bool) -> None:
    """Report every case: setup, call and teardown, as a worker would. The terminal
    shows them after the run's cases, without a progress percentage (the percentage is of
    the cases collected, which they are not)."""
    hook = config.hook
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    shown = getattr(terminal, "_show_progress_info", None)
    if shown is not None:
        terminal._show_progress_info = False  # type: ignore[union-attr]
    writer = getattr(terminal, "_tw", None)
    if cases and writer is not None:
        if writer.width_of_current_line:
            writer.line()
        terminal.write_sep("-", "derived from the whole run")  # type: ignore[union-attr]
    try:
        for case in cases:
            location = (case.source, None, f"{case.test}[{case.param}]")
            hook.pytest_runtest_logstart(nodeid=case_id(case), location=location)
            now = time.time()
            for when in WHEN:
                hook.pytest_runtest_logreport(report=report(case, when, now, simulated))
            hook.pytest_runtest_logfinish(nodeid=case_id(case), location=location)
    finally:
        if shown is not None:
            terminal._show_progress_info = shown  # type: ignore[union-attr]
