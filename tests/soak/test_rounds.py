"""soak/rounds.py: a round's command line, a soak's time, and what a round's verdict says of a
node's state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_cluster.contract.loader import MAX_SPEC_BYTES
from pytest_cluster.evidence.verdict.sla import FAILED, HEALTHY, UNREACHABLE
from pytest_cluster.soak import rounds as soak
from pytest_cluster.soak.rounds import round_argv


def test_a_round_runs_the_soaks_command_line_without_the_soaks_options() -> None:
    args = ["--cluster=trial.yaml", "--cluster-soak", "48h", "-m", "sanity", "-n", "2",
            "--junitxml=out.xml", "--html", "r.html", "--self-contained-html",
            "--cluster-soak-rounds=5", "--cluster-reports", "reports", "tests/mine.py"]
    assert soak.MAX_SPEC_BYTES == MAX_SPEC_BYTES  # a pinned spec is read as the spec is
    assert round_argv("/py", args, Path("reports/x/rounds"), 7, Path("reports/x/spec.yaml")) == [
        "/py", "-m", "pytest", "-m", "sanity", "-n", "2", "tests/mine.py",
        "--cluster=reports/x/spec.yaml", "--cluster-reports=reports/x/rounds",
        "--cluster-soak-round=7"]
    # the spec is the soak's pinned copy, however the user's was given
    resumed = ["--cluster", "t.yaml", "--cluster-soak-resume=/r/soak", "-k", "ecc"]
    assert round_argv("/py", resumed, Path("/r/soak/rounds"), 12, Path("/r/soak/spec.yaml")) == [
        "/py", "-m", "pytest", "-k", "ecc", "--cluster=/r/soak/spec.yaml",
        "--cluster-reports=/r/soak/rounds", "--cluster-soak-round=12"]


def _verdict(verdict: str, planned: int, ran: int, passed: int) -> dict[str, Any]:
    return {"node": "n1", "verdict": verdict, "checks_planned": planned,
            "checks_ran": ran, "checks_passed": passed}


def test_a_node_is_healthy_in_a_round_only_when_every_check_of_it_ran_and_passed() -> None:
    """A round stopped before a node's every check ran did not judge it: not healthy (not
    observed in that round), however many of its checks passed; a failure it saw counts."""
    assert soak.node_state(_verdict("ACCEPTED", 40, 40, 40)) == HEALTHY
    assert soak.node_state(_verdict("NOT CHECKED", 40, 12, 12)) is None
    assert soak.node_state(_verdict("NOT CHECKED", 40, 0, 0)) is None
    assert soak.node_state(_verdict("REJECTED", 40, 12, 11)) == FAILED
    assert soak.node_state(_verdict("UNREACHABLE", 40, 40, 0)) == UNREACHABLE


def test_a_rounds_ras_summary_is_what_its_hung_jobs_ranks_asked() -> None:
    """Each case whose message carries NCCL RAS's words, once per text, bounded; a round
    with no hang has none."""
    said = "NCCL RAS: rank 17 (gpu-003, GPU 1) DEAD (asked on gpu-001 by rank 0)"
    lines: list[Any] = [
        {"nodeid": "t::a", "node": "6 nodes", "message": f"[SIMULATED] hung; {said}"},
        {"nodeid": "t::b", "node": "gpu-003", "message": f"hung; {said}"},
        {"nodeid": "t::c", "node": "gpu-001", "message": "measured 4 > allowed 0"},
        {"nodeid": "t::d", "node": "gpu-002"}]
    assert soak.ras_summaries(lines) == [{"nodeid": "t::a", "node": "6 nodes", "ras": said}]
    assert soak.ras_summaries(lines[2:]) == []
    many: list[Any] = [{"nodeid": f"t::{i}", "node": "n",
                        "message": f"NCCL RAS: {i} " + "x" * 900}
            for i in range(100)]
    found = soak.ras_summaries(many)
    assert len(found) == soak.MAX_RAS_CASES
    assert all(len(f["ras"]) == soak.MAX_RAS_TEXT for f in found)
