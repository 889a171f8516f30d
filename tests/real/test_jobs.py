"""Real components (network namespaces with sshd, SLURM) for tests/launchers/test_jobs.py:
the same checks on real parts; its unit tests stay there."""

from __future__ import annotations

import sys

import pytest

from pytest_cluster.contract.model import ClusterSpec, SlurmSpec, SshSpec
from pytest_cluster.launchers.base import Launcher
from pytest_cluster.launchers.jobs import JobSpec, run_job
from pytest_cluster.launchers.slurm import SlurmLauncher
from pytest_cluster.launchers.ssh import SshLauncher
from tests.conftest import has_torch
from tests.launchers.test_jobs import ALL_REDUCE
from tests.netns_cluster import NetnsCluster


@pytest.mark.realcomponents
@pytest.mark.parametrize("kind", ["ssh", "slurm"])
def test_gloo_all_reduce_across_four_nodes(slurm: NetnsCluster, kind: str) -> None:
    netns = slurm
    if not has_torch():
        pytest.skip("needs torch on the nodes")
    spec = ClusterSpec("t", tuple(netns.nodes), kind, sys.executable, 60, 8)
    launcher: Launcher = (SshLauncher(spec, SshSpec(config=str(netns.ssh_config)))
                          if kind == "ssh" else SlurmLauncher(spec, SlurmSpec()))
    try:
        result = run_job(launcher, JobSpec(tuple(netns.nodes), ALL_REDUCE,
                                           init_timeout_s=60, wall_timeout_s=180))
    finally:
        launcher.close()
    assert result.ok, result.first_failure()
    assert result.master_addr == netns.addresses["node1"]
    assert [(r.node, r.rank) for r in result.ranks] == [
        (node, i) for i, node in enumerate(netns.nodes)]
    assert {r.data["sum"] for r in result.ranks if r.data} == {10.0}

