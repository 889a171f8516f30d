"""A gate's decision (evidence/verdict/gate.py, `pytest-cluster gate`): PASS, FAIL or ERROR from a
run's verdict.json and pytest's exit status. Only FAIL takes a node out; a run that could
not judge (a spec with a typo, a crash, a time limit, a verdict not decided) is an ERROR
that names why and drains nothing; a verdict.json that is not this run's, not as written or
not a JSON object is no verdict."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.evidence.record.sealing import Sealed, sealed_line
from pytest_cluster.evidence.verdict.age import DEFAULT_VALID_FOR_S, validity
from pytest_cluster.evidence.verdict.gate import (
    EXIT_MEANING,
    MAX_JSON_VALUES,
    MAX_VERDICT_BYTES,
    decide,
    drain_commands,
    exit_meaning,
    gate,
    log_reason,
)
from pytest_cluster.evidence.verdict.nodes import (
    ACCEPTED,
    ERROR,
    FAIL,
    NOT_CHECKED,
    PASS,
    REJECTED,
    UNREACHABLE,
    outcome_of,
)
from pytest_cluster.hostlist import MAX_NODES
from pytest_cluster.units import utc


def node(name: str, verdict: str, reason: str = "") -> dict[str, Any]:
    return {"node": name, "verdict": verdict, "outcome": outcome_of(verdict),
            "reason": reason}


def document(*nodes: dict[str, Any], verdict: str = ACCEPTED, **more: Any) -> dict[str, Any]:
    return {"verdict": verdict, "outcome": outcome_of(verdict), "level": "sanity",
            "simulated": False, "nodes": list(nodes), "cluster_checks_failed": [], **more}


def test_outcomes_follow_from_every_verdict() -> None:
    assert {v: outcome_of(v) for v in (ACCEPTED, REJECTED, UNREACHABLE, NOT_CHECKED,
                                       "INCOMPLETE")} == {
        ACCEPTED: PASS, REJECTED: FAIL, UNREACHABLE: FAIL, NOT_CHECKED: ERROR,
        "INCOMPLETE": ERROR}


def test_every_node_passed_is_a_pass() -> None:
    decided = decide(document(node("n1", ACCEPTED, "all 70 checks passed")), 0)
    assert (decided.outcome, decided.exit_code) == (PASS, 0)
    assert decided.lines == ("PASS: 1 node(s) passed every check at level sanity: n1",)


def test_a_failed_node_is_a_fail_naming_it_and_only_it_is_drained() -> None:
    decided = decide(document(node("n1", ACCEPTED), node("n2", REJECTED, "1 clause(s) "
                                                         "failed: fabric.ports"),
                              node("n3", UNREACHABLE, "n3: host probe unreachable"),
                              verdict=REJECTED), 1)
    assert (decided.outcome, decided.exit_code) == (FAIL, 1)
    assert decided.lines == ("FAIL n2: rejected: 1 clause(s) failed: fabric.ports",
                             "FAIL n3: unreachable: n3: host probe unreachable")
    assert drain_commands(decided) == [
        ["scontrol", "update", "NodeName=n2", "State=DRAIN",
         "Reason=pytest-cluster rejected: 1 clause(s) failed: fabric.ports"],
        ["scontrol", "update", "NodeName=n3", "State=DRAIN",
         "Reason=pytest-cluster unreachable: n3: host probe unreachable"]]


def test_the_drain_reason_starts_with_the_nodes_code_and_only_with_a_code() -> None:
    """verdict.json's code of a node's first failure leads its drain reason (`sinfo -R`
    groups by it); a code that is not one (a verdict.json from elsewhere) never reaches
    the line."""
    rejected = {**node("n2", REJECTED, "1 clause(s) failed: gpus.row_remap"),
                "code": "PC-GPU-ROWREMAP", "actor": "provider-hardware",
                "action": "reset the GPU\nthen RMA it"}
    forged = {**node("n3", REJECTED, "1 clause(s) failed: gpus.xid"),
              "code": "PC-X State=RESUME", "actor": "provider-hardware", "action": "x"}
    decided = decide(document(rejected, forged, verdict=REJECTED), 1)
    assert [command[4] for command in drain_commands(decided)] == [
        "Reason=PC-GPU-ROWREMAP pytest-cluster rejected: 1 clause(s) failed: gpus.row_remap",
        "Reason=pytest-cluster rejected: 1 clause(s) failed: gpus.xid"]
    # the FAIL line names it too (a simulated run's gate, a prolog's stderr drain nothing)
    # with who acts and what to do, in one line; a forged code says neither
    assert decided.lines == (
        "FAIL n2: rejected: 1 clause(s) failed: gpus.row_remap; PC-GPU-ROWREMAP "
        "(provider-hardware): reset the GPU\\nthen RMA it",
        "FAIL n3: rejected: 1 clause(s) failed: gpus.xid")
    assert decide(document(rejected, verdict=REJECTED, simulated=True), 1).lines[0] == \
        decided.lines[0]
    unknown = {**rejected, "actor": "the janitor", "action": "x" * 1000}
    line = decide(document(unknown, verdict=REJECTED), 1).lines[0]
    assert line.startswith("FAIL n2: rejected: 1 clause(s) failed: gpus.row_remap; "
                           "PC-GPU-ROWREMAP: xxx") and "janitor" not in line
    assert len(line) < 300


def test_a_fail_also_says_what_it_could_not_judge_and_drains_only_the_failed() -> None:
    """A run stopped by -x: one node failed, the others NOT CHECKED, a check across nodes
    without a culprit; the gate fails the one, and says each of the rest (it said none)."""
    decided = decide(document(node("n1", REJECTED, "1 clause(s) failed: gpus.count"),
                              node("n2", NOT_CHECKED, "not reached"),
                              verdict=REJECTED, cluster_checks_failed=[
        {"clause": "interconnect.latency", "message": "not established"}]), 1)
    assert (decided.outcome, decided.exit_code) == (FAIL, 1)
    assert decided.lines == (
        "FAIL n1: rejected: 1 clause(s) failed: gpus.count",
        "ERROR n2: not checked: not reached (not drained)",
        "ERROR: a check across nodes failed with no node to blame: interconnect.latency: not "
        "established (not drained)")
    assert [command[2] for command in drain_commands(decided)] == ["NodeName=n1"]


def test_a_not_checked_node_ends_with_what_kept_it_undecided_never_cut_never_drained() -> None:
    """A NOT CHECKED node's line ends with its fault (verdict.json's code, actor, action:
    what kept it undecided), after its reason cut to the gate's bound, and '(not
    drained)'; the node drains nothing."""
    action = "fix the node's setup DCGM names (persistence mode: nvidia-smi -pm 1)"
    config = {**node("n2", NOT_CHECKED, "1 could not be decided (DCGM: " + "x" * 500 + ")"),
              "code": "PC-DCGM-CONFIG", "actor": "provider-hardware", "action": action}
    decided = decide(document(node("n1", REJECTED, "1 clause(s) failed: gpus.count"),
                              config, verdict=REJECTED), 1)
    assert [command[2] for command in drain_commands(decided)] == ["NodeName=n1"]
    said = decided.lines[1]
    assert said.startswith("ERROR n2: not checked: 1 could not be decided (DCGM: xxx")
    assert "characters cut" in said
    assert said.endswith(f"; PC-DCGM-CONFIG (provider-hardware): {action} (not drained)")


def test_a_simulated_failure_drains_nothing() -> None:
    decided = decide(document(node("n2", REJECTED, "x"), verdict=REJECTED, simulated=True), 1)
    assert decided.outcome == FAIL and drain_commands(decided) == []


def test_a_node_not_checked_is_an_error_that_drains_nothing() -> None:
    decided = decide(document(node("n1", NOT_CHECKED, "1 could not be decided (busy)"),
                              verdict="INCOMPLETE"), 1)
    assert (decided.outcome, decided.exit_code) == (ERROR, 2)
    assert decided.lines == ("ERROR n1: not checked: 1 could not be decided (busy)",
                             "ERROR: pytest ended with exit 1", "no node is drained for it")
    assert drain_commands(decided) == []


def test_nodes_this_machine_could_not_check_are_one_error_line_that_drains_nothing() -> None:
    """One controller-side fault on three nodes: one line saying it once; the checks
    across them it kept from being made are not said again; a node rejected beside them
    is still the FAIL it is."""
    fault = "this machine cannot resolve the name (ssh: Could not resolve hostname)"
    unchecked = [{**node(f"gpu-00{i}", NOT_CHECKED, f"this machine could not check it: {fault}"),
                  "controller_fault": fault} for i in (1, 2, 3)]
    unmade = {"clause": "interconnect.busbw[inter_node]", "where": "4 nodes (gpu-001..gpu-004)",
              "message": f"gpu-001: host probe controller: {fault}", "kind": "controller"}
    decided = decide(document(*unchecked, verdict="INCOMPLETE",
                              cluster_checks_failed=[unmade]), 1)
    assert (decided.outcome, decided.exit_code, drain_commands(decided)) == (ERROR, 2, [])
    assert decided.lines == (
        f"ERROR gpu-[001-003]: not checked: this machine could not check them: {fault}",
        "ERROR: pytest ended with exit 1", "no node is drained for it")
    rejected = node("gpu-004", REJECTED, "1 clause(s) failed: gpus.count")
    decided = decide(document(*unchecked, rejected, verdict=REJECTED,
                              cluster_checks_failed=[unmade]), 1)
    assert (decided.outcome, [n.node for n in decided.failed]) == (FAIL, ["gpu-004"])
    assert decided.lines == (
        "FAIL gpu-004: rejected: 1 clause(s) failed: gpus.count",
        f"ERROR gpu-[001-003]: not checked: this machine could not check them: {fault} "
        "(not drained)")


def test_a_run_stopped_with_every_node_judged_is_an_error_saying_it_was_stopped() -> None:
    """Every node ACCEPTED, the run INCOMPLETE because it was stopped (a soak's SIGTERM):
    the gate says so, not merely the verdict's name."""
    decided = decide(document(node("n1", ACCEPTED), node("n2", ACCEPTED),
                              verdict="INCOMPLETE", status="interrupted"), 2)
    assert (decided.outcome, decided.exit_code) == (ERROR, 2)
    assert decided.lines == (
        "ERROR: the run's verdict is INCOMPLETE: the run was stopped before every selected "
        "check ran", f"ERROR: pytest ended with exit 2: {EXIT_MEANING[2]}",
        "no node is drained for it")


def test_an_undecided_check_of_a_node_is_said_once_by_its_node() -> None:
    """verdict.json lists an undecided check of one node among the cluster's failures
    too; the gate says it once, on the node's line, not again as 'no node to blame'."""
    decided = decide(document(node("u1", NOT_CHECKED, "1 could not be decided"),
                              verdict="INCOMPLETE", cluster_checks_failed=[
        {"clause": "interconnect.busbw[node_network]", "where": "u1", "message": "u1 ..."},
        {"clause": "interconnect.latency", "where": "all", "message": "not established"}]), 1)
    assert decided.lines[:2] == (
        "ERROR u1: not checked: 1 could not be decided",
        "ERROR: a check across nodes failed with no node to blame: interconnect.latency: "
        "not established")
    assert not any("node_network" in line for line in decided.lines)


def test_a_check_across_nodes_that_names_its_culprit_is_its_fail_alone() -> None:
    """A one-node run whose node read a checkpoint back wrong: verdict.json lists the
    check among the cluster's failures with its culprit; the gate fails the node for it,
    and does not call it a check with no node to blame as well."""
    checks = [{"clause": "storage[/shared].checkpoint.read", "where": "all",
               "culprits": "g1", "message": "all /shared read: 8 block(s) read back not "
                                            "as written, on g1"},
              {"clause": "storage[/shared].checkpoint.write", "where": "all",
               "message": "all /shared write: measured 1 < required 2 GB/s per node"}]
    decided = decide(document(node("g1", REJECTED, "1 clause(s) failed: "
                                                   "storage[/shared].checkpoint.read"),
                              verdict=REJECTED, cluster_checks_failed=checks), 1)
    assert (decided.outcome, decided.lines) == (FAIL, (
        "FAIL g1: rejected: 1 clause(s) failed: storage[/shared].checkpoint.read",
        "ERROR: a check across nodes failed with no node to blame: "
        "storage[/shared].checkpoint.write: all /shared write: measured 1 < required 2 GB/s "
        "per node (not drained)"))


def test_a_check_across_nodes_without_a_culprit_is_an_error() -> None:
    decided = decide(document(node("n1", ACCEPTED), verdict=REJECTED, cluster_checks_failed=[
        {"clause": "interconnect.busbw[inter_node]", "message": "measured 3 < 40 GB/s"}]), 1)
    assert decided.outcome == ERROR
    assert decided.lines[0] == ("ERROR: a check across nodes failed with no node to blame: "
                                "interconnect.busbw[inter_node]: measured 3 < 40 GB/s")


def test_every_node_passed_but_pytest_did_not_is_an_error() -> None:
    decided = decide(document(node("n1", ACCEPTED)), 3, log_line="INTERNALERROR> boom")
    assert decided.outcome == ERROR
    assert decided.lines == (f"ERROR: pytest ended with exit 3: {EXIT_MEANING[3]}: "
                             "INTERNALERROR> boom", "no node is drained for it")


@pytest.mark.parametrize("status", sorted(EXIT_MEANING))
def test_a_run_without_a_verdict_is_an_error_saying_why(status: int) -> None:
    decided = decide(None, status, "it wrote no verdict.json", "ERROR: t.yaml:3: gpuz: "
                     "unknown key")
    assert decided.outcome == ERROR and decided.exit_code == 2
    assert decided.lines == (f"ERROR: the check did not finish (exit {status}: "
                             f"{EXIT_MEANING[status]}; it wrote no verdict.json; ERROR: "
                             "t.yaml:3: gpuz: unknown key); no node is drained for it",)


def test_exit_meanings() -> None:
    assert exit_meaning(143) == "exit 143: killed by signal 15"
    assert exit_meaning(1) == "exit 1"


@pytest.mark.parametrize(("text", "why"), [
    ("[]", "not a JSON object"),
    ('{"nodes": 3}', "'nodes' is not a list"),
    ('{"nodes": [{"node": "n1", "verdict": "ACCEPTED", "outcome": "FAIL", "reason": ""}]}',
     "outcome FAIL does not follow from verdict 'ACCEPTED'"),
    ('{"nodes": [{"node": "n1 State=RESUME", "verdict": "REJECTED", "outcome": "FAIL", '
     '"reason": ""}]}', "a node's name is not a host name"),
    ('{"nodes": [{"node": "n1"}]}', "a node entry lacks node, verdict, outcome or reason"),
    ('{"nodes": [], "x": NaN}', "NaN is not a number"),
    ("[" * 100_000, "nested too deeply"),
])
def test_a_verdict_not_as_written_is_an_error(tmp_path: Path, text: str, why: str) -> None:
    (tmp_path / "verdict.json").write_text(text)
    decided = gate(tmp_path, 1)
    assert decided.outcome == ERROR and why in " ".join(decided.lines), decided.lines
    assert drain_commands(decided) == []


def test_a_verdict_too_large_or_older_than_the_run_is_none(tmp_path: Path) -> None:
    path = tmp_path / "latest" / "verdict.json"
    path.parent.mkdir()
    path.write_text(json.dumps(document(node("n1", REJECTED, "x"), verdict=REJECTED)))
    assert gate(tmp_path, 1).outcome == FAIL  # read through reports/latest
    old = time.time() - 3600
    os.utime(path, (old, old))
    decided = gate(tmp_path, 1, since=time.time())
    assert decided.outcome == ERROR and "is an earlier run's" in decided.lines[0]
    with path.open("wb") as stream:
        stream.truncate(MAX_VERDICT_BYTES + 1)
    assert f"larger than {MAX_VERDICT_BYTES} bytes" in gate(tmp_path, 1).lines[0]


def test_the_reason_from_a_log_is_its_last_error_line_bounded(tmp_path: Path) -> None:
    log = tmp_path / "pytest.log"
    log.write_bytes(b"x" * 200_000 + b"\nERROR: spec.yaml:3: gpuz: unknown key\n\x1b[2Jbye\n")
    assert log_reason(log) == "ERROR: spec.yaml:3: gpuz: unknown key"
    log.write_bytes(b"\n  last words " + b"y" * 1000 + b"\n\n")
    said = log_reason(log)
    assert said.startswith("last words y") and said.endswith("y") and len(said) <= 300
    assert " [...740 characters cut...] " in said  # the cut is marked, with what it cut
    assert log_reason(tmp_path / "none") == ""
    sealed = sealed_line(Sealed(tmp_path / "manifest.intoto.json", "ab" * 32, (), ()))
    log.write_text(f"E   boom\n===== 1 failed, 9 passed in 2.00s =====\n{sealed}\n")
    assert log_reason(log) == "E   boom"  # an error line first, wherever it is
    log.write_text(f"x\n===== 1 failed, 9 passed in 2.00s =====\n{sealed}\n")
    assert log_reason(log) == "1 failed, 9 passed in 2.00s"  # not where the evidence is


@pytest.mark.parametrize("given", ["256", "-1", "999999999999", "1.5", "٣"])
def test_an_exit_status_no_shell_gives_is_a_usage_error(tmp_path: Path, given: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest_cluster.cli", "gate", str(tmp_path),
                           f"--exit-status={given}"], capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == (
        f"pytest-cluster gate: error: argument --exit-status: expected an exit status from "
        f"0 to 255 (the shell's $?), got {given!r}")


def test_a_reader_gone_is_no_traceback_and_the_gate_still_decides(tmp_path: Path) -> None:
    """`pytest-cluster gate ... | head -1`, the pipe closed before the gate writes: no
    traceback, and the exit status is still the decision's."""
    (tmp_path / "verdict.json").write_text(json.dumps(document(
        node("n2", REJECTED, "1 clause(s) failed: fabric.ports"), verdict=REJECTED,
        simulated=True)))
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "wb") as closed:
        done = subprocess.run([sys.executable, "-m", "pytest_cluster.cli", "gate",
                               str(tmp_path), "--exit-status", "1", "--drain"], stdout=closed,
                              stderr=subprocess.PIPE, text=True, check=False, timeout=60)
    assert (done.returncode, done.stderr) == (1, "")


def test_a_usage_error_of_several_problems_is_said_with_each(tmp_path: Path) -> None:
    log = tmp_path / "pytest.log"
    log.write_text("ERROR: t.yaml: 2 problems in the spec:\n  t.yaml:7: host.memroy: unknown "
                   "key\n  t.yaml:8: gpuz: unknown key\n\n")
    assert log_reason(log) == ("ERROR: t.yaml: 2 problems in the spec: t.yaml:7: host.memroy: "
                               "unknown key; t.yaml:8: gpuz: unknown key")


def test_the_command_prints_a_line_per_reason_and_exits_by_outcome(tmp_path: Path) -> None:
    (tmp_path / "verdict.json").write_text(json.dumps(document(
        node("n2", REJECTED, "1 clause(s) failed: fabric.ports"), verdict=REJECTED,
        simulated=True)))
    done = subprocess.run([sys.executable, "-m", "pytest_cluster.cli", "gate", str(tmp_path),
                           "--exit-status", "1", "--drain"], capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "pytest-cluster FAIL n2: rejected: 1 clause(s) failed: fabric.ports",
        "pytest-cluster not drained: a simulated cluster's nodes are no SLURM nodes"]


def _gate_command(run: Path, *more: str, env: dict[str, str] | None = None,
                  ) -> subprocess.CompletedProcess[str]:
    """`pytest-cluster gate RUN --exit-status 1 ...`; a hang is a failure (TimeoutExpired),
    never a test that waits forever."""
    return subprocess.run([sys.executable, "-m", "pytest_cluster.cli", "gate", str(run),
                           "--exit-status", "1", *more], capture_output=True, text=True,
                          check=False, timeout=60, env=env)


def test_a_verdict_that_is_a_fifo_is_refused_at_once_naming_it(tmp_path: Path) -> None:
    """Issue 48: verdict.json as a FIFO blocked the gate forever (no writer ever came)."""
    os.mkfifo(tmp_path / "verdict.json")
    done = _gate_command(tmp_path)
    assert done.returncode == 2, done.stderr
    line, = done.stdout.splitlines()
    assert f"{tmp_path / 'verdict.json'}: a fifo, not a regular file" in line
    assert line.endswith("no node is drained for it")


def test_a_log_that_is_a_fifo_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "verdict.json").write_text(json.dumps(document(node("n1", ACCEPTED))))
    os.mkfifo(tmp_path / "pytest.log")
    done = _gate_command(tmp_path, "--log", str(tmp_path / "pytest.log"))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == (f"pytest-cluster gate: error: --log "
                                            f"{tmp_path / 'pytest.log'}: a fifo, not a "
                                            "regular file")


@pytest.fixture
def scontrol(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A scontrol on PATH that records each call, one line each, and a sinfo that lists no
    node (--drain reads the nodes' state first; this machine's may be a real one): (env,
    the record)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "scontrol.calls"
    fake = bin_dir / "scontrol"
    fake.write_text(f'#!/bin/sh\necho "$*" >>{calls}\n')
    fake.chmod(0o755)
    (bin_dir / "sinfo").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "sinfo").chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}, calls


def test_a_node_listed_twice_drains_nothing_and_says_so(
        tmp_path: Path, scontrol: tuple[dict[str, str], Path]) -> None:
    """Issue 48: a verdict.json listing one node 400,000 times made the gate call scontrol
    for each; a run writes each node once, so such a verdict is none: an error (exit 2,
    the gate's usage errors' and ERROR's), no scontrol called."""
    env, calls = scontrol
    failed = node("n2", REJECTED, "1 clause(s) failed: fabric.ports")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "verdict.json").write_text(json.dumps(document(
        failed, node("n1", ACCEPTED), failed, verdict=REJECTED)))
    done = _gate_command(tmp_path / "run", "--drain", env=env)
    assert done.returncode == 2 and not calls.exists()
    assert done.stdout.splitlines() == [
        "pytest-cluster ERROR: verdict.json cannot be read: node n2 is listed twice (one "
        "run writes each node once; a host name's case does not matter)"]
    (tmp_path / "run" / "verdict.json").write_text(json.dumps(document(
        failed, verdict=REJECTED)))
    assert _gate_command(tmp_path / "run", "--drain", env=env).returncode == 1
    assert calls.read_text().splitlines() == [
        "update NodeName=n2 State=DRAIN Reason=pytest-cluster rejected: 1 clause(s) "
        "failed: fabric.ports"]  # the same fake drains a verdict as written


def test_more_nodes_than_one_run_writes_is_refused(tmp_path: Path) -> None:
    """A spec lists at most MAX_NODES nodes (hostlist), so a verdict of more is none: said
    before anything is decided, whether it is read (counted as parsed) or given."""
    many = [node(f"n{i}", REJECTED, "x") for i in range(MAX_NODES + 1)]
    decided = decide(document(*many, verdict=REJECTED), 1)
    assert (decided.outcome, decided.failed) == (ERROR, ())
    assert decided.lines == (f"ERROR: verdict.json cannot be read: {MAX_NODES + 1}, more "
                             f"than {MAX_NODES} node entries: one run writes at most "
                             f"{MAX_NODES} (a spec's most)",)
    (tmp_path / "verdict.json").write_text(json.dumps(document(*many, verdict=REJECTED)))
    decided = gate(tmp_path, 1)
    assert (decided.outcome, decided.failed) == (ERROR, ())
    assert f"more than {MAX_NODES} node entries: one run writes at most" in decided.lines[0]
    assert decide(document(*many[:MAX_NODES], verdict=REJECTED), 1).outcome == FAIL


def test_every_line_is_one_line_escaped_and_bounded_with_a_marked_cut() -> None:
    """A reason holding a newline, an escape sequence and 100 kB: its FAIL line is one
    line, the controls written as escapes, cut with a marker saying how much."""
    reason = "1 clause(s) failed: x\nFAIL n9: forged\x1b[2J" + "y" * 100_000
    decided = decide(document(node("n1", REJECTED, reason), verdict=REJECTED), 1)
    line, = decided.lines
    assert "\n" not in line and "\x1b" not in line and len(line) < 400
    assert line.startswith("FAIL n1: rejected: 1 clause(s) failed: x\\nFAIL n9: forged"
                           "\\x1b[2J")
    assert "characters cut...]" in line and line.endswith("y")
    names = [f"gpu-{i:05d}" for i in range(MAX_NODES)]
    passed, = decide(document(*(node(n, ACCEPTED) for n in names)), 0).lines
    assert passed == (f"PASS: {MAX_NODES} node(s) passed every check at level sanity: "
                      f"gpu-[00000-{MAX_NODES - 1}]")


def test_a_verdict_of_more_values_than_a_run_writes_is_refused_unparsed(tmp_path: Path,
                                                                       ) -> None:
    """64 MiB of '[],' (21 million empty lists) took the gate 1.7 GB and 23 s to parse; it
    counts the lists, objects, items and members first (their '[', '{', ',' and ':') and
    refuses more than a run's verdict holds, before parsing; as many as that is read."""
    flood = MAX_JSON_VALUES // 2 + 1  # '[' and ',' each
    path = tmp_path / "verdict.json"
    path.write_bytes(b'{"nodes": [], "x": [' + b"[]," * flood + b"[]]}")
    decided = gate(tmp_path, 0)
    assert (decided.outcome, decided.failed) == (ERROR, ())
    assert f"more than the {MAX_JSON_VALUES} a run's verdict holds" in decided.lines[0]
    path.write_bytes(b'{"nodes": [], "x": [' + b"[]," * (flood - 10) + b"[]]}")
    assert "more than the" not in " ".join(gate(tmp_path, 0).lines)


#: Verdicts that are not as a run writes them, each with what the gate must say: a key
#: given twice (json keeps the last: a forged "nodes": [] after the run's passed), a node
#: twice in another case, a name no host has, a verdict of no node, counts that disagree.
NOT_AS_WRITTEN = {
    '{"verdict": "REJECTED", "outcome": "FAIL", "level": "sanity", "nodes": [{"node": "n1", '
    '"verdict": "REJECTED", "outcome": "FAIL", "reason": "x"}], "nodes": [{"node": "n1", '
    '"verdict": "ACCEPTED", "outcome": "PASS", "reason": "x"}], "verdict": "ACCEPTED", '
    '"outcome": "PASS"}': "key 'nodes' is given twice in one object",
    json.dumps(document(node("n1", ACCEPTED))).replace(
        '"outcome": "PASS"', '"outcome": "FAIL", "outcome": "PASS"', 1):
    "key 'outcome' is given twice in one object",
    json.dumps(document(node("n2", REJECTED), node("N2", ACCEPTED), verdict=REJECTED)):
    "node N2 is listed twice",
    json.dumps(document(node("n2.", REJECTED), verdict=REJECTED)):
    "a node's name is not a host name: 'n2.'",
    json.dumps(document(node("a..b", REJECTED), verdict=REJECTED)):
    "a node's name is not a host name: 'a..b'",
    json.dumps(document()): "it lists no node",
    json.dumps(document(node("n1", ACCEPTED), nodes_checked=4)):
    "'nodes_checked' is 4, where 'nodes' lists 1: its counts disagree",
    json.dumps(document(node("n1", ACCEPTED), node("n2", ACCEPTED), nodes_in_spec=1)):
    "'nodes_in_spec' is 1, where 'nodes' lists 2: its counts disagree",
    json.dumps(document(node("n1", ACCEPTED), nodes_checked=True)):
    "'nodes_checked' is not a count of nodes",
}


@pytest.mark.parametrize("text", NOT_AS_WRITTEN)
def test_a_verdict_not_as_a_run_writes_it_drains_nothing(
        tmp_path: Path, scontrol: tuple[dict[str, str], Path], text: str) -> None:
    env, calls = scontrol
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "verdict.json").write_text(text)
    done = _gate_command(tmp_path / "run", "--drain", env=env)
    assert (done.returncode, calls.exists()) == (2, False), done.stdout
    line, = done.stdout.splitlines()
    assert line.startswith("pytest-cluster ERROR") and NOT_AS_WRITTEN[text] in line, line


def test_a_pass_of_fewer_nodes_than_listed_is_no_pass() -> None:
    """nodes_checked counts the nodes at least one check of which ran: a PASS with fewer
    than it lists did not check them all."""
    decided = decide(document(node("n1", ACCEPTED), node("n2", ACCEPTED), nodes_checked=1), 0)
    assert decided.outcome == ERROR
    assert decided.lines[0] == "ERROR: the run checked 1 of the 2 node(s) its verdict lists"


@pytest.mark.parametrize("since", ["nan", "inf", "-5", "1e400", "x"])
def test_since_is_a_time(tmp_path: Path, since: str) -> None:
    """--since nan compared with no verdict's time: every verdict.json, however old, was
    this run's."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "verdict.json").write_text(json.dumps(document(
        node("n1", REJECTED), verdict=REJECTED)))
    done = _gate_command(tmp_path / "run", f"--since={since}")
    assert done.returncode == 2 and done.stdout == ""
    assert "argument --since: expected seconds since the epoch" in done.stderr


def test_a_socket_in_the_verdicts_place_is_named(tmp_path: Path) -> None:
    import socket
    (tmp_path / "run").mkdir()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "run" / "verdict.json"))
        done = _gate_command(tmp_path / "run")
    assert done.returncode == 2
    assert "verdict.json: a socket, not a regular file" in done.stdout


def test_a_run_path_too_long_or_with_a_newline_is_one_error_line(tmp_path: Path) -> None:
    """A path too long for the system was a traceback, exit 1: FAIL's code, on which a prolog
    drains the node; a newline in the run's path split the line ('FAIL n9' as a line of
    its own)."""
    for run in (tmp_path / ("x" * 5000), tmp_path / "a\nFAIL n9: forged"):
        with contextlib.suppress(OSError):
            run.mkdir()
            (run / "verdict.json").write_text("{bad")
        done = _gate_command(run)
        assert done.returncode == 2, done.stderr
        line, = done.stdout.splitlines()
        assert line.startswith("pytest-cluster ERROR: the check did not finish") and \
            line.isprintable() and len(line) < 1500, line
        assert done.stderr == ""


def test_the_gates_own_failure_is_an_error_never_a_fail(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    from pytest_cluster import cli

    def broken(*_: object) -> None:
        raise MemoryError("no memory left")

    monkeypatch.setattr(cli, "gate", broken)
    assert cli.main(["gate", str(tmp_path), "--exit-status", "0", "--drain"]) == 2
    assert capsys.readouterr().out == ("pytest-cluster ERROR: the gate could not decide: "
                                       "MemoryError: no memory left; no node is drained for "
                                       "it\n")


#: A verdict's times as a run writes them (age.validity): made at MADE, holding a day.
MADE = 1795932000.0  # 2026-11-29T06:00:00Z
AGED = validity(MADE, DEFAULT_VALID_FOR_S)


def test_a_fresh_pass_is_a_pass_saying_its_age() -> None:
    decided = decide(document(node("n1", ACCEPTED), **AGED), 0, now=MADE + 60)
    assert decided.outcome == PASS
    assert decided.lines == ("PASS: 1 node(s) passed every check at level sanity: n1 (made "
                             "at 2026-11-29T06:00:00Z, holds until 2026-11-30T06:00:00Z)",)


def test_a_stale_pass_is_an_error_saying_stale() -> None:
    now = MADE + DEFAULT_VALID_FOR_S + 1
    decided = decide(document(node("n1", ACCEPTED), **AGED), 0, now=now)
    assert (decided.outcome, decided.exit_code) == (ERROR, 2)
    assert decided.accepted == ()  # --resume puts back no node on a stale pass
    assert decided.lines == (f"ERROR: the verdict is stale: made at 2026-11-29T06:00:00Z, held "
                             f"until 2026-11-30T06:00:00Z, now {utc(now)}; no node is drained "
                             "for it",)


def test_a_stale_fail_drains_no_node() -> None:
    """A stale verdict decides nothing: the node may have been fixed since (or failed in
    another way): it is not drained on last week's evidence."""
    failed = document(node("n1", REJECTED, "1 clause(s) failed: gpus.count"), verdict=REJECTED,
                      **AGED)
    assert drain_commands(decide(failed, 1, now=MADE + 60)) != []  # fresh: drained
    decided = decide(failed, 1, now=MADE + DEFAULT_VALID_FOR_S + 1)
    assert decided.outcome == ERROR and "stale" in decided.lines[0]
    assert decided.failed == () and drain_commands(decided) == []


def test_max_age_refuses_a_verdict_its_valid_until_still_holds() -> None:
    passed = document(node("n1", ACCEPTED), **AGED)
    now = MADE + 2 * 3600
    assert decide(passed, 0, now=now).outcome == PASS
    for max_age in (1800.0, 3600.0):
        decided = decide(passed, 0, now=now, max_age=max_age)
        assert decided.outcome == ERROR
        assert decided.lines[0].startswith("ERROR: the verdict is stale: made at "
                                           "2026-11-29T06:00:00Z, 2 h ago, more than --max-age")
    assert decide(passed, 0, now=now, max_age=3 * 3600).outcome == PASS


def test_a_verdict_of_unknown_age_is_an_error_only_where_max_age_asks_it() -> None:
    earlier = document(node("n1", ACCEPTED))  # an earlier version's: no made_at
    assert decide(earlier, 0, now=MADE).outcome == PASS
    decided = decide(earlier, 0, now=MADE, max_age=86400)
    assert decided.outcome == ERROR and "its age is not recorded" in decided.lines[0]


def test_a_verdict_made_in_the_future_is_an_error() -> None:
    failed = document(node("n1", REJECTED, "x"), verdict=REJECTED, **AGED)
    assert decide(failed, 1, now=MADE - 60).outcome == FAIL  # within a clock's skew
    decided = decide(failed, 1, now=MADE - 3600)
    assert decided.outcome == ERROR and drain_commands(decided) == []
    assert "cannot be trusted" in decided.lines[0] and "no node is drained" in decided.lines[0]


@pytest.mark.parametrize(("times", "key"), [
    ({"made_at": 1795932000, "valid_until": AGED["valid_until"]}, "'made_at'"),
    ({"made_at": "2026-11-29T06:00Z", "valid_until": AGED["valid_until"]}, "'made_at'"),
    ({"made_at": AGED["made_at"], "valid_until": None}, "'valid_until'"),
    ({"made_at": "2026-11-29T06:00:00Z\x1b[2J", "valid_until": AGED["valid_until"]},
     "'made_at'"),
])
def test_a_malformed_time_is_one_error_line_naming_the_key(times: dict[str, Any],
                                                           key: str) -> None:
    failed = document(node("n1", REJECTED, "x"), verdict=REJECTED, **times)
    decided = decide(failed, 1, now=MADE)
    assert decided.outcome == ERROR and drain_commands(decided) == []
    assert len(decided.lines) == 1 and decided.lines[0].isprintable()
    assert decided.lines[0].startswith(f"ERROR: verdict.json cannot be read: {key} is not")


def test_the_command_refuses_a_stale_verdict_by_max_age_and_drains_nothing(
        tmp_path: Path) -> None:
    """The clock is read once, now: a verdict made two hours ago that holds a day is a PASS
    without --max-age, and stale under --max-age 1h (as '1h', '1 h' and 3600)."""
    made = time.time() - 2 * 3600
    (tmp_path / "verdict.json").write_text(json.dumps(document(
        node("n1", REJECTED, "x"), verdict=REJECTED, **validity(made, DEFAULT_VALID_FOR_S))))
    assert _gate_command(tmp_path).returncode == 1  # FAIL: fresh enough without --max-age
    for given in ("1h", "1 h", "3600"):
        done = _gate_command(tmp_path, "--max-age", given, "--drain")
        assert done.returncode == 2, done.stderr
        assert done.stdout.startswith("pytest-cluster ERROR: the verdict is stale: made at ")
        assert "more than --max-age 60 min" in done.stdout and "drained:" not in done.stdout
    assert _gate_command(tmp_path, "--max-age", "3h").returncode == 1


@pytest.mark.parametrize("given", ["0", "1 d", "-5", "soon", ""])
def test_a_max_age_that_is_no_duration_is_a_usage_error(tmp_path: Path, given: str) -> None:
    done = _gate_command(tmp_path, f"--max-age={given}")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1].startswith(
        "pytest-cluster gate: error: argument --max-age: expected a duration like '24 h'")


def test_a_pass_names_the_clauses_the_kill_switch_turned_off() -> None:
    off = [{"clause": "gpus.row_remap", "reason": "misfires", "until": "2099-12-31",
            "cases": 16}]
    decided = decide(document(node("n1", ACCEPTED, "all 69 checks passed; 1 disabled"),
                              disabled=off), 0)
    assert (decided.outcome, decided.lines) == (PASS, (
        "PASS: 1 node(s) passed every check at level sanity: n1 (1 clause(s) disabled: "
        "gpus.row_remap until 2099-12-31)",))
    assert decide(document(node("n1", ACCEPTED), disabled="nonsense"), 0).lines == (
        "PASS: 1 node(s) passed every check at level sanity: n1",)
