"""Real components (network namespaces with sshd, SLURM) for tests/run/test_interrupts.py:
the same checks on real parts; its unit tests stay there."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_cluster.contract.model import ClusterSpec, SshSpec
from pytest_cluster.launchers.result import ErrorKind
from pytest_cluster.launchers.ssh import SshLauncher
from pytest_cluster.probes import ProbeCall
from tests.conftest import has_torch
from tests.netns_cluster import NetnsCluster
from tests.run.test_interrupts import CLEAN_BOUND_S, cmdline, interrupt_a_running_job, wait_for


@pytest.mark.realcomponents
def test_ctrl_c_over_ssh_stops_every_rank_on_every_node(netns: NetnsCluster,
                                                        tmp_path: Path) -> None:
    if not has_torch():
        pytest.skip("needs torch on the nodes")
    interrupt_a_running_job(netns, "ssh", tmp_path)


@pytest.mark.realcomponents
def test_ctrl_c_over_slurm_cancels_the_steps(slurm: NetnsCluster, tmp_path: Path) -> None:
    if not has_torch():
        pytest.skip("needs torch on the nodes")
    interrupt_a_running_job(slurm, "slurm", tmp_path)

    def queue() -> str:
        done = subprocess.run(["squeue", "--noheader", "--format=%i %j %T"],
                              capture_output=True, text=True, check=True, timeout=30)
        return done.stdout.strip()

    wait_for("no job of ours in squeue", lambda: queue() == "", CLEAN_BOUND_S)


@pytest.mark.realcomponents
def test_a_hung_interpreter_is_killed_on_the_node_at_its_timeout(netns: NetnsCluster,
                                                                 tmp_path: Path) -> None:
    """cluster.python hangs before the node runner starts (an interpreter on a hung NFS
    mount): the node kills it at the spec's 3 s timeout (not the controller at its later
    backstop, leaving it there), and the message says 3 s."""
    hung = tmp_path / "hung-python"
    hung.write_text("#!/bin/sh\nsleep 613\n")
    hung.chmod(0o755)
    spec = ClusterSpec("t", tuple(netns.nodes), "ssh", str(hung), 3, 8)
    ssh = SshLauncher(spec, SshSpec(config=str(netns.ssh_config), connect_timeout_s=3))

    def left() -> list[bytes]:
        return [c for c in map(cmdline, netns.pids("node2"))
                if str(hung).encode() in c or c == b"sleep\x00613\x00"]

    try:
        result = ssh.run(ProbeCall("host"), ["node2"], 3)["node2"]
    finally:
        ssh.close()
    assert result.error is ErrorKind.TIMEOUT, result.describe()
    assert result.message == "no answer within 3 s (cluster.probe_timeout); killed on the node"
    wait_for(f"the hung interpreter gone from node2: {left()}", lambda: not left(), 5)

