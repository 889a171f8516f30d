"""One collected case's report over every round of a soak (pytest_cluster/soak/
case_reports.py): through pytest's report hooks as a case that ran once, its phases as
the record says (failed at its call or at its setup, skipped), its properties the record's
own; and in a whole soak, one testcase per case however many rounds ran it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, cast

import pytest

from pytest_cluster.evidence.sinks.results import ResultLine
from pytest_cluster.soak.case_reports import emit
from tests.conftest import planned

CASE = ["acceptance/test_host.py", "test_cpu_cores", "n1"]


class Reports:
    """A plugin that keeps every report pytest's hooks carry."""

    def __init__(self) -> None:
        self.seen: list[pytest.TestReport] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seen.append(report)


def emitted(pytester: pytest.Pytester, record: dict[str, Any]) -> list[pytest.TestReport]:
    """The reports `emit` carries for `record`, about a test of a module of pytester's."""
    item = pytester.getitem("def test_func(): pass")
    reports = Reports()
    item.config.pluginmanager.register(reports)
    emit(item.config, item, list(CASE), cast("ResultLine", record))
    return reports.seen


def record(**fields: Any) -> dict[str, Any]:
    return {"type": "result", "nodeid": "x::y", "case": "c", "clause": "host.cpu_cores",
            "node": "n1", "duration_s": 2.5, "finished_at": 1.0, "measured": 8,
            "rounds_failed": [[3, 4]], **fields}


def test_a_passed_case_is_three_passed_phases_with_its_duration_at_its_call(
        pytester: pytest.Pytester) -> None:
    reports = emitted(pytester, record(outcome="passed"))
    assert [(r.when, r.outcome) for r in reports] == [
        ("setup", "passed"), ("call", "passed"), ("teardown", "passed")]
    assert [r.duration for r in reports] == [0.0, 2.5, 0.0]
    assert all(getattr(r, "pytest_cluster_case") == CASE for r in reports)  # noqa: B009


def test_the_properties_are_the_records_own_fields(pytester: pytest.Pytester) -> None:
    reports = emitted(pytester, record(outcome="failed", phase="call", message="low"))
    assert dict(reports[1].user_properties) == {"node": "n1", "measured": 8,
                                                "rounds_failed": [[3, 4]]}


def test_a_case_failed_at_its_call_says_the_records_message_there(
        pytester: pytest.Pytester) -> None:
    reports = emitted(pytester, record(outcome="failed", phase="call",
                                       message="failed in 2 of 4 round(s)"))
    assert [(r.when, r.outcome) for r in reports] == [
        ("setup", "passed"), ("call", "failed"), ("teardown", "passed")]
    assert reports[1].longrepr == "failed in 2 of 4 round(s)"


def test_a_case_failed_at_its_setup_has_no_call(pytester: pytest.Pytester) -> None:
    reports = emitted(pytester, record(outcome="failed", phase="setup", message="no node"))
    assert [(r.when, r.outcome) for r in reports] == [("setup", "failed"),
                                                      ("teardown", "passed")]
    assert reports[0].longrepr == "no node"


def test_a_skipped_case_is_skipped_at_its_call_with_its_reason(
        pytester: pytest.Pytester) -> None:
    reports = emitted(pytester, record(outcome="skipped", message="not judged"))
    assert [(r.when, r.outcome) for r in reports] == [
        ("setup", "passed"), ("call", "skipped"), ("teardown", "passed")]
    path, _, reason = cast("tuple[str, Any, str]", reports[1].longrepr)
    assert reason == "not judged" and path.endswith(".py")


SPEC = """\
cluster: {name: soak, nodes: "n[1-2]", launcher: sim}
host:
  cpu_cores: ">= 1"
sim:
  gpus_per_node: 8
"""


@pytest.mark.slow
def test_a_soak_of_two_rounds_has_one_testcase_per_collected_case(
        pytester: pytest.Pytester) -> None:
    every = planned(pytester, SPEC, "-m", "sanity")
    (pytester.path / "trial.yaml").write_text(SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", "-m", "sanity",
                                "--cluster-soak-rounds=2")
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    names = [str(tc.get("name")) for tc in
             ET.parse(soak_dir / "junit.xml").getroot().iter("testcase")]
    assert sorted(name for name in names if name in every) == sorted(every)
    assert len(set(names)) == len(names)  # each case once, not once per round
    assert result.parseoutcomes()["passed"] == len(names)
