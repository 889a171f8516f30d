"""launchers/slurm_commands.py: the srun and scancel command lines, exact, and how srun's
output is read (each task's labelled lines, the errors that name a node)."""

from __future__ import annotations

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.model import SlurmSpec
from pytest_cluster.errors import SpecError
from pytest_cluster.launchers.remote import RUNNER_SOURCE
from pytest_cluster.launchers.slurm_commands import (
    mpi_srun_command,
    scancel_command,
    split_labeled,
    srun_command,
    srun_errors,
    task_lines,
)
from pytest_cluster.probes import ProbeCall


def test_srun_command_is_exact() -> None:
    slurm = SlurmSpec(partition="gpu", account="ml-team", reservation="trial",
                      time_limit_min=20)
    call = ProbeCall("storage", ("--path", "/data; rm -rf /"))
    assert srun_command(slurm, ["n1", "n2"], "/venv/bin/python", call, 600, "pc-job") == [
        "srun", "--nodelist=n1,n2", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1",
        "--input=all", "--label", "--kill-on-bad-exit=0", "--no-kill", "--immediate=10",
        "--job-name=pc-job", "--export=ALL,PYTEST_CLUSTER_MARKERS=1", "--partition=gpu",
        "--account=ml-team", "--reservation=trial", "--time=20", "/venv/bin/python", "-c",
        RUNNER_SOURCE, "600", "/venv/bin/python", "--path", "/data; rm -rf /"]
    assert srun_command(SlurmSpec(), ["n1"], "python3", ProbeCall("host"), 60, "j",
                        immediate_s=70)[:10] == [
        "srun", "--nodelist=n1", "--nodes=1", "--ntasks=1", "--ntasks-per-node=1",
        "--input=all", "--label", "--kill-on-bad-exit=0", "--no-kill", "--immediate=70"]
    assert scancel_command("pc-job")[:2] == ["scancel", "--name=pc-job"]


def test_srun_says_which_node_it_could_not_start_and_when_it_got_none() -> None:
    launch = srun_errors(
        "srun: error: node1: task 0: Killed\n"
        "srun: error: Task launch for StepId=16.0 failed on node node3: Communication "
        "connection failure\n"
        "srun: error: Task launch for 1234.0 failed on node gpu-07: Zero Bytes were "
        "transmitted or received\n"
        "srun: error: Application launch failed: Communication connection failure\n"
        "srun: Job step aborted\n")
    assert launch.launch_failed == {
        "node3": "srun: error: Task launch for StepId=16.0 failed on node node3: "
                 "Communication connection failure",
        "gpu-07": "srun: error: Task launch for 1234.0 failed on node gpu-07: Zero Bytes "
                  "were transmitted or received"}
    assert launch.no_resources == ""
    busy = srun_errors("srun: job 96 queued and waiting for resources\n"
                       "srun: error: Unable to allocate resources: Requested nodes are busy\n")
    assert (busy.launch_failed, busy.no_resources) == ({}, (
        "srun: job 96 queued and waiting for resources / srun: error: Unable to allocate "
        "resources: Requested nodes are busy"))
    assert busy.busy
    step = srun_errors("srun: error: Unable to create step for job 12: Requested nodes are "
                       "busy\n")
    assert step.no_resources.endswith("Requested nodes are busy") and step.busy
    refused = srun_errors("srun: error: Unable to allocate resources: Invalid account or "
                          "account/partition combination specified\n")
    assert refused.no_resources.endswith("combination specified") and not refused.busy
    assert srun_errors("srun: error: node2: task 1: Exited with exit code 1\n") == (
        srun_errors(""))


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


def test_a_program_built_with_mpi_runs_as_one_srun_step() -> None:
    """nccl-tests across nodes: one task per GPU, ranked by SLURM's PMI, every line
    labelled; the first task's lines are what it printed."""
    slurm = SlurmSpec(partition="gpu", mpi="pmix")
    assert mpi_srun_command(slurm, ["n1", "n2"], 8, ["/opt/nt/all_reduce_perf", "-g", "1"],
                            "pc-program") == [
        "srun", "--nodelist=n1,n2", "--nodes=2", "--ntasks=16", "--ntasks-per-node=8",
        "--mpi=pmix", "--label", "--kill-on-bad-exit=1", "--immediate=10",
        "--job-name=pc-program", "--partition=gpu", "/opt/nt/all_reduce_perf", "-g", "1"]
    assert task_lines(" 0: # nccl-tests version 2.19.6\n 1: # nccl-tests\n10: x\n"
                      " 0:   8  2  float\nsrun: error\n") == (
        "# nccl-tests version 2.19.6\n  8  2  float\n")
    with pytest.raises(SpecError, match=r"slurm\.mpi: expected a MPI plugin name"):
        parse_spec("cluster: {name: c, nodes: [a], launcher: slurm}\n"
                   "slurm: {mpi: 'pmix; reboot'}\nhost: {cpu_cores: 1}\n", "t.yaml")
