"""The slurm launcher: exact command lines, sinfo and labeled-output parsing, hostlists
against scontrol, and (marked realcomponents) a real SLURM with one slurmd per network
namespace node."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_cluster.errors import SpecError
from pytest_cluster.hostlist import expand_hostlist
from pytest_cluster.launchers.base import ErrorKind
from pytest_cluster.launchers.remote import RUNNER_SOURCE
from pytest_cluster.launchers.slurm import (
    SlurmLauncher,
    node_problems,
    scancel_command,
    split_labeled,
    srun_command,
)
from pytest_cluster.probes import ProbeCall
from pytest_cluster.spec import parse_spec
from pytest_cluster.spec.model import ClusterSpec, SlurmSpec
from tests.netns_cluster import NetnsCluster
from tests.test_plugin import jsonl
from tests.test_ssh import spec_text


def test_srun_command_is_exact() -> None:
    slurm = SlurmSpec(partition="gpu", account="ml-team", reservation="trial",
                      time_limit_min=20)
    call = ProbeCall("storage", ("--path", "/data; rm -rf /"))
    assert srun_command(slurm, ["n1", "n2"], "/venv/bin/python", call, 600, "pc-job") == [
        "srun", "--nodelist=n1,n2", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1",
        "--input=all", "--label", "--kill-on-bad-exit=0", "--no-kill", "--job-name=pc-job",
        "--export=ALL,PYTEST_CLUSTER_MARKERS=1", "--partition=gpu", "--account=ml-team",
        "--reservation=trial", "--time=20", "/venv/bin/python", "-c", RUNNER_SOURCE, "600",
        "/venv/bin/python", "--path", "/data; rm -rf /"]
    assert scancel_command("pc-job")[:2] == ["scancel", "--name=pc-job"]


def test_sinfo_states_name_the_bad_nodes() -> None:
    out = ("n1|idle|none\nn2|drained|bad gpu\nn3|down*|Not responding\nn4|mixed|none\n"
           "n5|idle*|none\nn6|draining|reboot asked\n")
    assert node_problems(out, ["n1", "n2", "n3", "n4", "n5", "n6", "n7"]) == {
        "n2": "SLURM reports the node drained (bad gpu)",
        "n3": "SLURM reports the node down* (Not responding)",
        "n5": "SLURM reports the node idle*",
        "n6": "SLURM reports the node draining (reboot asked)",
        "n7": "SLURM does not know this node (not in sinfo)",
    }


def test_labeled_output_is_split_per_node() -> None:
    # the runner sends each stdout line in pieces: '+' continues, '|' ends the line
    stdout = ("0: __pytest_cluster_node__ n1\n1: __pytest_cluster_node__ n2\n"
              '0: +{"probe": \n1: +partial\n0: |"host"}\n0: |\n0: \n'
              "0: __pytest_cluster_exit__ 0\n")
    stderr = "1: Traceback\nsrun: error: n2: task 1: Exited with exit code 1\n"
    tasks = split_labeled(stdout, stderr)
    assert tasks["n1"].stdout == ['{"probe": "host"}', ""]
    assert tasks["n1"].exit_code == 0
    assert tasks["n2"].exit_code is None
    assert tasks["n2"].stdout == []
    assert tasks["n2"].stderr == ["Traceback"]


@pytest.mark.parametrize("text", [
    "slurm: {partition: 'gpu; rm'}\n", "slurm: {time_limit: 10 s}\n",
    "slurm: {allocation: true}\n"])
def test_bad_slurm_settings_are_refused(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    nodes = "" if "allocation" in text else ", nodes: 'n[1-2]'"
    with pytest.raises(SpecError) as info:
        parse_spec(f"cluster: {{name: x{nodes}, launcher: slurm}}\nhost: {{cpu_cores: 1}}\n"
                   + text, "t.yaml")
    assert str(info.value).startswith("t.yaml:3: slurm.")


def test_the_allocation_gives_the_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu-[001-003],login1")
    spec = parse_spec("cluster: {name: x, launcher: slurm}\nhost: {cpu_cores: 1}\n"
                      "slurm: {allocation: true, partition: gpu}\n", "t.yaml")
    assert spec.cluster.nodes == ("gpu-001", "gpu-002", "gpu-003", "login1")
    with pytest.raises(SpecError, match=r"leave it out with slurm\.allocation: true"):
        parse_spec("cluster: {name: x, nodes: a, launcher: slurm}\nhost: {cpu_cores: 1}\n"
                   "slurm: {allocation: true}\n", "t.yaml")


# -- the real thing ---------------------------------------------------------------------



@pytest.mark.realcomponents
@pytest.mark.parametrize("expr", ["node[1-4]", "gpu-[001-003,010],login1",
                                  "r[1-2]-n[01-02]", "a[09-11]", "x[1-2]y[3-4]"])
def test_our_hostlists_match_scontrol(slurm: NetnsCluster, expr: str) -> None:
    assert expand_hostlist(expr) == slurm.scontrol("show", "hostnames", expr).split()


def slurm_spec(netns: NetnsCluster, fs: Path) -> str:
    text = spec_text(netns, fs).replace("launcher: ssh", "launcher: slurm")
    return text.replace(f"ssh:\n  config: {netns.ssh_config}\n  connect_timeout: 3 s\n",
                        "slurm:\n  time_limit: 5 min\n")


def back_to_idle(slurm: NetnsCluster, node: str) -> None:
    env = {**os.environ, **slurm.slurm_env}
    subprocess.run(["scancel", "--user=root"], env=env, capture_output=True, check=False)
    # down clears a node stuck completing the job its dead slurmd never finished
    subprocess.run(["scontrol", "update", f"nodename={node}", "state=down", "reason=reset"],
                   env=env, capture_output=True, check=False)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for state in ("resume", "idle"):
            subprocess.run(["scontrol", "update", f"nodename={node}", f"state={state}"],
                           env=env, capture_output=True, check=False)
        done = subprocess.run(["sinfo", "--noheader", "--Node", f"--nodes={node}",
                               "--format=%T"], env=env, capture_output=True, text=True,
                              check=False)
        if done.stdout.strip() == "idle":
            return
        time.sleep(0.5)
    raise AssertionError(f"{node} did not come back: {done.stdout}")


@pytest.mark.realcomponents
def test_host_and_storage_suite_passes_through_srun(pytester: pytest.Pytester,
                                                    slurm: NetnsCluster) -> None:
    fs = pytester.mkdir("fs")
    (pytester.path / "trial.yaml").write_text(slurm_spec(slurm, fs))
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4 * 8 + 6 + 1)


@pytest.mark.realcomponents
@pytest.mark.parametrize(("state", "shown"), [("drain", "drained (burn-in failed)"),
                                              ("down", "down")])
def test_a_drained_or_down_node_fails_only_its_tests(pytester: pytest.Pytester,
                                                     slurm: NetnsCluster, state: str,
                                                     shown: str) -> None:
    fs = pytester.mkdir("fs")
    (pytester.path / "trial.yaml").write_text(slurm_spec(slurm, fs))
    slurm.scontrol("update", "nodename=node2", f"state={state}", "reason=burn-in failed")
    try:
        result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    finally:
        back_to_idle(slurm, "node2")
    result.assert_outcomes(passed=3 * 8 + 6, failed=8 + 1)
    failed = [r for r in jsonl(pytester) if r.get("outcome") == "failed"
              and r["node"] != "all"]
    assert {r["node"] for r in failed} == {"node2"}
    assert f"node2: host probe unreachable: SLURM reports the node {shown}" in failed[0][
        "message"]


@pytest.mark.realcomponents
def test_a_hanging_probe_is_killed_and_the_step_ends(slurm: NetnsCluster) -> None:
    launcher = SlurmLauncher(ClusterSpec("t", tuple(slurm.nodes), "slurm", sys.executable,
                                         60, 8), SlurmSpec())
    results = launcher.run_source(ProbeCall("host"), "import time\ntime.sleep(600)\n",
                                  ["node1", "node4"], 2)
    for result in results.values():
        # killed by the runner on the node at 2 s, not by the launcher's later backstop
        assert result.error is ErrorKind.TIMEOUT, result.describe()
        assert result.message == "killed on the node at its timeout"
    time.sleep(0.5)
    for node in ("node1", "node4"):
        assert slurm.python_processes(node) == []
    queue = subprocess.run(["squeue", "--noheader"], capture_output=True, text=True,
                           check=True)
    assert queue.stdout.strip() == ""


@pytest.mark.realcomponents
def test_long_output_lines_come_back_whole(slurm: NetnsCluster) -> None:
    """srun --label cuts lines at 1024 bytes; a probe's JSON is one line (the GPU probe
    of an 8-GPU node prints ~20 kB)."""
    launcher = SlurmLauncher(ClusterSpec("t", tuple(slurm.nodes), "slurm", sys.executable,
                                         60, 8), SlurmSpec())
    source = ("import json\nprint('first')\nprint(json.dumps({'probe': 'host', 'data': "
              "{'x': 'é' * 3000 + 'y' * 20000}}))\n")
    results = launcher.run_source(ProbeCall("host"), source, ["node1", "node2"], 30)
    for result in results.values():
        assert result.ok, result.describe()
        assert result.payload() == {"x": "é" * 3000 + "y" * 20000}


@pytest.mark.realcomponents
def test_a_dead_slurmd_fails_only_its_node(slurm: NetnsCluster) -> None:
    """slurmd killed but not yet marked down: the step fails on it; the other nodes are run
    again in steps of their own and pass."""
    launcher = SlurmLauncher(ClusterSpec("t", tuple(slurm.nodes), "slurm", sys.executable,
                                         60, 8), SlurmSpec())
    slurm.stop_slurmd("node3")
    try:
        results = launcher.run(ProbeCall("host"), slurm.nodes, 30)
    finally:
        slurm.start_slurmd("node3")
        back_to_idle(slurm, "node3")
    assert [n for n, r in results.items() if not r.ok] == ["node3"]
    assert results["node3"].error is ErrorKind.UNREACHABLE
    assert "Communication connection failure" in results["node3"].stderr_tail


@pytest.mark.realcomponents
def test_inside_an_allocation_the_spec_takes_its_nodes(slurm: NetnsCluster,
                                                       tmp_path: Path) -> None:
    spec = tmp_path / "alloc.yaml"
    spec.write_text("cluster: {name: x, launcher: slurm}\nhost: {cpu_cores: 1}\n"
                    "slurm: {allocation: true}\n")
    code = ("import sys; from pytest_cluster.spec import load_spec; "
            "print(' '.join(load_spec(sys.argv[1]).cluster.nodes))")
    done = subprocess.run(["salloc", "-N3", sys.executable, "-c", code, str(spec)],
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "node1 node2 node3"
