"""A fault of this machine's (the controller's) is no node's: the ssh launcher through a
fake `ssh` on PATH (no sshd) that answers as OpenSSH does for a name that does not resolve,
credentials refused, a refused address, or runs the remote command here for a node that
answers; and `ssh` missing. Each controller-side fault leaves every node it hit NOT
CHECKED with the cause said once, the run an ERROR, and `pytest-cluster gate --drain`
(with a fake scontrol that logs what it is asked) drains nothing; a node refused while the
others answered is still UNREACHABLE and drained."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.evidence.verdict.faults import KINDS
from pytest_cluster.hostlist import compress_hostlist, expand_hostlist
from pytest_cluster.launchers.ssh import MISSING_SSH

NODES = "gpu-[001-004]"
ALL = expand_hostlist(NODES)
SPEC = f"""\
cluster: {{name: c, nodes: "{NODES}", launcher: ssh, python: {sys.executable}}}
host: {{cpu_cores: 1}}
"""
#: What OpenSSH prints (exit 255) for each fault the fake plays, by name.
SAYS = {
    "unresolved": "ssh: Could not resolve hostname {node}: Name or service not known",
    "denied": "{node}: Permission denied (publickey).",
    "refused": "ssh: connect to host 10.0.0.9 port 22: Connection refused",
}
FAKE_SSH = """\
#!{python}
import os, sys
args = sys.argv[1:]
if "-O" in args:  # the master told to exit
    sys.exit(0)
node = args[args.index("--") + 1]
fault = {faults!r}.get(node)
if fault:
    print({says!r}[fault].format(node=node), file=sys.stderr)
    sys.exit(255)
if "-N" in args:  # the shared connection: opened
    sys.exit(0)
os.execvp("sh", ["sh", "-c", args[args.index("--") + 2]])  # the node is this machine
"""
FAKE_SCONTROL = """\
#!/bin/sh
echo "$@" >> "{log}"
"""


def executable(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def fake_ssh(directory: Path, faults: dict[str, str]) -> Path:
    """A directory holding a fake `ssh` failing `faults` (node -> a name of SAYS)."""
    directory.mkdir()
    executable(directory / "ssh", FAKE_SSH.format(python=sys.executable, faults=faults,
                                                  says=SAYS))
    return directory


def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
        bin_dir: Path) -> tuple[pytest.RunResult, dict[str, Any]]:
    """The spec run with only `bin_dir` and the system's directories on PATH; the
    result, and verdict.json."""
    (pytester.path / "trial.yaml").write_text(SPEC, encoding="utf-8")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    return result, verdict


def gate_drain(pytester: pytest.Pytester, exit_status: int) -> tuple[int, list[str], str]:
    """`pytest-cluster gate --drain` on the run, with a fake scontrol first on PATH:
    its exit status, the scontrol calls it made, and what it printed."""
    bin_dir = pytester.path / "scontrol-bin"
    bin_dir.mkdir()
    log = pytester.path / "scontrol.log"
    executable(bin_dir / "scontrol", FAKE_SCONTROL.format(log=log))
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([sys.executable, "-m", "pytest_cluster.cli", "gate",
                           str(pytester.path / "reports"), "--exit-status",
                           str(exit_status), "--drain"],
                          capture_output=True, text=True, env=env, check=False, timeout=120)
    calls = log.read_text().splitlines() if log.exists() else []
    return done.returncode, calls, done.stdout


def controller_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith("  NOT CHECKED ")]


def fault_said(kind: str) -> str:
    """How a line ends for nodes an error kind of this machine's kept undecided: its
    fault (faults.py KINDS), this machine's to fix."""
    fault = KINDS[kind].fault
    return f"; {fault.code} ({fault.actor.value}): {fault.action}"


@pytest.mark.parametrize(("fault", "cause", "kind"), [
    ("unresolved", "this machine cannot resolve the name (ssh: Could not resolve hostname): "
                   "check cluster.nodes, the ssh config and DNS here", "controller"),
    ("denied", "ssh refused: check the user, key and known_hosts", "auth_refused"),
])
def test_a_controller_side_ssh_fault_is_an_error_said_once_and_drains_nothing(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fault: str,
        cause: str, kind: str) -> None:
    bin_dir = fake_ssh(pytester.path / "bin", dict.fromkeys(ALL, fault))
    result, verdict = run(pytester, monkeypatch, bin_dir)
    assert {(n["verdict"], n["outcome"], n["controller_fault"]) for n in verdict["nodes"]} \
        == {("NOT CHECKED", "ERROR", cause)}
    assert (verdict["verdict"], verdict["outcome"], verdict["drain"]) == (
        "INCOMPLETE", "ERROR", [])
    assert controller_lines(result) == [
        f"  NOT CHECKED {compress_hostlist(ALL)}: this machine could not check them: {cause}"
        f"{fault_said(kind)}"]
    status, calls, said = gate_drain(pytester, result.ret)
    assert (status, calls) == (2, [])
    assert f"ERROR {compress_hostlist(ALL)}: not checked: this machine could not check " \
           f"them: {cause}{fault_said(kind)}" in said


def test_ssh_missing_on_this_machine_is_an_error_that_drains_nothing(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = pytester.path / "empty"
    empty.mkdir()
    (pytester.path / "trial.yaml").write_text(SPEC, encoding="utf-8")
    monkeypatch.setenv("PATH", str(empty))  # no ssh anywhere
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    assert {(n["verdict"], n["controller_fault"]) for n in verdict["nodes"]} == {
        ("NOT CHECKED", MISSING_SSH)}
    assert verdict["outcome"] == "ERROR" and verdict["drain"] == []
    assert controller_lines(result) == [
        f"  NOT CHECKED {compress_hostlist(ALL)}: this machine could not check them: "
        f"{MISSING_SSH}{fault_said('controller')}"]
    monkeypatch.undo()
    status, calls, _ = gate_drain(pytester, result.ret)
    assert (status, calls) == (2, [])


def test_every_node_refused_is_the_controllers_fault(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every address refused: nothing was reached, so nothing is learned of any node."""
    bin_dir = fake_ssh(pytester.path / "bin", dict.fromkeys(ALL, "refused"))
    result, verdict = run(pytester, monkeypatch, bin_dir)
    assert {(n["verdict"], n["outcome"]) for n in verdict["nodes"]} == {
        ("NOT CHECKED", "ERROR")}
    assert {n["controller_fault"] for n in verdict["nodes"]} == {
        "no node answered this machine, so the fault is on its side or its network's "
        "(ssh: connection refused (no sshd?))"}
    assert verdict["drain"] == [] and len(controller_lines(result)) == 1
    status, calls, _ = gate_drain(pytester, result.ret)
    assert (status, calls) == (2, [])


def test_a_node_refused_while_the_others_answered_is_unreachable_and_drained(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    down = ALL[1]
    bin_dir = fake_ssh(pytester.path / "bin", {down: "refused"})
    result, verdict = run(pytester, monkeypatch, bin_dir)
    nodes = {n["node"]: n for n in verdict["nodes"]}
    assert (nodes[down]["verdict"], nodes[down]["controller_fault"]) == ("UNREACHABLE", "")
    assert {nodes[n]["verdict"] for n in ALL if n != down} == {"ACCEPTED"}
    assert verdict["outcome"] == "FAIL"
    status, calls, said = gate_drain(pytester, result.ret)
    assert status == 1
    assert [call.split()[:3] for call in calls] == [["update", f"NodeName={down}",
                                                     "State=DRAIN"]]
    assert f"drained: scontrol update NodeName={down} State=DRAIN" in said


SINFO_IDLE = "#!/bin/sh\nprintf 'n1|idle|none\\nn2|idle|none\\n'\n"
NO_CONTROLLER = ("#!/bin/sh\necho 'slurm_load_partitions: Unable to contact slurm controller "
                 "(connect failure)' >&2\nexit 1\n")
INVALID_NODE = ("#!/bin/sh\necho 'srun: error: Unable to allocate resources: "
                "Invalid node name specified' >&2\nexit 1\n")


@pytest.mark.parametrize(("sinfo", "srun", "said"), [
    (NO_CONTROLLER, None, "sinfo failed, no SLURM controller answered"),
    (SINFO_IDLE, None, "srun: 'srun' not found"),
    (SINFO_IDLE, INVALID_NODE, "SLURM gave the step no nodes: srun: error: Unable to "
                               "allocate resources: Invalid node name specified"),
    ("#!/bin/sh\nprintf 'n1|idle|none\\n'\n", INVALID_NODE, "SLURM does not know n2"),
])
def test_slurms_controller_side_failures_are_the_controllers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sinfo: str, srun: str | None,
        said: str) -> None:
    """No SLURM controller answering, srun not installed here, a step SLURM refused (an
    invalid node name), a name SLURM does not know: controller-side, whatever the node."""
    from pytest_cluster.contract.model import ClusterSpec, SlurmSpec
    from pytest_cluster.launchers.result import ErrorKind
    from pytest_cluster.launchers.slurm import SlurmLauncher
    from pytest_cluster.probes import ProbeCall

    executable(tmp_path / "sinfo", sinfo)
    if srun is not None:
        executable(tmp_path / "srun", srun)
    executable(tmp_path / "scancel", "#!/bin/sh\n")
    # these alone: a SLURM installed on this machine (CI's) is not the one played here
    monkeypatch.setenv("PATH", str(tmp_path))
    launcher = SlurmLauncher(ClusterSpec("t", ("n1", "n2"), "slurm", "python3", 30, 8),
                             SlurmSpec())
    results = launcher.run(ProbeCall("host"), ["n1", "n2"], 30)
    found = results["n2"]
    assert found.error is ErrorKind.CONTROLLER and found.controller_side, found.describe()
    assert said in found.message


def test_the_trial_example_from_a_machine_that_cannot_resolve_its_names(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 47: examples/trial.yaml where the nodes' names do not resolve: the run is an
    ERROR (its checks across nodes are not made, not failed), the cause is said once in
    the terminal and by the gate, and no node is drained."""
    example = Path(__file__).resolve().parents[2] / "examples" / "trial.yaml"
    text = example.read_text(encoding="utf-8")
    nodes = expand_hostlist(text.split("nodes:", 1)[1].split()[0])
    bin_dir = fake_ssh(pytester.path / "bin", dict.fromkeys(nodes, "unresolved"))
    (pytester.path / "trial.yaml").write_text(text, encoding="utf-8")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    assert (verdict["verdict"], verdict["outcome"], verdict["drain"]) == (
        "INCOMPLETE", "ERROR", [])
    assert verdict["cluster_checks_failed"]  # not made, so not failed: no REJECTED
    section = result.stdout.str().split(" pytest-cluster ", 1)[1].split("short test summary")[0]
    assert section.count("cannot resolve the name") == 1, section
    monkeypatch.undo()
    status, calls, said = gate_drain(pytester, result.ret)
    assert (status, calls) == (2, [])
    assert said.count("cannot resolve the name") == 1, said
