"""What the gate does in SLURM beyond draining (evidence/verdict/resume.py): a node the run
accepted is resumed only where its drain is ours; a node drained by someone else keeps its
drain and its reason, said; a failed node drained by us gets the new reason; nothing is
done for an ERROR or a simulated run. The commands it runs are pinned as exact lines; the
gate running them on a fake sinfo and scontrol is in tests/test_cli.py."""

from __future__ import annotations

import pytest

from pytest_cluster.evidence.verdict.gate import Decision
from pytest_cluster.evidence.verdict.nodes import ERROR, FAIL, PASS, REJECTED, NodeVerdict
from pytest_cluster.evidence.verdict.resume import (
    MAX_NAMES_CHARS,
    NodeState,
    Step,
    is_ours,
    looked_up,
    parse_states,
    resume_command,
    states_commands,
    steps,
    unread_line,
)
from pytest_cluster.hostlist import expand_hostlist

OURS_REASON = "pytest-cluster rejected: 1 clause(s) failed: storage[/scratch].capacity"


@pytest.mark.parametrize(("reason", "ours"), [
    (OURS_REASON, True),
    ("pytest-cluster unreachable: no answer", True),
    ("PC-GPU-ROWREMAP pytest-cluster rejected: 1 clause(s) failed: gpus.row_remap", True),
    ("PC-NET-1 pytest-cluster rejected: x", True),
    ("maintenance", False),
    ("Prolog error", False),  # slurmd's, where the prolog failed: not ours to undo
    ("admin: pytest-cluster rejected: x", False),
    (" pytest-cluster rejected: x", False),
    ("pytest-clusterx rejected", False),
    ("pc-gpu pytest-cluster rejected: x", False),
    ("PC-GPU  pytest-cluster rejected: x", False),
    ("", False),
])
def test_a_reason_is_ours_only_as_pytest_cluster_writes_it(reason: str, ours: bool) -> None:
    assert is_ours(reason) is ours


def test_the_state_is_read_with_one_sinfo_for_a_runs_nodes() -> None:
    assert states_commands(["n1", "n2", "n3", "gpu-007"]) == [
        ["sinfo", "--noheader", "--all", "--Node", "--nodes=n[1-3],gpu-007",
         "--format=%N|%T|%E"]]
    assert states_commands([f"gpu-{i:04d}" for i in range(1, 1001)]) == [
        ["sinfo", "--noheader", "--all", "--Node", "--nodes=gpu-[0001-1000]",
         "--format=%N|%T|%E"]]
    assert states_commands([]) == []


def test_names_past_what_one_argument_holds_are_read_in_several_calls() -> None:
    """65,536 names unlike each other (no shared number to bracket) are ~800 kB: more than
    Linux takes in one argument (128 KiB); each call is asked about a part, all of them
    once."""
    names = ["h" + "".join(chr(97 + i // 26**k % 26) for k in range(4)) + "-n"
             for i in range(65_536)]
    commands = states_commands(names)
    assert len(commands) > 1
    asked = [arg.removeprefix("--nodes=") for command in commands for arg in command
             if arg.startswith("--nodes=")]
    assert all(len(arg) <= MAX_NAMES_CHARS for arg in asked)
    assert sorted(name for arg in asked for name in expand_hostlist(arg)) == sorted(names)


def test_states_are_parsed_with_a_reason_that_holds_spaces_and_bars() -> None:
    text = ("n1|drained|pytest-cluster rejected: a | b\n"
            "n1|drained|pytest-cluster rejected: a | b\n"  # another partition: alike
            "N2|IDLE|none\n"
            "n3|draining*|maintenance: rack 4|PDU\n"
            "n4|idle|(null)\n"
            "not a line\n"
            "|idle|x\n")
    assert parse_states(text) == {
        "n1": NodeState("drained", "pytest-cluster rejected: a | b"),
        "n2": NodeState("idle", ""),
        "n3": NodeState("draining*", "maintenance: rack 4|PDU"),
        "n4": NodeState("idle", "")}


def test_a_node_whose_lines_disagree_has_no_known_state() -> None:
    """A reason holding a newline can put a line of another node's shape in sinfo's output:
    where a node's lines disagree, what SLURM holds for it is not known."""
    text = "n1|drained|maintenance\nn2|idle|none\nn1|idle|none\n"
    assert parse_states(text) == {"n1": None, "n2": NodeState("idle", "")}


@pytest.mark.parametrize(("state", "drained"), [
    ("drained", True), ("draining", True), ("drained*", True), ("mixed+drain", True),
    ("drng", True), ("idle+drain~", True), ("failing", True), ("fail*", True),
    ("idle", False), ("down*", False), ("allocated", False), ("mixed", False),
    ("maint", False)])
def test_drained_is_any_drain_or_failing_state(state: str, drained: bool) -> None:
    assert NodeState(state, OURS_REASON).drained is drained
    # an admin's State=FAIL is never ours to undo, whatever its reason
    assert NodeState(state, OURS_REASON).ours is ("fail" not in state)


def failed(name: str, reason: str = "1 clause(s) failed: fabric.ports") -> NodeVerdict:
    return NodeVerdict(name, REJECTED, reason)


PASSED = Decision(PASS, ("PASS: ...",), accepted=("n1", "n2", "n3"))
FAILED = Decision(FAIL, ("FAIL ...",), (failed("n1"), failed("n2")), accepted=("n3", "n4"))


def test_only_a_judged_runs_nodes_are_looked_up() -> None:
    assert looked_up(PASSED, drain=True, resume=True) == ["n1", "n2", "n3"]
    assert looked_up(PASSED, drain=True, resume=False) == []
    assert looked_up(FAILED, drain=True, resume=True) == ["n1", "n2", "n3", "n4"]
    assert looked_up(FAILED, drain=False, resume=True) == ["n3", "n4"]
    assert looked_up(FAILED, drain=True, resume=False) == ["n1", "n2"]
    for decision in (Decision(ERROR, ("ERROR: ...",), accepted=("n1",)),
                     Decision(PASS, (), simulated=True, accepted=("n1",)),
                     Decision(FAIL, (), (failed("n1"),), simulated=True, accepted=("n2",))):
        assert looked_up(decision, drain=True, resume=True) == []


def test_a_node_drained_by_us_that_passed_is_resumed() -> None:
    states = {"n1": NodeState("drained", OURS_REASON), "n2": NodeState("idle", ""),
              "n3": NodeState("draining", "PC-DISK-FULL pytest-cluster rejected: x")}
    assert steps(PASSED, states, drain=True, resume=True) == [
        Step(f"it passed; its drain was ours: {OURS_REASON}",
             ("scontrol", "update", "NodeName=n1", "State=RESUME"), "resume"),
        Step("it passed; its drain was ours: PC-DISK-FULL pytest-cluster rejected: x",
             ("scontrol", "update", "NodeName=n3", "State=RESUME"), "resume")]
    assert steps(PASSED, states, drain=True, resume=False) == []


def test_a_node_drained_by_someone_else_stays_drained_and_is_said() -> None:
    states = {"n1": NodeState("drained", "maintenance"), "n2": NodeState("failing", OURS_REASON),
              "n3": NodeState("drained", "Prolog error")}
    assert steps(PASSED, states, drain=False, resume=True) == [
        Step("not resumed n1: drained by someone else: maintenance"),
        Step(f"not resumed n2: drained by someone else: {OURS_REASON}"),
        Step("not resumed n3: drained by someone else: Prolog error")]


def test_a_node_sinfo_does_not_list_or_knows_not_is_not_resumed_and_said_once() -> None:
    states: dict[str, NodeState | None] = {"n2": None}
    assert steps(PASSED, states, drain=False, resume=True) == [
        Step("not resumed n2: sinfo's lines for it disagree, so its state is not known"),
        Step("not resumed n1,n3: sinfo lists no such node")]


def test_a_failed_node_drained_by_us_gets_the_new_reason_one_drained_by_another_keeps_theirs(
        ) -> None:
    states = {"n1": NodeState("drained", "pytest-cluster rejected: an older reason"),
              "n2": NodeState("drained", "maintenance: new DIMMs"),
              "n3": NodeState("drained", OURS_REASON), "n4": NodeState("mixed", "")}
    assert steps(FAILED, states, drain=True, resume=True) == [
        Step("", ("scontrol", "update", "NodeName=n1", "State=DRAIN",
                  "Reason=pytest-cluster rejected: 1 clause(s) failed: fabric.ports"),
             "drain"),
        Step("kept drained n2: drained by someone else: maintenance: new DIMMs; its "
             "failure: pytest-cluster rejected: 1 clause(s) failed: fabric.ports"),
        Step(f"it passed; its drain was ours: {OURS_REASON}", tuple(resume_command("n3")),
             "resume")]


def test_an_error_or_a_simulated_run_resumes_and_drains_nothing() -> None:
    states = {"n1": NodeState("drained", OURS_REASON), "n2": NodeState("drained", OURS_REASON)}
    for decision in (Decision(ERROR, ("ERROR: ...",), accepted=("n1",)),
                     Decision(PASS, (), simulated=True, accepted=("n1",)),
                     Decision(FAIL, (), (failed("n2"),), simulated=True, accepted=("n1",))):
        assert steps(decision, states, drain=True, resume=True) == []


def test_without_the_states_failed_nodes_are_drained_and_nothing_is_resumed() -> None:
    assert [step.verb for step in steps(FAILED, None, drain=True, resume=True)] == [
        "drain", "drain"]
    assert steps(PASSED, None, drain=True, resume=True) == []
    assert unread_line("sinfo: exit 1: no controller", True, True) == (
        "could not read the nodes' state in SLURM: sinfo: exit 1: no controller; no node is "
        "resumed, and the failed nodes are drained whatever their drain reason")
    assert unread_line("sinfo: x", False, True) == (
        "could not read the nodes' state in SLURM: sinfo: x; no node is resumed")


def test_someone_elses_reason_is_said_in_one_bounded_line() -> None:
    states = {"n1": NodeState("drained", "maint\x1b[2J\nFAIL n9: forged" + "x" * 5000)}
    step, = steps(Decision(PASS, (), accepted=("n1",)), states, drain=False, resume=True)
    assert step.line.isprintable() and len(step.line) < 400
    assert step.line.startswith("not resumed n1: drained by someone else: maint\\x1b[2J\\n")


def test_a_runs_accepted_nodes_are_those_whose_own_verdict_passed() -> None:
    """A PASS accepted every node; a FAIL the nodes that passed beside the failed and those
    not checked; an ERROR none (nothing is resumed on it)."""
    from pytest_cluster.evidence.verdict.gate import decide
    from pytest_cluster.evidence.verdict.nodes import ACCEPTED, NOT_CHECKED, outcome_of

    def run(*nodes: tuple[str, str]) -> dict[str, object]:
        verdict = next((v for _, v in nodes if v != ACCEPTED), ACCEPTED)
        return {"verdict": verdict, "outcome": outcome_of(verdict), "level": "sanity",
                "cluster_checks_failed": [],
                "nodes": [{"node": n, "verdict": v, "outcome": outcome_of(v), "reason": "r"}
                          for n, v in nodes]}

    assert decide(run(("n1", ACCEPTED), ("n2", ACCEPTED)), 0).accepted == ("n1", "n2")
    mixed = decide(run(("n1", REJECTED), ("n2", ACCEPTED), ("n3", NOT_CHECKED)), 1)
    assert (mixed.outcome, mixed.accepted) == (FAIL, ("n2",))
    stopped = decide(run(("n1", NOT_CHECKED), ("n2", ACCEPTED)), 1)
    assert (stopped.outcome, stopped.accepted) == (ERROR, ())
