"""end.py: the end record (results.jsonl's last line) and verdict.json as functions of what
a run found: what it covered, what it left out and why, its verdict, and why it is
incomplete where it is."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from jsonschema import Draft202012Validator

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.model import Spec
from pytest_cluster.evidence.record.end import (
    VERDICT_SCHEMA,
    RunFacts,
    end_record,
    verdict_document,
    verdict_schema,
)
from pytest_cluster.evidence.record.ledger import Ledger
from pytest_cluster.evidence.sinks.results import ResultLine, counts
from pytest_cluster.evidence.verdict.age import DEFAULT_VALID_FOR_S
from pytest_cluster.evidence.verdict.cluster_verdict import NOT_ALL_JUDGED, STOPPED
from pytest_cluster.units import utc
from tests.evidence.verdict.test_nodes import PLAN, result

NODES = ("n1", "n2", "n3")


@pytest.fixture
def spec() -> Spec:
    return parse_spec("cluster: {name: c, nodes: 'n[1-3]'}\nhost: {cpu_cores: 8}\n", "t.yaml")


def selected_records() -> list[ResultLine]:
    """Every selected case of PLAN passed, but n2's GPU count."""
    return [result(case.case_id, case.node,
                   "failed" if case.case_id == "a::t[n2]" else "passed",
                   message="Failed: 7 != 8" if case.case_id == "a::t[n2]" else "")
            for case in PLAN.cases if case.case_id in PLAN.selected]


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    found = Ledger(NODES)
    yield found
    found.close()


def facts(spec: Spec, ledger: Ledger, records: list[ResultLine], exit_code: int) -> RunFacts:
    for each in records:
        ledger.add(each)
    return RunFacts(spec, PLAN, ledger, {r["case"] for r in records}, ledger.verdicts(PLAN),
                    exit_code, 1795395060.0, {})


def test_the_end_record_says_what_the_run_covered_and_left_out(spec: Spec,
                                                              ledger: Ledger) -> None:
    records = selected_records()
    end = end_record(facts(spec, ledger, records, 1))
    assert end["status"] == "partial"  # a case of PLAN was not selected
    assert (end["checks_ran"], end["checks_selected"], end["checks_planned"]) == (
        len(records), len(PLAN.selected), len(PLAN.cases))
    assert end["deselected"] == len(PLAN.cases) - len(PLAN.selected)
    assert end["counts"] == counts(records)
    assert end["nodes_covered"] == list(NODES) and end["nodes_in_spec"] == len(NODES)
    assert end["not_checked"] == [
        {"clause": "host.memory", "why": "deselected", "cases": 1, "of": 3}]
    assert end["verdicts"] == {"ACCEPTED": 2, "REJECTED": 1}
    assert (end["level"], end["verdict"]) == ("acceptance", "REJECTED")
    assert "incomplete" not in end and "derived_counts" not in end
    assert end["started_at"] == 1795395060.0


def test_a_run_that_stopped_before_its_selected_checks_is_incomplete_and_says_why(
        spec: Spec, ledger: Ledger) -> None:
    records = selected_records()[:1]  # n1's GPU count alone: no node failed
    end = end_record(facts(spec, ledger, records, 2))
    assert (end["status"], end["verdict"]) == ("interrupted", "INCOMPLETE")
    assert end["incomplete"] == f"{STOPPED}; {NOT_ALL_JUDGED}"  # n2 and n3 not judged
    assert {"clause": "host.memory", "why": "not reached", "cases": 2, "of": 3} in \
        end["not_checked"]


def test_verdict_json_follows_its_schema_and_drains_the_rejected_node(
        spec: Spec, ledger: Ledger) -> None:
    run = facts(spec, ledger, selected_records(), 1)
    end = end_record(run)
    document = verdict_document(spec, end, run.verdicts, ledger, "run-1")
    Draft202012Validator(verdict_schema()).validate(document)
    assert (document["schema"], document["run_id"]) == (VERDICT_SCHEMA, "run-1")
    assert (document["verdict"], document["outcome"]) == ("REJECTED", "FAIL")
    assert document["checks"] == f"{end['checks_ran']} of {end['checks_planned']}"
    assert [node["node"] for node in document["nodes"]] == list(NODES)
    assert len(document["drain"]) == 1 and "n2" in document["drain"][0]
    assert "incomplete" not in document and "baseline" not in document
    # made at the run's end, holding a day unless --cluster-valid-for says otherwise
    assert document["made_at"] == document["ended_at"]
    assert document["valid_until"] == utc(end["ended_at"] + DEFAULT_VALID_FOR_S)
    held = verdict_document(spec, end, run.verdicts, ledger, "run-1", valid_for=1800)
    assert held["valid_until"] == utc(end["ended_at"] + 1800)
