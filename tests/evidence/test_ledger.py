"""The ledger: what the end of a run reads, gathered line by line, the same as reading
every line at the end; the passed lines themselves are not held."""

from __future__ import annotations

from typing import Any, cast

from pytest_cluster.evidence.cluster_verdict import cluster_failures
from pytest_cluster.evidence.gathered import matrix, passed_row
from pytest_cluster.evidence.ledger import Ledger
from pytest_cluster.evidence.plan import Plan, PlannedCase
from pytest_cluster.evidence.sinks.results import ResultLine, counts
from pytest_cluster.evidence.tally import clause_tallies
from pytest_cluster.evidence.verdict import node_verdicts

NODES = ("n1", "n2", "n3")
PLAN = Plan((*(PlannedCase(f"a::t[{n}-gpu{g}]", "gpus.memory", n) for n in NODES for g in (0, 1)),
             PlannedCase("a::busbw[n3]", "interconnect.busbw[node_network]", "n3"),
             PlannedCase("a::same", "host.same_software.kernel", None)), frozenset())


def line(case: str, node: str | None, outcome: str = "passed", **more: Any) -> ResultLine:
    clause = PLAN.by_id[case].clause if case in PLAN.by_id else "host.memory"
    return cast("ResultLine", {"type": "result", "case": case, "clause": clause,
                               "spec_key": clause, "node": node, "outcome": outcome,
                               "phase": "call", "comparison": ">=", "required": 80.0,
                               "requirement": ">= 80 GB", "unit": "GB",
                               "raw": {"bulk": "x" * 1000}, **more})


def lines() -> list[ResultLine]:
    found = [line(f"a::t[{n}-gpu{g}]", n, gpu=g, measured=85.0 - g) for n in NODES
             for g in (0, 1)]
    found[3] = line("a::t[n2-gpu1]", "n2", "failed", gpu=1, measured=70.0,
                    message="Failed: 70 GB < 80 GB")
    found.append(line("a::busbw[n3]", "n3", "failed", measured=None, error_kind="unreachable",
                      message="Failed: n3: host probe unreachable: no route"))
    found.append(line("a::same", None, "failed", measured="5.15 on 2 node(s)",
                      message="Failed: n3 did not answer", error_kind="not_all_nodes"))
    found.append(line("a::mine[n1]", "n1", measured=90.0))  # your own test, outside the plan
    found.append(cast("ResultLine", {**line("a::busbw[n3]", "n3"), "case": None,
                                     "outcome": "not_run"}))
    return found


def test_the_ledger_says_what_reading_every_line_says() -> None:
    every = lines()
    ledger = Ledger(NODES)
    for each in every:
        ledger.add(each)
    assert ledger.counts() == counts(every)
    assert ledger.checks_ran == 9 and ledger.failed == 3
    assert [v.to_json() for v in ledger.verdicts(PLAN)] == [
        v.to_json() for v in node_verdicts(NODES, PLAN, every)]
    assert ledger.cluster_failures() == cluster_failures(every, NODES) != []
    gathered = ledger.gathered()
    assert [vars(t) for t in gathered.tallies] == [vars(t) for t in clause_tallies(every)]
    whole = matrix(NODES, every)
    assert (gathered.matrix.clauses, gathered.matrix.cells) == (whole.clauses, whole.cells)
    assert gathered.passed.as_dict() == {
        "gpus.memory": [passed_row(r) for r in every[:6] if r["outcome"] == "passed"],
        "host.memory": [passed_row(every[-2])]}
    ledger.close()


def test_the_ledger_holds_the_lines_that_did_not_pass_and_not_their_raw_payloads() -> None:
    ledger = Ledger(NODES)
    for each in lines():
        ledger.add(each)
    assert [r["outcome"] for r in ledger.kept] == ["failed", "failed", "failed", "not_run"]
    assert not any("raw" in r for r in ledger.kept)
    assert ledger.outside_plan(PLAN) == {"n1": 1, "n3": 1}
    ledger.close()
