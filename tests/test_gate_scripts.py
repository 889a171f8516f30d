"""The shipped SLURM prolog and health check, unedited but for their three paths, run as
slurmd runs them (no search path, no environment but SLURM's) on the richest simulated
example, examples/trial-sim.yaml (GPUs, fabric, interconnect): every healthy node passes
(exit 0), the node with a NIC down fails the prolog (non-zero: slurmd drains it), and a
spec with a typo exits 0 on every node with an ERROR line that names the file, the key and
the exit (a tool error never drains). The real SLURM runs are in test_prolog.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_cluster.spec import load_spec
from tests.slurm_scripts import HEALTHCHECK, PROLOG, installed

TRIAL = Path(__file__).resolve().parent.parent / "examples" / "trial-sim.yaml"
SPEC = load_spec(TRIAL)
assert SPEC.sim is not None
#: The nodes the example faults at the sanity level (a port down), and those it leaves be.
PORT_DOWN = sorted({f.node for f in SPEC.sim.faults if f.nic_down})
HEALTHY = [n for n in SPEC.cluster.nodes if n not in {f.node for f in SPEC.sim.faults}]


def slurmd_runs(script: Path, node: str, job: int) -> subprocess.CompletedProcess[str]:
    """The script as slurmd runs it: an empty environment but SLURM's own variables."""
    env = {"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURMD_NODENAME": node,
           "SLURM_JOB_ID": str(job)} if script.name == PROLOG else {"SLURMD_NODENAME": node}
    return subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in env.items()), str(script)],
                          capture_output=True, text=True, check=False, timeout=120)


@pytest.fixture
def scripts(tmp_path: Path) -> dict[str, Path]:
    """The prolog and the health check, installed on the example and on the same spec with
    a typo (a key misspelt): {"prolog", "health", "typo prolog", "typo health"}."""
    typo = tmp_path / "typo"
    typo.mkdir()
    spec = typo / "contract.yaml"
    spec.write_text(TRIAL.read_text(encoding="utf-8").replace("\ngpus:", "\ngpuz:", 1),
                    encoding="utf-8")
    return {"prolog": installed(PROLOG, tmp_path, TRIAL, tmp_path),
            "health": installed(HEALTHCHECK, tmp_path, TRIAL, tmp_path),
            "typo prolog": installed(PROLOG, typo, spec, typo),
            "typo health": installed(HEALTHCHECK, typo, spec, typo)}


def test_the_example_has_healthy_nodes_and_a_port_down() -> None:
    assert HEALTHY and PORT_DOWN


@pytest.mark.slow
def test_the_prolog_passes_a_healthy_gpu_node_and_fails_a_port_down(
        scripts: dict[str, Path]) -> None:
    prolog = scripts["prolog"]
    for job, node in enumerate(HEALTHY, 100):
        done = slurmd_runs(prolog, node, job)
        assert done.returncode == 0, (node, done.stderr)
        assert done.stderr == ""  # a pass is silent
    for job, node in enumerate(PORT_DOWN, 200):
        done = slurmd_runs(prolog, node, job)
        assert done.returncode == 1, (node, done.stderr)
        assert done.stderr.splitlines() == [
            f"pytest-cluster FAIL {node}: rejected: 1 clause(s) failed: fabric.ports"]


@pytest.mark.slow
def test_the_health_check_exits_0_and_says_a_failure_it_cannot_drain(
        scripts: dict[str, Path]) -> None:
    health = scripts["health"]
    for node in HEALTHY:
        done = slurmd_runs(health, node, 0)
        assert (done.returncode, done.stderr) == (0, ""), node
    for node in PORT_DOWN:
        done = slurmd_runs(health, node, 0)
        assert done.returncode == 0
        assert f"FAIL {node}: rejected: 1 clause(s) failed: fabric.ports" in done.stderr
        assert "not drained: a simulated cluster's nodes are no SLURM nodes" in done.stderr


@pytest.mark.slow
def test_a_typo_in_the_spec_drains_no_node_and_says_so(scripts: dict[str, Path]) -> None:
    for node in SPEC.cluster.nodes:
        for script in (scripts["typo prolog"], scripts["typo health"]):
            done = slurmd_runs(script, node, 300)
            assert done.returncode == 0, (script.name, node, done.stderr)
            line, = done.stderr.splitlines()
            assert "ERROR" in line and "exit 4: the spec or an option is not valid" in line
            assert "contract.yaml:" in line and "gpuz: unknown key" in line
            assert "no node is drained for it" in line
