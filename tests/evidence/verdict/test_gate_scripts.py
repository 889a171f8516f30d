"""The shipped SLURM prolog and health check, unedited but for their three paths, run as
slurmd runs them (no search path, no environment but SLURM's) on the richest simulated
example, examples/trial-sim.yaml (GPUs, fabric, interconnect): every healthy node passes
(exit 0), the node with a NIC down fails the prolog (non-zero: slurmd drains it), and a
spec with a typo exits 0 on every node with an ERROR line that names the file, the key and
the exit (a tool error never drains). The real SLURM runs are in real/test_prolog.py."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_cluster.contract import load_spec
from tests.slurm_scripts import HEALTHCHECK, PROLOG, installed

TRIAL = Path(__file__).resolve().parents[3] / "examples" / "trial-sim.yaml"
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
        said = done.stderr.splitlines()
        assert len(said) == 1 and said[0].startswith(
            f"pytest-cluster FAIL {node}: rejected: 1 clause(s) failed: fabric.ports; "
            "PC-NET-PORTS (provider-network): "), said


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


#: Names and job ids no path may be built from (issue 48: '../../../../x' wrote outside
#: REPORTS; a newline split the ERROR line; 100 kB put 300 kB in stderr and syslog).
NOT_A_HOST = ["../../../../x", "n1/../../x", ".hidden", "-rf", "n1\nFAIL n2: forged",
              "n1\x1b[2J", "n1 n2", "a" * 100_000, "a" * 254, "gpü-1",
              # longer than Linux's HOST_NAME_MAX: with the job's id, more than a folder's
              # name may be (mkdir said so on a line of its own)
              "a" * 65, "a" * 253]
NOT_A_JOB = ["/../../../../x", "../x", "5\n6", "5 6", "12345678901", "-1"]


def _one_error_line(done: subprocess.CompletedProcess[str], why: str,
                    limit: int = 400) -> str:
    """The script's stderr: one line, no control character, at most `limit` characters,
    saying `why`."""
    assert done.returncode == 0, done.stderr  # a tool's error never fails the node
    line, = done.stderr.splitlines()
    assert line.isprintable() and len(line) <= limit, line
    assert "ERROR" in line and why in line, line
    return line


@pytest.mark.parametrize("script", [PROLOG, HEALTHCHECK])
def test_a_node_name_no_path_may_be_built_from_writes_nothing(tmp_path: Path,
                                                              script: str) -> None:
    (tmp_path / "bin").mkdir()
    installed_script = installed(script, tmp_path / "bin", TRIAL, tmp_path / "reports")
    for name in NOT_A_HOST:
        done = subprocess.run(["env", "-i", f"SLURMD_NODENAME={name}", "SLURM_JOB_ID=7",
                               str(installed_script)], capture_output=True, text=True,
                              check=False, timeout=60)
        _one_error_line(done, "the node's name is not a host name")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["bin", script]  # none written


def test_a_job_id_no_path_may_be_built_from_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    prolog = installed(PROLOG, tmp_path / "bin", TRIAL, tmp_path / "reports")
    for job in NOT_A_JOB:
        done = subprocess.run(["env", "-i", f"SLURMD_NODENAME={HEALTHY[0]}",
                               f"SLURM_JOB_ID={job}", str(prolog)], capture_output=True,
                              text=True, check=False, timeout=60)
        _one_error_line(done, "the job id is not a SLURM job id")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["bin", PROLOG]


#: An interpreter standing in for the site's: the check itself ends at once (exit 1, no
#: verdict); the gate does what GATE says (hang: never ends; junk: 3,000 bytes of
#: control characters and lines, exit 2).
FAKE_PYTHON = """#!/bin/sh
case "$*" in
    *pytest_cluster.cli\\ gate*) ;;
    *) exit 1 ;;
esac
case {gate} in
    hang) exec sleep 600 ;;
    junk) i=0; while [ $i -lt 100 ]; do printf 'ERROR: junk\\033[2J\\r\\n'; i=$((i + 1)); done
          exit 2 ;;
esac
"""


@pytest.mark.parametrize("script", [PROLOG, HEALTHCHECK])
def test_the_gate_is_bounded_in_time_and_in_what_it_says(tmp_path: Path,
                                                         script: str) -> None:
    """Both scripts run the gate under `timeout` (GATE_LIMIT, made 1 s here): a gate that
    never ends is an ERROR said once, the node not failed; what a gate prints is said as
    one line, controls replaced, cut with a marker."""
    (tmp_path / "bin").mkdir()
    for gate, why in (("hang", "the gate did not decide within 1 s"),
                      ("junk", "ERROR: junk?[2J? ERROR: junk?[2J?")):
        python = tmp_path / "bin" / f"python-{gate}"
        python.write_text(FAKE_PYTHON.format(gate=gate))
        python.chmod(0o755)
        path = installed(script, tmp_path / "bin", TRIAL, tmp_path / gate)
        text = path.read_text(encoding="utf-8").replace(sys.executable, str(python))
        assert text.count("GATE_LIMIT=") == 1
        path.write_text(re.sub(r"GATE_LIMIT=\d+", "GATE_LIMIT=1", text), encoding="utf-8")
        done = subprocess.run(["env", "-i", f"SLURMD_NODENAME={HEALTHY[0]}",
                               "SLURM_JOB_ID=7", str(path)], capture_output=True, text=True,
                              check=False, timeout=60)
        # the gate's first 1,000 bytes, the evidence's folder and the script's words
        line = _one_error_line(done, why, 1000 + len(str(tmp_path)) + 200)
        if gate == "junk":
            assert line.count("ERROR: junk") < 100 and "more bytes] (evidence: " in line


def test_a_link_in_the_run_folders_place_is_not_written_through(tmp_path: Path) -> None:
    """Whoever else writes REPORTS could put a link where this job's folder goes: the
    evidence and the logs would go where it points."""
    (tmp_path / "bin").mkdir()
    prolog = installed(PROLOG, tmp_path / "bin", TRIAL, tmp_path / "reports")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "reports" / "prolog").mkdir(parents=True)
    (tmp_path / "reports" / "prolog" / f"{HEALTHY[0]}-job7").symlink_to(elsewhere)
    done = subprocess.run(["env", "-i", f"SLURMD_NODENAME={HEALTHY[0]}", "SLURM_JOB_ID=7",
                           str(prolog)], capture_output=True, text=True, check=False,
                          timeout=60)
    _one_error_line(done, "is a symbolic link, not a folder of its own")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("script", [PROLOG, HEALTHCHECK])
def test_an_interpreter_without_pytest_cluster_drains_nothing(tmp_path: Path,
                                                               script: str) -> None:
    """Python exits 1 where `-m pytest_cluster.cli` cannot start (a PYTHON without
    pytest-cluster): FAIL's code, on which the prolog exited 1 and slurmd drained the node.
    Only a gate that says FAIL fails it."""
    (tmp_path / "bin").mkdir()
    python = tmp_path / "bin" / "python-bare"
    python.write_text("#!/bin/sh\necho \"python: No module named 'pytest_cluster'\" >&2\n"
                      "exit 1\n")
    python.chmod(0o755)
    path = installed(script, tmp_path / "bin", TRIAL, tmp_path / "reports")
    path.write_text(path.read_text(encoding="utf-8").replace(sys.executable, str(python)),
                    encoding="utf-8")
    done = subprocess.run(["env", "-i", f"SLURMD_NODENAME={HEALTHY[0]}", "SLURM_JOB_ID=7",
                           str(path)], capture_output=True, text=True, check=False, timeout=60)
    line = _one_error_line(done, "the gate exited 1 without a FAIL line", 1000)
    assert "No module named 'pytest_cluster'" in line
