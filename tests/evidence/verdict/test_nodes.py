"""The per-node verdict, margins and the results reader."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, cast

import pytest
from jsonschema import Draft202012Validator, ValidationError

from pytest_cluster.evidence.record.plan import (
    Plan,
    PlannedCase,
    level_of_run,
    not_checked,
    why_left_out,
)
from pytest_cluster.evidence.record.summary import ClauseTally, margin, margin_text
from pytest_cluster.evidence.sinks.results import ResultLine, read_results, run_status
from pytest_cluster.evidence.verdict.blame import TOOL_ERROR
from pytest_cluster.evidence.verdict.cluster_verdict import cluster_failures, cluster_verdict
from pytest_cluster.evidence.verdict.drain import (
    drain_line,
    to_drain,
)
from pytest_cluster.evidence.verdict.faults import KINDS, fault_properties
from pytest_cluster.evidence.verdict.nodes import (
    NO_NODE_ANSWERED,
    controller_reason,
    node_verdicts,
    said_once,
)
from pytest_cluster.measure.nccl_ras import RANK_DEAD

PLAN = Plan((PlannedCase("a::t[n1]", "gpus.count", "n1"),
             PlannedCase("a::t[n2]", "gpus.count", "n2"),
             PlannedCase("a::t[n3]", "gpus.count", "n3"),
             PlannedCase("a::u[n1]", "host.memory", "n1"),
             PlannedCase("a::u[n2]", "host.memory", "n2"),
             PlannedCase("a::u[n3]", "host.memory", "n3"),
             PlannedCase("a::all", "host.same_software.kernel", None)),
            frozenset({"a::t[n1]", "a::t[n2]", "a::t[n3]", "a::u[n1]", "a::u[n2]",
                       "a::all"}))


def result(case: str, node: str | None, outcome: str = "passed", **more: Any) -> ResultLine:
    clause = PLAN.by_id[case].clause
    return cast("ResultLine", {"type": "result", "case": case, "clause": clause,
                               "spec_key": clause, "node": node, "outcome": outcome,
                               "phase": "call", **more})


def test_a_check_without_a_culprit_fails_the_cluster_not_the_node() -> None:
    """The slow-node search could not decide (no known-good partner): the failure is the
    fabric's; the node is NOT CHECKED (never drained for it), the cluster has a failure."""
    undecided = ("Failed: n1 busbw[node_network]: the slow-node search could not decide: "
                 "no group reached the bar")
    records = [result("a::t[n1]", "n1", "failed", message=undecided,
                      error_kind="undecided"), result("a::u[n1]", "n1")]
    (n1,) = node_verdicts(["n1"], PLAN, records)
    assert (n1.verdict, n1.reason) == (
        "NOT CHECKED", "1 could not be decided (n1 busbw[node_network]: the slow-node "
        "search could not decide: no group reached the bar); none failed")
    assert n1.to_json()["checks_undecided"] == 1 and n1.failed_clauses == []
    assert to_drain([n1]) == []
    assert cluster_failures(records, ["n1"]) == [
        {"clause": "gpus.count", "where": "n1", "message": undecided[len("Failed: "):],
         "kind": "undecided"}]


def test_each_node_gets_one_verdict_with_its_reason() -> None:
    unreachable = "Failed: n2: host probe unreachable: ssh: connect to host n2 port 22: refused"
    records = [
        result("a::t[n1]", "n1"), result("a::u[n1]", "n1", "failed",
                                         message="Failed: n1 memory: measured 1 GiB < 2 GiB"),
        result("a::t[n2]", "n2", "failed", message=unreachable, error_kind="unreachable",
               probe="host"),
        result("a::u[n2]", "n2", "failed", message=unreachable, error_kind="unreachable",
               probe="host"),
        result("a::t[n3]", "n3"),
        result("a::all", None, "failed", message="Failed: kernel differs"),
    ]
    n1, n2, n3 = node_verdicts(["n1", "n2", "n3"], PLAN, records)
    assert (n1.verdict, n1.reason) == ("REJECTED", "1 clause(s) failed: host.memory")
    assert n1.failures == [{"clause": "host.memory", "case": "a::u[n1]",
                            "message": "n1 memory: measured 1 GiB < 2 GiB"}]
    assert (n2.verdict, n2.reason) == (
        "UNREACHABLE", "n2: host probe unreachable: ssh: connect to host n2 port 22: refused")
    # n3's host.memory is not selected: it is judged on the check the run selected
    assert (n3.verdict, n3.reason) == ("ACCEPTED", "all 1 checks passed; 1 more deselected")
    assert (n3.planned, n3.not_selected, n3.outcome) == (1, 1, "PASS")
    everything = [result(c.case_id, c.node) for c in PLAN.cases if c.node == "n3"]
    assert node_verdicts(["n3"], PLAN, everything)[0].verdict == "ACCEPTED"
    assert (n1.outcome, n2.outcome) == ("FAIL", "FAIL")
    assert drain_line(n1) == ("scontrol update NodeName=n1 State=DRAIN "
                              "'Reason=pytest-cluster rejected: 1 clause(s) failed: "
                              "host.memory'")


def _fault(code: str, actor: str = "provider-hardware") -> dict[str, str]:
    return {"code": code, "action": f"fix {code}", "actor": actor}


def test_a_nodes_codes_are_its_failures_and_its_drain_reason_starts_with_the_first() -> None:
    """verdict.json says each node's failures' codes once each, and its first failure's
    code, action and actor; its drain reason starts with that code (`sinfo -R` groups by
    it); an unreachable node's is its no answer's, whatever failed before."""
    silent = "Failed: n2: host probe unreachable: refused"
    records = [
        result("a::t[n1]", "n1", "failed", message="Failed: n1 count", **_fault("PC-GPU-COUNT")),
        result("a::u[n1]", "n1", "failed", message="Failed: n1 memory",
               **_fault("PC-HOST-MEMORY")),
        # a check of several nodes naming n2 before n2's own silence
        result("a::all", None, "failed", message="Failed: kernel differs", culprits="n2",
               **_fault("PC-HOST-SOFTWARE-DRIFT")),
        result("a::t[n2]", "n2", "failed", message=silent, error_kind="unreachable",
               probe="host", **_fault("PC-NODE-UNREACHABLE")),
        result("a::t[n3]", "n3"), result("a::u[n3]", "n3"),
    ]
    n1, n2, n3 = node_verdicts(["n1", "n2", "n3"], PLAN, records)
    assert (n1.codes, n1.code, n1.action, n1.actor) == (
        ["PC-GPU-COUNT", "PC-HOST-MEMORY"], "PC-GPU-COUNT", "fix PC-GPU-COUNT",
        "provider-hardware")
    assert [f["code"] for f in n1.failures] == ["PC-GPU-COUNT", "PC-HOST-MEMORY"]
    assert n2.verdict == "UNREACHABLE" and n2.code == "PC-NODE-UNREACHABLE"
    assert n2.codes == ["PC-HOST-SOFTWARE-DRIFT", "PC-NODE-UNREACHABLE"]
    assert (n3.codes, n3.code, n3.to_json()["code"]) == ([], "", "")
    assert drain_line(n1) == ("scontrol update NodeName=n1 State=DRAIN "
                              "'Reason=PC-GPU-COUNT pytest-cluster rejected: 2 clause(s) "
                              "failed: gpus.count, host.memory'")
    assert "'Reason=PC-NODE-UNREACHABLE pytest-cluster unreachable: n2: " in drain_line(n2)


def test_a_timeout_is_unreachable_only_for_the_host_probe() -> None:
    busy = [result("a::t[n1]", "n1", "failed", message="Failed: n1: gpu_perf probe timeout",
                   error_kind="timeout", probe="gpu_perf")]
    assert node_verdicts(["n1"], PLAN, busy)[0].verdict == "REJECTED"
    silent: list[ResultLine] = [{**busy[0], "probe": "host"}, result("a::t[n2]", "n2")]
    assert node_verdicts(["n1", "n2"], PLAN, silent)[0].verdict == "UNREACHABLE"


def _failed_host(node: str, kind: str, said: str) -> ResultLine:
    """A case of `node` failed because its host probe failed with `kind`: the launcher's
    words in raw (as Evidence.require records them), the node's name in the message."""
    return result(f"a::t[{node}]", node, "failed", error_kind=kind, probe="host",
                  message=f"Failed: {node}: host probe {kind}: {said}",
                  raw={"message": said, "exit_code": 255, "stderr_tail": "",
                       "duration_s": 0.1})


def test_a_node_whose_address_refused_while_another_answered_is_unreachable() -> None:
    refused = "ssh: connection refused (no sshd?)"
    n1, n2 = node_verdicts(["n1", "n2"], PLAN, [_failed_host("n1", "unreachable", refused),
                                                result("a::t[n2]", "n2")])
    assert (n1.verdict, n1.outcome, n1.controller_fault) == ("UNREACHABLE", "FAIL", "")
    assert to_drain([n1, n2]) == [n1]


@pytest.mark.parametrize("kind", ["unreachable", "timeout"])
def test_when_no_node_answered_none_is_blamed_and_the_cause_is_said(kind: str) -> None:
    """Every node silent: the fault they share is this machine's or its link's; each is
    NOT CHECKED (ERROR) with the same controller fault, none drained."""
    said = "ssh: node not reachable"
    nodes = ["n1", "n2", "n3"]
    verdicts = node_verdicts(nodes, PLAN, [_failed_host(n, kind, said) for n in nodes])
    assert {(v.verdict, v.outcome) for v in verdicts} == {("NOT CHECKED", "ERROR")}
    assert {v.controller_fault for v in verdicts} == {f"{NO_NODE_ANSWERED} ({said})"}
    assert all(v.reason == controller_reason(v.controller_fault) for v in verdicts)
    assert all(not v.failed_clauses and not v.failures for v in verdicts)
    # no node's fault: none carries the silence's PC-NODE-UNREACHABLE (check its power)
    assert {(tuple(v.codes), v.code) for v in verdicts} == {((), "")}
    assert to_drain(verdicts) == []
    assert cluster_verdict("complete", verdicts, 0) == "INCOMPLETE"


@pytest.mark.parametrize(("kind", "said"), [
    ("controller", "this machine cannot resolve the name (ssh: Could not resolve hostname): "
                   "check cluster.nodes, the ssh config and DNS here"),
    ("auth_refused", "ssh refused: check the user, key and known_hosts")])
def test_a_controller_side_fault_is_not_checked_even_where_other_nodes_answered(
        kind: str, said: str) -> None:
    n1, n2, n3 = node_verdicts(["n1", "n2", "n3"], PLAN, [
        _failed_host("n1", kind, said), _failed_host("n2", kind, said),
        result("a::t[n3]", "n3")])
    assert (n1.verdict, n1.outcome, n1.controller_fault) == ("NOT CHECKED", "ERROR", said)
    assert n1.reason == f"this machine could not check it: {said}"
    assert to_drain([n1, n2, n3]) == []
    # what kept them undecided: their kind's fault (declared in faults.py KINDS, derived
    # where the line says none), this machine's to fix
    fault = KINDS[kind].fault
    assert (n1.codes, n1.code, n1.action, n1.actor) == (
        [fault.code], fault.code, fault.action, "tool")
    # the terminal and the gate say the fault once for both nodes, and what to do
    assert said_once([n1, n2, n3]) == [
        ("NOT CHECKED", ["n1", "n2"], f"this machine could not check them: {said}",
         f"; {fault.code} (tool): {fault.action}")]


def test_a_not_checked_node_carries_its_first_undecided_cases_fault() -> None:
    """A node none of whose checks failed, but one could not be decided (DCGM's
    configuration finding, a busy node), carries that case's fault: the codes of its
    undecided cases, each once, the first one's code, action and actor, as its line
    ends; it is still NOT CHECKED and never drained. A rejected node keeps its
    failures' codes, whatever could not be decided beside them."""
    config, busy = KINDS["dcgm_config"].fault, KINDS["busy"].fault
    records = [
        result("a::t[n1]", "n1", "failed", message="Failed: n1 persistence mode off",
               error_kind="dcgm_config", **_fault(config.code, config.actor.value)),
        result("a::u[n1]", "n1", "failed", message="Failed: n1 busy", error_kind="busy"),
        result("a::t[n2]", "n2", "failed", message="Failed: n2 count", **_fault("PC-GPU-COUNT")),
        result("a::u[n2]", "n2", "failed", message="Failed: n2 busy", error_kind="busy"),
        result("a::t[n3]", "n3"), result("a::u[n3]", "n3"),
    ]
    n1, n2, n3 = node_verdicts(["n1", "n2", "n3"], PLAN, records)
    assert (n1.verdict, n1.outcome) == ("NOT CHECKED", "ERROR")
    assert (n1.codes, n1.code, n1.action, n1.actor) == (
        [config.code, busy.code], config.code, f"fix {config.code}", "provider-hardware")
    assert n1.to_json()["code"] == config.code and to_drain([n1, n2, n3]) == [n2]
    assert (n2.codes, n2.code) == (["PC-GPU-COUNT"], "PC-GPU-COUNT")
    assert (n3.verdict, n3.codes, n3.code) == ("ACCEPTED", [], "")
    assert said_once([n1, n2, n3])[0] == (
        "NOT CHECKED", ["n1"], n1.reason,
        f"; {config.code} (provider-hardware): fix {config.code}")


@pytest.mark.parametrize(("measured", "op", "required", "expected", "text"), [
    (7, "==", 8, -12.5, "-12.5 % off required"),
    (341.2, ">=", 360, -5.222, "-5.2 % below required"),
    (400, ">=", 360, 11.111, "+11.1 % above required"),
    (25, "<=", 20, -25.0, "-25.0 % over the limit"),
    (8, "==", 8, 0.0, "as required"),
])
def test_margin_in_percent_of_the_requirement(measured: float, op: str, required: float,
                                              expected: float, text: str) -> None:
    record: ResultLine = {"measured": measured, "comparison": op, "required": required}
    found = margin(record)
    assert found == pytest.approx(expected, abs=1e-3)
    assert found is not None and margin_text(found, op) == text


def test_no_margin_without_two_numbers() -> None:
    assert margin({"measured": "none", "required": 0, "comparison": "=="}) is None
    assert margin({"measured": 3, "required": 0, "comparison": "<="}) is None


def test_the_worst_count_is_the_one_off_the_requirement() -> None:
    tally = ClauseTally("gpus.count")
    for node, count in (("n1", 8), ("n2", 7), ("n3", 8)):
        tally.add({"node": node, "outcome": "passed" if count == 8 else "failed",
                   "measured": count, "required": 8, "comparison": "==", "requirement": "== 8"})
    assert tally.worst_text() == "7 (n2)"
    assert tally.worst_margin == pytest.approx(-12.5)


def test_a_results_file_without_an_end_line_was_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    lines = [{"type": "run", "cluster": "c"}, {"type": "result", "outcome": "passed"}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"type": "resu',
                    encoding="utf-8")
    cut = read_results(path)
    assert (cut.status, cut.complete, len(cut.results)) == ("interrupted", False, 1)
    path.write_text("".join(json.dumps(x) + "\n" for x in
                            [*lines, {"type": "end", "status": "complete"}]),
                    encoding="utf-8")
    assert read_results(path).complete


def test_run_status() -> None:
    assert run_status(0, 10, 10, 10) == "complete"
    assert run_status(1, 10, 4, 4) == "partial"
    assert run_status(2, 10, 10, 3) == "interrupted"
    assert run_status(1, 10, 10, 3) == "interrupted"  # -x: selected checks not reached
    assert run_status(3, 10, 10, 10) == "internal_error"


def test_a_clause_failing_without_a_number_says_so_not_its_best_value() -> None:
    tally = ClauseTally("gpus.memory")
    tally.add({"node": "n1", "gpu": 0, "outcome": "passed", "measured": 85.5, "required": 80,
               "comparison": ">="})
    tally.add({"node": "n1", "gpu": 7, "outcome": "failed", "error_kind": "missing_gpu"})
    tally.add({"node": "n2", "gpu": 1, "outcome": "passed", "measured": 81.0, "required": 80,
               "comparison": ">="})
    # the failure without a number first, then what the measured ones were at worst
    assert tally.worst_text() == "could not measure: n1 gpu7; worst measured 81 (n2 gpu1)"
    alone = ClauseTally("gpus.memory")
    alone.add({"node": "n1", "gpu": 7, "outcome": "failed", "error_kind": "missing_gpu"})
    assert alone.worst_text() == "could not measure: n1 gpu7"


def _verdict(pytester: pytest.Pytester, *args: str) -> dict[str, Any]:
    from pytest_cluster.evidence.record.end import verdict_schema

    pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", *args)
    document: dict[str, Any] = json.loads(
        (pytester.path / "reports" / "latest" / "verdict.json").read_text())
    Draft202012Validator(verdict_schema()).validate(document)
    return document


def _end(pytester: pytest.Pytester) -> dict[str, Any]:
    lines = (pytester.path / "reports" / "latest" / "results.jsonl").read_text().splitlines()
    end: dict[str, Any] = json.loads(lines[-1])
    return end


def test_nodes_in_spec_and_nodes_checked_are_the_same_in_every_view(
        pytester: pytest.Pytester) -> None:
    """`nodes_in_spec` is the spec's nodes in verdict.json and the end record alike with
    --cluster-node (the end record said the nodes chosen); `nodes_checked` counts the nodes
    at least one case of which ran (it counted the nodes in scope: a --maxfail=1 run that
    stopped on the first node said every node was checked)."""
    (pytester.path / "trial.yaml").write_text(
        "cluster: {name: c, nodes: 'n[1-3]', launcher: sim}\nhost: {cpu_cores: 96}\n"
        "sim:\n  faults:\n    - {node: n1, down: true}\n")
    chosen = _verdict(pytester, "--cluster-node=n[1,3]")
    assert _end(pytester)["nodes_in_spec"] == chosen["nodes_in_spec"] == 3
    assert chosen["nodes_checked"] == len(_end(pytester)["nodes_covered"]) == 2
    stopped = _verdict(pytester, "--maxfail=1")
    end = _end(pytester)
    assert end["status"] == "interrupted" and end["nodes_covered"] == ["n1"]
    assert (stopped["nodes_in_spec"], stopped["nodes_checked"]) == (3, 1)


@pytest.mark.slow
def test_verdict_json_has_the_clusters_verdict_and_follows_its_schema(
        pytester: pytest.Pytester) -> None:
    """A pipeline reads the cluster's verdict, the run's id and UTC times, and the lines
    that take nodes out; verdict.schema.json (shipped in the package, Draft 2020-12)
    describes every key, checked with jsonschema on a rejected, an accepted, a partial
    and a one-node run."""
    from pytest_cluster.evidence.record.end import VERDICT_SCHEMA, verdict_schema

    Draft202012Validator.check_schema(verdict_schema())
    (pytester.path / "trial.yaml").write_text(
        "cluster: {name: c, nodes: 'n[1-3]', launcher: sim}\nhost: {cpu_cores: 96}\n"
        "sim:\n  faults:\n    - {node: n2, down: true}\n")
    rejected = _verdict(pytester)
    assert rejected["verdict"] == "REJECTED" and rejected["status"] == "complete"
    assert rejected["run_id"] == os.readlink(pytester.path / "reports" / "latest")
    assert rejected["started_at"].endswith("Z") and rejected["schema"] == \
        VERDICT_SCHEMA
    assert rejected["taint"] == [
        "# SIMULATED, not a real node: kubectl taint nodes n2 "
        "pytest-cluster/verdict=unreachable:NoSchedule --overwrite"]
    assert (rejected["nodes_in_spec"], rejected["nodes_checked"]) == (3, 3)
    accepted = _verdict(pytester, "--cluster-node=n[1,3]")
    assert accepted["verdict"] == "ACCEPTED" and accepted["drain"] == []
    assert (accepted["nodes_in_spec"], accepted["nodes_checked"]) == (3, 2)
    partial = _verdict(pytester, "-k", "n1")
    assert (partial["verdict"], partial["status"]) == ("INCOMPLETE", "partial")
    with pytest.raises(ValidationError):
        Draft202012Validator(verdict_schema()).validate({**accepted, "verdict": "MAYBE"})


@pytest.mark.parametrize("kind", sorted(TOOL_ERROR))
def test_a_tool_error_is_no_nodes_failure(kind: str) -> None:
    """The tool could not make the check (cluster.python not found, another namespace's
    /sys read), on the host probe too: the node is NOT CHECKED, an ERROR, never drained."""
    records = [result("a::t[n1]", "n1", "failed", message=f"Failed: n1: {kind}",
                      error_kind=kind, probe="host"), result("a::u[n1]", "n1")]
    (n1,) = node_verdicts(["n1"], PLAN, records)
    assert (n1.verdict, n1.outcome) == ("NOT CHECKED", "ERROR")
    assert to_drain([n1]) == []
    assert cluster_verdict("complete", [n1], 0) == "INCOMPLETE"


def test_a_level_judges_its_checks_and_names_what_it_left_out() -> None:
    """A sanity run: the checks of other levels are 'not at this level', the node is
    ACCEPTED at it, the cluster too; a selected check that did not run leaves it INCOMPLETE."""
    assert why_left_out({"-m": "sanity"}) == "not at this level"
    assert why_left_out({"-m": "sanity", "-k": "n1"}) == "deselected"
    assert level_of_run({"-m": "sanity"}) == "sanity" and level_of_run({}) == "acceptance"
    records = [result(c.case_id, c.node) for c in PLAN.cases if c.case_id in PLAN.selected]
    verdicts = node_verdicts(["n1", "n2", "n3"], PLAN, records)
    assert [v.verdict for v in verdicts] == ["ACCEPTED"] * 3
    assert cluster_verdict("partial", verdicts, 0) == "ACCEPTED"
    assert {"clause": "host.memory", "why": "not at this level", "cases": 1, "of": 3} in \
        not_checked(PLAN, {r["case"] for r in records}, why_left_out({"-m": "sanity"}))
    short = node_verdicts(["n1", "n2", "n3"], PLAN, records[1:])
    assert short[0].verdict == "NOT CHECKED" and cluster_verdict("interrupted", short, 0) == \
        "INCOMPLETE"


def test_a_cluster_check_fails_the_nodes_it_names_and_no_other() -> None:
    """'The same kernel on every node' names n3 (the odd one): n3 is REJECTED with the
    clause; n1 and n2, whose own checks passed, are ACCEPTED; a check not established
    (a node did not answer) names no one."""
    records = [result(case, node) for case, node in (
        ("a::t[n1]", "n1"), ("a::t[n2]", "n2"), ("a::t[n3]", "n3"), ("a::u[n1]", "n1"),
        ("a::u[n2]", "n2"))]
    odd = result("a::all", "all", "failed", message="Failed: kernel differs between nodes",
                 culprits="n3")
    verdicts = {v.node: v for v in node_verdicts(["n1", "n2", "n3"], PLAN, [*records, odd])}
    assert {n: v.verdict for n, v in verdicts.items()} == {
        "n1": "ACCEPTED", "n2": "ACCEPTED", "n3": "REJECTED"}
    assert verdicts["n3"].failed_clauses == ["host.same_software.kernel"]
    assert verdicts["n3"].failures[0]["message"] == "kernel differs between nodes"
    assert cluster_failures([odd], ["n1", "n2", "n3"])[0]["culprits"] == "n3"
    silent: ResultLine = {**odd, "error_kind": "not_all_nodes", "culprits": "n[1-3]"}
    assert [v.verdict for v in node_verdicts(["n1", "n2", "n3"], PLAN, [*records, silent])
            ] == ["ACCEPTED"] * 3  # no one blamed


def _disabled(case: str, node: str) -> ResultLine:
    return result(case, node, "skipped", phase="setup", disabled=PLAN.by_id[case].clause,
                  disabled_until="2099-12-31",
                  message="Skipped: disabled: misfires, until 2099-12-31")


def test_a_case_the_kill_switch_skipped_is_said_never_passed_and_never_failed() -> None:
    """n1's gpus.count disabled, its host.memory passed: ACCEPTED on what was checked,
    saying one is disabled (not counted passed); n2's every check disabled: nothing was
    measured, so NOT CHECKED; n3's a skip of another kind: NOT CHECKED as before."""
    n1, n2, n3 = node_verdicts(["n1", "n2", "n3"], PLAN, [
        _disabled("a::t[n1]", "n1"), result("a::u[n1]", "n1"),
        _disabled("a::t[n2]", "n2"), _disabled("a::u[n2]", "n2"),
        result("a::t[n3]", "n3", "skipped", phase="setup", message="Skipped: no GPU")])
    assert (n1.verdict, n1.reason) == (
        "ACCEPTED", "all 1 checks passed; 1 disabled (--cluster-disable)")
    assert (n1.to_json()["checks_passed"], n1.to_json()["checks_disabled"]) == (1, 1)
    assert (n2.verdict, n2.reason) == ("NOT CHECKED",
                                       "2 disabled (--cluster-disable); none failed")
    assert (n3.verdict, n3.reason) == ("NOT CHECKED", "1 skipped; none failed")


@pytest.mark.parametrize("culprits", ["n2", None])
def test_a_dead_ranks_hang_blames_as_a_failed_job_with_its_own_fault(
        culprits: str | None) -> None:
    """A job RAS explains (rank_dead) fails the case's node and the culprits it names,
    exactly as a failed job (job_failed) does; only the fault differs: the dead rank's."""
    def failed(case: str, node: str | None, kind: str, **more: Any) -> ResultLine:
        clause = PLAN.by_id[case].clause
        return result(case, node, "failed", message="Failed: the job hung", error_kind=kind,
                      **dict(fault_properties(clause, {"error_kind": kind})), **more)

    def verdicts(kind: str) -> list[tuple[str, list[str], list[str]]]:
        named = {"culprits": culprits} if culprits else {}
        records = [failed("a::all", None, kind, **named), failed("a::t[n1]", "n1", kind)]
        return [(v.verdict, v.failed_clauses, v.codes)
                for v in node_verdicts(["n1", "n2", "n3"], PLAN, records)]
    dead, was = verdicts(RANK_DEAD), verdicts("job_failed")
    assert [v[:2] for v in dead] == [v[:2] for v in was]
    assert (dead[0][0], dead[0][2]) == ("REJECTED", ["PC-NODE-RANK-DEAD"])
    assert dead[1][0] == ("REJECTED" if culprits else "NOT CHECKED")
    assert dead[1][2] == (["PC-NODE-RANK-DEAD"] if culprits else [])
    assert was[0][2] == ["PC-GPU-COUNT"]  # before: the clause's
    assert dead[2][0] == "NOT CHECKED"  # never named: not blamed (its cases did not run)
