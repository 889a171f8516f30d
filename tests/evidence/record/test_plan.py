"""plan.py: what a run set out to check, written by the process that collected and read
back by the others, and every clause not (fully) checked with why."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from pytest_cluster.contract.promised import ACROSS, TOO_FEW_NODES, across
from pytest_cluster.evidence.record.plan import (
    NOT_AT_THIS_LEVEL,
    PLAN_FILE,
    LeftOut,
    Plan,
    PlannedCase,
    level_of_run,
    not_checked,
    opt_in,
    selection,
    why_left_out,
)
from tests.evidence.verdict.test_nodes import PLAN


def test_not_checked_says_why_per_clause() -> None:
    ran = {"a::t[n1]", "a::t[n2]"}
    left_out = (LeftOut("storage"), opt_in("gpus.sdc", "stress"),
                LeftOut("interconnect.latency", ACROSS, across(1, 4)),
                LeftOut("interconnect.node_counts 8", TOO_FEW_NODES, "the cluster has 4 nodes"))
    rows = not_checked(Plan(PLAN.cases, PLAN.selected, left_out), ran)
    # each says why as it is: in the contract but not at this level, not across the nodes
    # of this run or of this cluster, or not in the contract at all
    assert rows == [
        {"clause": "gpus.sdc", "why": NOT_AT_THIS_LEVEL},
        {"clause": "interconnect.latency", "why": ACROSS},
        {"clause": "interconnect.node_counts 8", "why": TOO_FEW_NODES},
        {"clause": "storage", "why": "not in contract"},
        {"clause": "host.memory", "why": "deselected", "cases": 1, "of": 3},
        {"clause": "gpus.count", "why": "not reached", "cases": 1, "of": 3},
        {"clause": "host.memory", "why": "not reached", "cases": 2, "of": 3},
        {"clause": "host.same_software.kernel", "why": "not reached", "cases": 1, "of": 1},
    ]


def test_the_plan_written_is_the_plan_read(tmp_path: Path) -> None:
    plan = Plan(PLAN.cases, PLAN.selected, (opt_in("gpus.sdc", "stress"), LeftOut("storage")))
    plan.write(tmp_path / "probes")
    assert Plan.read(tmp_path / "probes") == plan
    assert Plan.read(tmp_path / "probes").by_id["a::all"] == PlannedCase(
        "a::all", "host.same_software.kernel", None)
    assert [p.name for p in (tmp_path / "probes").iterdir()] == [PLAN_FILE]  # no partial left


def test_a_plan_no_process_wrote_whole_is_unknown(tmp_path: Path) -> None:
    assert Plan.read(tmp_path) == Plan(known=False)
    for text in ("{", '{"cases": [["a"]], "selected": [], "left_out": []}', "[]",
                 json.dumps({"cases": []})):
        (tmp_path / PLAN_FILE).write_text(text)
        assert not Plan.read(tmp_path).known, text
    assert Plan(known=False).checked_nodes() is None


def test_the_nodes_checked_are_those_of_the_selected_cases() -> None:
    assert PLAN.checked_nodes() == frozenset({"n1", "n2", "n3"})
    only = Plan(PLAN.cases, frozenset({"a::t[n2]", "a::all"}))
    assert only.checked_nodes() == frozenset({"n2"})
    assert [case.case_id for case in only.deselected] == [
        "a::t[n1]", "a::t[n3]", "a::u[n1]", "a::u[n2]", "a::u[n3]"]


def test_a_left_out_clause_says_why_after_its_name() -> None:
    assert str(opt_in("gpus.sdc", "stress")) == "gpus.sdc (level stress: run it with -m stress)"
    assert str(LeftOut("storage")) == "storage"


def test_the_level_and_why_checks_were_left_out_follow_the_selection() -> None:
    assert (level_of_run({}), why_left_out({})) == ("acceptance", "deselected")
    assert (level_of_run({"-m": "stress"}), why_left_out({"-m": "stress"})) == (
        "stress", NOT_AT_THIS_LEVEL)
    assert level_of_run({"-m": "not sanity"}) == "not sanity"
    assert why_left_out({"-m": "sanity", "--lf": True}) == "deselected"


def test_the_selection_is_the_options_that_chose_as_given() -> None:
    option = SimpleNamespace(keyword="n1", markexpr="", lf=True, failedfirst=False,
                             deselect=("a::t[n2]",), maxfail=0)
    config = SimpleNamespace(option=option)
    assert selection(config) == {"-k": "n1", "--lf": True,  # type: ignore[arg-type]
                                 "--deselect": ["a::t[n2]"]}
    assert selection(SimpleNamespace(option=SimpleNamespace())) == {}  # type: ignore[arg-type]
