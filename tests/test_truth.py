"""The verdict tells the truth (tests/truth.py): simulated clusters with faults of every
kind the contract covers, alone and combined, at every level, with --cluster-node
selections and a Ctrl-C at a random moment, each run as a user runs it and its verdict,
gate and views held to the faults the simulator played. bench/truth.py runs thousands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.truth import (
    CONTROLLER_FAULTS,
    FAULTS,
    SHARED_STORAGE_FAULTS,
    Injected,
    Outcome,
    Scenario,
    clause_base,
    describe,
    scenario,
    timed,
    violations,
)

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=SEEDS)
def test_random_scenarios_tell_the_truth(tmp_path_factory: pytest.TempPathFactory,
                                         seed: int) -> None:
    chosen = scenario(seed, max_nodes=5)
    found, _ = timed(chosen, tmp_path_factory.mktemp("truth"))
    assert found == [], describe(chosen)


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_alone_rejects_its_node_and_no_other(tmp_path: Path, fault: str) -> None:
    """Every fault kind the truth table knows, on one node of four at the acceptance
    level: its node is rejected naming a clause it breaks (or unreachable, for a dead
    node), the three healthy nodes accepted and never drained."""
    gpu = 3 if FAULTS[fault].per_gpu else None
    nodes = tuple(f"gpu-{i:03d}" for i in range(1, 5))
    chosen = Scenario(0, nodes, (Injected("gpu-002", gpu, fault),), "acceptance")
    found, _ = timed(chosen, tmp_path)
    assert found == [], describe(chosen)


@pytest.mark.slow
@pytest.mark.parametrize("controller", sorted(CONTROLLER_FAULTS))
def test_a_fault_of_the_controller_drains_no_node(tmp_path: Path, controller: str) -> None:
    """The real contract's ssh launcher from a machine that cannot reach its nodes (their
    names do not resolve; no ssh client): nothing was learned about any node, so none is
    rejected, unreachable or drained; the run and the gate say ERROR."""
    nodes = tuple(f"gpu-{i:03d}" for i in range(1, 4))
    chosen = Scenario(0, nodes, (), "acceptance", controller=controller)
    found, _ = timed(chosen, tmp_path)
    assert found == [], describe(chosen)


@pytest.mark.slow
@pytest.mark.parametrize("error", SHARED_STORAGE_FAULTS)
def test_a_fault_of_the_shared_filesystem_drains_no_node(tmp_path: Path, error: str) -> None:
    """The storage server's fault every node sees (its export full, an I/O error, the
    path gone, read-only), beside a node's own GPU fault: the filesystem's cluster case
    fails, no node is rejected or drained for it, the GPU's node is."""
    nodes = tuple(f"gpu-{i:03d}" for i in range(1, 5))
    chosen = Scenario(0, nodes, (Injected("gpu-003", 1, "xid: 79"),), "acceptance",
                      shared_storage=error)
    found, _ = timed(chosen, tmp_path)
    assert found == [], describe(chosen)


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("after_s", [0.8, 1.6, 2.4])
def test_a_stop_at_any_moment_is_never_a_pass(tmp_path: Path, after_s: float,
                                              stop: str) -> None:
    """Ctrl-C or SIGTERM while a faulty cluster is checked: whatever the moment, a run
    stopped before every check ran exits 2 and is not PASS, the gate does not say PASS,
    no healthy node is blamed."""
    nodes = tuple(f"gpu-{i:03d}" for i in range(1, 7))
    chosen = Scenario(0, nodes, (Injected("gpu-004", 2, "xid: 79"),), "acceptance",
                      interrupt_after_s=after_s, stop_signal=stop)
    found, _ = timed(chosen, tmp_path)
    assert found == [], describe(chosen)


def test_the_oracle_finds_a_healthy_node_rejected_and_a_fault_missed() -> None:
    """It can fail: a verdict that rejects a healthy node, one that accepts the faulty
    node, an incomplete run said PASS and a healthy node drained are each named."""
    nodes = ("gpu-001", "gpu-002", "gpu-003")
    chosen = Scenario(0, nodes, (Injected("gpu-002", 1, "xid: 79"),), "acceptance")
    lines = {
        "gpu-001": {"node": "gpu-001", "verdict": "REJECTED", "failed_clauses": ["gpus.xid"],
                    "reason": "1 clause(s) failed: gpus.xid"},
        "gpu-002": {"node": "gpu-002", "verdict": "ACCEPTED", "failed_clauses": [],
                    "reason": "all checks passed"},
        "gpu-003": {"node": "gpu-003", "verdict": "ACCEPTED", "failed_clauses": []},
    }
    verdict: dict[str, object] = {
        "status": "interrupted", "outcome": "PASS", "nodes": list(lines.values()),
        "drain": ["scontrol update NodeName=gpu-003 State=DRAIN Reason=x"]}
    said = violations(chosen, Outcome(0, "", None, verdict, gate_status=0))
    assert any("healthy gpu-001 is REJECTED" in s for s in said), said
    assert any("did not run every check says PASS" in s for s in said), said
    assert any("gate says PASS on an incomplete run" in s for s in said), said
    assert any("healthy gpu-003 is drained" in s for s in said), said
    verdict["status"] = "complete"
    said = violations(chosen, Outcome(1, "", None, verdict, gate_status=1))
    assert any("gpu-002's fault 'xid: 79'" in s for s in said), said


@pytest.mark.parametrize(("kind", "found_out"), [("bad_output", True), (None, False)])
def test_the_oracle_finds_a_lie_taken_for_a_measurement(tmp_path: Path, kind: str | None,
                                                        found_out: bool) -> None:
    """A lying node rejected for its lie's clause is not enough: the failure must be its
    bad output (results.jsonl's error_kind), not a figure that merely missed its
    promise; a lie believed as a measurement is named."""
    nodes = ("gpu-001", "gpu-002", "gpu-003")
    chosen = Scenario(0, nodes, (Injected("gpu-002", None, "lies: cores"),), "acceptance")
    assert FAULTS["lies: cores"].lie
    lines = [{"node": n, "verdict": "ACCEPTED", "failed_clauses": []} for n in nodes]
    lines[1] = {"node": "gpu-002", "verdict": "REJECTED", "failed_clauses": [
        "host.cpu_cores"], "reason": "1 clause(s) failed: host.cpu_cores"}
    (tmp_path / "results.jsonl").write_text(json.dumps(
        {"node": "gpu-002", "clause": "host.cpu_cores", "outcome": "failed",
         "error_kind": kind}) + "\n", encoding="utf-8")
    verdict: dict[str, object] = {"status": "complete", "outcome": "FAIL", "nodes": lines}
    # interrupted: no views to hold to each other in this hand-made run directory
    said = violations(chosen, Outcome(1, "", tmp_path, verdict, gate_status=1,
                                      interrupted=True))
    assert said == ([] if found_out else [
        "gpu-002's lie 'lies: cores' is not found out as its bad output of "
        "host.cpu_cores"]), said


def test_a_seed_makes_one_scenario_and_every_truth_names_declared_clauses() -> None:
    """Replay: the same seed, the same scenario; every clause the truth table names is a
    clause the contract declares (a renamed clause would make the oracle blind)."""
    assert scenario(1234) == scenario(1234)
    assert len({scenario(s) for s in range(50)}) > 40
    named = {c for t in FAULTS.values() for c in (*t.must, *t.explains) if "*" not in c}
    assert sorted(c for c in named if clause_base(c) != c) == []
