"""Real components (network namespaces with sshd, SLURM) for tests/launchers/test_slurm.py:
the same checks on real parts; its unit tests stay there."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_cluster.contract.model import ClusterSpec, SlurmSpec
from pytest_cluster.hostlist import expand_hostlist
from pytest_cluster.launchers.result import ErrorKind
from pytest_cluster.launchers.slurm import SlurmLauncher
from pytest_cluster.launchers.slurm_nodes import (
    NodeCheck,
)
from pytest_cluster.probes import ProbeCall
from tests.conftest import on, on_no_node, planned
from tests.launchers.test_slurm import RANKS, slurm_spec
from tests.netns_cluster import NetnsCluster
from tests.test_plugin import jsonl


@pytest.mark.realcomponents
@pytest.mark.parametrize("expr", ["node[1-4]", "gpu-[001-003,010],login1",
                                  "r[1-2]-n[01-02]", "a[09-11]", "x[1-2]y[3-4]"])
def test_our_hostlists_match_scontrol(slurm: NetnsCluster, expr: str) -> None:
    assert expand_hostlist(expr) == slurm.scontrol("show", "hostnames", expr).split()


@pytest.mark.realcomponents
def test_host_and_storage_suite_passes_through_srun(pytester: pytest.Pytester,
                                                    slurm: NetnsCluster) -> None:
    fs = pytester.mkdir("fs")
    (pytester.path / "trial.yaml").write_text(slurm_spec(slurm, fs))
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(planned(pytester, slurm_spec(slurm, fs))))


@pytest.mark.realcomponents
@pytest.mark.parametrize(("state", "shown", "verdict"), [
    ("drain", "unreachable: SLURM reports node2 drained (burn-in failed): taken out of "
              "service", "UNREACHABLE"),
    ("down", "unreachable: SLURM reports node2 down (burn-in failed): not in service",
     "UNREACHABLE"),
    ("held", "busy: SLURM reports node2 allocated (held by job {job} of user root): another "
             "job is using it", "NOT CHECKED")])
def test_a_drained_down_or_busy_node_fails_only_its_tests(
        pytester: pytest.Pytester, slurm: NetnsCluster, state: str, shown: str,
        verdict: str) -> None:
    fs = pytester.mkdir("fs")
    (pytester.path / "trial.yaml").write_text(slurm_spec(slurm, fs))
    with contextlib.ExitStack() as stack:
        if state == "held":
            shown = shown.format(job=stack.enter_context(slurm.hold_node("node2")))
        else:
            slurm.scontrol("update", "nodename=node2", f"state={state}",
                           "reason=burn-in failed")
            stack.callback(back_to_idle, slurm, "node2")
        result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    # node2's own cases, and the checks of every node at once (the same software on
    # every node, shared storage) that are not established without it
    cases = planned(pytester, slurm_spec(slurm, fs))
    failing = on(cases, "node2") + on_no_node(cases, tuple(slurm.nodes))
    result.assert_outcomes(passed=len(cases) - len(failing), failed=len(failing))
    failed = [r for r in jsonl(pytester) if r.get("outcome") == "failed"
              and r["node"] != "all"]
    assert {r["node"] for r in failed} == {"node2"}
    assert f"node2: host probe {shown}" in failed[0]["message"]
    verdicts = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    assert [v["verdict"] for v in verdicts["nodes"]] == [
        "ACCEPTED", verdict, "ACCEPTED", "ACCEPTED"]
    # a node another job holds is not drained for it
    assert ("node2" in " ".join(verdicts["drain"])) is (verdict == "UNREACHABLE")


@pytest.mark.realcomponents
def test_a_node_held_by_another_job_is_busy_at_once(slurm: NetnsCluster) -> None:
    """Another job holds node2 (srun --exclusive sleep): sinfo says allocated, squeue says
    whose; node2 fails as busy naming the job, without a step; the others answer."""
    with slurm.hold_node("node2") as job:
        began = time.monotonic()
        results = launcher_on(slurm).run(ProbeCall("host"), slurm.nodes, 60)
        took = time.monotonic() - began
    print(f"busy node found in {took:.1f} s")
    assert [n for n, r in results.items() if not r.ok] == ["node2"]
    assert results["node2"].error is ErrorKind.BUSY
    assert results["node2"].message == (
        f"SLURM reports node2 allocated (held by job {job} of user root): another job is "
        "using it; run again when it is free")


@pytest.mark.realcomponents
def test_a_node_taken_after_sinfo_ends_the_step_in_seconds(
        slurm: NetnsCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """sinfo saw node2 idle, then another job took it: srun --immediate gives up in
    seconds ('Requested nodes are busy'), a second look names the job, the other nodes
    answer from one more step."""
    checks: list[list[str]] = []
    real_check = SlurmLauncher.check

    def stale_first(self: SlurmLauncher, nodes: list[str],
                    timeout_s: float) -> NodeCheck | str:
        checks.append(list(nodes))
        if len(checks) == 1:  # what sinfo said before the other job took node2
            return NodeCheck(idle=list(nodes))
        return real_check(self, nodes, timeout_s)

    monkeypatch.setattr(SlurmLauncher, "check", stale_first)
    with slurm.hold_node("node2") as job:
        began = time.monotonic()
        results = launcher_on(slurm).run(ProbeCall("host"), slurm.nodes, 60)
        took = time.monotonic() - began
    print(f"node taken after sinfo: found in {took:.1f} s")
    assert [n for n, r in results.items() if not r.ok] == ["node2"]
    assert results["node2"].error is ErrorKind.BUSY
    assert f"(held by job {job} of user root)" in results["node2"].message
    # two steps (three if the backfill scheduler planned the others for the step that
    # gave up), not one per node
    assert checks[:2] == [slurm.nodes, slurm.nodes] and len(checks) <= 3


@pytest.mark.realcomponents
def test_a_hanging_probe_is_killed_and_the_step_ends(slurm: NetnsCluster) -> None:
    launcher = SlurmLauncher(ClusterSpec("t", tuple(slurm.nodes), "slurm", sys.executable,
                                         60, 8), SlurmSpec())
    results = launcher.run_source(ProbeCall("host"), "import time\ntime.sleep(600)\n",
                                  ["node1", "node4"], 2)
    for result in results.values():
        # killed by the runner on the node at 2 s, not by the launcher's later backstop
        assert result.error is ErrorKind.TIMEOUT, result.describe()
        assert result.message == "no answer within 2 s; killed on the node"
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
def test_a_node_in_a_reservation_is_busy_unless_the_spec_runs_inside_it(
        slurm: NetnsCluster) -> None:
    """A maintenance reservation holds node3: outside it node3 is busy (not measured, not
    its fault); with slurm.reservation naming it, the probe runs there."""
    slurm.scontrol("create", "reservation", "reservationname=burnin", "users=root",
                   "starttime=now", "duration=10", "nodes=node3", "flags=maint")
    try:
        slurm.wait_for(lambda: slurm.node_state("node3") == "maint", "node3 in maint")
        results = launcher_on(slurm).run(ProbeCall("host"), slurm.nodes, 60)
        inside = SlurmLauncher(ClusterSpec("t", ("node3",), "slurm", sys.executable, 60, 8),
                               SlurmSpec(reservation="burnin")).run(
            ProbeCall("host"), ["node3"], 60)
    finally:
        slurm.scontrol("delete", "reservationname=burnin")
        slurm.wait_idle("node3")
    assert [n for n, r in results.items() if not r.ok] == ["node3"]
    assert (results["node3"].error, results["node3"].message) == (
        ErrorKind.BUSY, "SLURM reports node3 maint: in a maintenance reservation; give "
                        "slurm.reservation to run inside it")
    assert inside["node3"].ok, inside["node3"].describe()


@pytest.mark.realcomponents
@pytest.mark.parametrize("probe_s", [0, 20])
def test_a_dead_slurmd_fails_only_its_node(slurm: NetnsCluster, probe_s: int) -> None:
    """slurmd killed but not yet marked down (SlurmdTimeout 30 s): the step's launch fails
    on it within SLURM's MessageTimeout and srun names it; it fails alone as unreachable
    with srun's words. A probe still running elsewhere when srun aborts the step (20 s) is
    run again on the other nodes in one step, once SLURM lets them go."""
    source = ("import json, time\n"
              f"time.sleep({probe_s})\n"
              "print(json.dumps({'probe': 'host', 'data': {'slept': True}}))\n")
    slurm.stop_slurmd("node3")
    try:
        began = time.monotonic()
        results = launcher_on(slurm).run_source(ProbeCall("host"), source, slurm.nodes, 60)
        took = time.monotonic() - began
    finally:
        slurm.start_slurmd("node3")
        back_to_idle(slurm, "node3")
    print(f"dead slurmd, {probe_s} s probe: {took:.1f} s")
    assert {n: r.ok for n, r in results.items()} == {
        "node1": True, "node2": True, "node3": False, "node4": True}
    assert results["node3"].error is ErrorKind.UNREACHABLE
    assert re.fullmatch(r"srun could not start the probe on node3: srun: error: Task launch "
                        r"for StepId=\d+\.0 failed on node node3: Communication connection "
                        r"failure", results["node3"].message), results["node3"].message
    assert "node1" not in results["node3"].stderr_tail  # only what is about node3


@pytest.mark.realcomponents
def test_inside_an_allocation_the_spec_takes_its_nodes(slurm: NetnsCluster,
                                                       tmp_path: Path) -> None:
    spec = tmp_path / "alloc.yaml"
    spec.write_text("cluster: {name: x, launcher: slurm}\nhost: {cpu_cores: 1}\n"
                    "slurm: {allocation: true}\n")
    code = ("import sys; from pytest_cluster.contract import load_spec; "
            "print(' '.join(load_spec(sys.argv[1]).cluster.nodes))")
    done = subprocess.run(["salloc", "-N3", sys.executable, "-c", code, str(spec)],
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "node1 node2 node3"


@pytest.mark.realcomponents
def test_a_program_runs_on_real_slurm_as_one_step_of_tasks(
        slurm: NetnsCluster, tmp_path: Path) -> None:
    """srun --mpi (none here) starts a task on each of 2 nodes (the test's nodes have one
    CPU each); the first task's lines come back alone; a task that fails ends the step
    with its exit code and words."""
    program = tmp_path / "ranks.sh"
    program.write_text(RANKS)
    program.chmod(0o755)
    launcher = SlurmLauncher(ClusterSpec("t", tuple(slurm.nodes), "slurm", sys.executable,
                                         60, 8), SlurmSpec(mpi="none"))
    done = launcher.run_program([str(program)], ["node1", "node2"], 1, 60)
    assert done is not None and done.exit_code == 0, done
    assert done.first_task == "rank 0 of 2 on node1\n"
    failed = launcher.run_program([str(program), "fail"], ["node1", "node2"], 1, 60)
    assert failed is not None and failed.exit_code == 3, failed
    assert "rank 1 gives up" in failed.stderr_tail



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


def launcher_on(slurm: NetnsCluster) -> SlurmLauncher:
    return SlurmLauncher(ClusterSpec("t", tuple(slurm.nodes), "slurm", sys.executable, 60, 8),
                         SlurmSpec())
