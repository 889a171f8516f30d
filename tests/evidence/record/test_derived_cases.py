"""derived_cases.py: a case derived from the whole run, reported through pytest's report
hooks as a worker's case is: its id kept as earlier runs' evidence names it, failed at its
call, or skipped at its setup when it could not be judged, and marked where simulated."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_cluster.evidence.record.derived_cases import TESTS, WHEN, Case, case_id, emit, report
from pytest_cluster.evidence.sinks.results import CASE_ATTRIBUTE
from pytest_cluster.evidence.verdict.faults import DERIVED

FAILED = Case("gpus.matmul.bf16", "baseline.performance[gpus.matmul.bf16]", "n1", False,
              "n1: 610 TFLOPS, 12 % below the baseline's 693", gpu=0,
              props={"measured": 610.0})
NOT_JUDGED = Case("n[1-2]", "soak.sla", "all", False, "", not_judged="no node was observed")


def test_a_case_is_named_by_its_familys_module_and_test() -> None:
    assert (FAILED.family, FAILED.source, FAILED.test) == (
        "baseline.performance", "pytest_cluster/baseline.py", "test_not_worse")
    assert case_id(FAILED) == \
        "pytest_cluster/baseline.py::test_not_worse[gpus.matmul.bf16]"
    assert case_id(NOT_JUDGED) == "pytest_cluster/soak.py::test_no_credit_owed[n[1-2]]"
    assert all(source.endswith(".py") and test.startswith("test_")
               for source, test in TESTS.values())


def test_a_case_not_judged_neither_passes_nor_fails() -> None:
    assert FAILED.failed and not NOT_JUDGED.failed and not NOT_JUDGED.passed


def test_a_failed_case_fails_at_its_call_only_and_carries_its_evidence() -> None:
    made = {when: report(FAILED, when, 0.0, simulated=True) for when in WHEN}
    assert {when: r.outcome for when, r in made.items()} == {
        "setup": "passed", "call": "failed", "teardown": "passed"}
    assert made["call"].longrepr == (
        "[SIMULATED] n1: 610 TFLOPS, 12 % below the baseline's 693")
    assert made["call"].nodeid == case_id(FAILED)
    # with its fault (a figure worse than at the baseline: its own code), in every phase
    # (JUnit writes the teardown's properties)
    fault = DERIVED["baseline.performance"].fault
    assert dict(made["call"].user_properties) == {
        "spec_key": FAILED.clause, "node": "n1", "simulated": True, "gpu": 0,
        "measured": 610.0, "code": "PC-BASELINE-PERF", "action": fault.action,
        "actor": "provider-hardware"}
    assert made["teardown"].user_properties == made["call"].user_properties
    assert "code" not in dict(report(NOT_JUDGED, "setup", 0.0, False).user_properties)
    assert getattr(made["call"], CASE_ATTRIBUTE) == (case_id(FAILED), FAILED.clause, "n1")
    assert made["call"].keywords == {"test_not_worse": 1, "baseline": 1}


def test_a_case_not_judged_is_skipped_at_its_setup_saying_why() -> None:
    setup = report(NOT_JUDGED, "setup", 0.0, simulated=False)
    assert setup.outcome == "skipped"
    said: object = setup.longrepr  # pytest types it without a None line number
    assert said == ("pytest_cluster/soak.py", None, "no node was observed")
    assert report(NOT_JUDGED, "call", 0.0, simulated=False).outcome == "passed"


class _Hook:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        self.calls.append(("start", nodeid))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.calls.append((report.when or "", report.outcome))

    def pytest_runtest_logfinish(self, nodeid: str, location: object) -> None:
        self.calls.append(("finish", nodeid))


def test_each_case_is_reported_between_its_start_and_finish_as_a_workers_is() -> None:
    hook = _Hook()
    config = SimpleNamespace(hook=hook, pluginmanager=SimpleNamespace(
        get_plugin=lambda name: None))
    emit(config, [FAILED, NOT_JUDGED], simulated=False)  # type: ignore[arg-type]
    assert hook.calls == [
        ("start", case_id(FAILED)), ("setup", "passed"), ("call", "failed"),
        ("teardown", "passed"), ("finish", case_id(FAILED)),
        ("start", case_id(NOT_JUDGED)), ("setup", "skipped"), ("teardown", "passed"),
        ("finish", case_id(NOT_JUDGED))]  # a case not judged has no call
