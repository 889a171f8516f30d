"""The slurm launcher: exact command lines, sinfo and labeled-output parsing, hostlists
against scontrol, and (marked realcomponents) a real SLURM with one slurmd per network
namespace node."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.model import SlurmSpec
from pytest_cluster.errors import SpecError
from pytest_cluster.evidence.cluster_verdict import cluster_failures
from pytest_cluster.evidence.drain import to_drain
from pytest_cluster.evidence.plan import Plan, PlannedCase
from pytest_cluster.evidence.sinks.results import ResultLine
from pytest_cluster.evidence.verdict import node_verdicts
from pytest_cluster.launchers.remote import RUNNER_SOURCE
from pytest_cluster.launchers.result import ErrorKind
from pytest_cluster.launchers.slurm import _run_text
from pytest_cluster.launchers.slurm_commands import (
    mpi_srun_command,
    scancel_command,
    split_labeled,
    srun_command,
    srun_errors,
    task_lines,
)
from pytest_cluster.launchers.slurm_nodes import (
    Holder,
    Waiting,
    check_nodes,
    parse_sinfo,
    parse_squeue,
    sinfo_command,
    squeue_command,
    state_kind,
)
from pytest_cluster.probes import ProbeCall
from tests.launchers.test_ssh import spec_text
from tests.netns_cluster import NetnsCluster


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
    assert sinfo_command(["n1", "n2"]) == [
        "sinfo", "--noheader", "--Node", "--all", "--nodes=n1,n2", "--format=%N|%T|%E"]
    assert sinfo_command(["n1"], "gpu") == [
        "sinfo", "--noheader", "--Node", "--partition=gpu", "--nodes=n1",
        "--format=%N|%T|%E"]
    assert squeue_command(["n1", "n2"]) == [
        "squeue", "--noheader", "--all", "--nodelist=n1,n2", "--format=%i|%u|%T|%N|%j"]


SINFO = ("n1|idle|none\n"
         "n2|drained|bad gpu | see ticket #12 (dcgm): ECC\n"
         "n3|down*|Not responding\n"
         "n4|mixed|none\n"
         "n5|idle*|none\n"
         "n6|draining@|reboot asked\n"
         "n7|idle~|none\n"
         "n8|allocated|none\n"
         "n9|idle|none\n"
         "n9|drained|kaputt\n"
         "n10|reserved|none\n"
         "n11|completing|none\n"
         "n12|mixed-|none\n"
         "n13|allocated+drain|\u00d6lpumpe \ufffd defekt\n"
         "n14|allocated|none\n"
         "n16|idle+cloud|none\n"
         "n17|allocated|none\n"
         "n18|down*|Not responding\n"
         "n18|idle|none\n"
         "n19|planned|none\n"
         "garbage without fields\n")
SQUEUE = ("97|alice|RUNNING|n[4,8]|train | big\n"
          "98|root|COMPLETING|n11|pytest-cluster-host-1a2b3c4d\n"
          "99|root|RUNNING|n14|pytest-cluster-gpu-00000000\n"
          "100|root|PENDING||pytest-cluster-host-0\n")


def test_sinfo_lines_are_read_whatever_the_reason_holds() -> None:
    """The reason is the last field: '|', spaces, parentheses and non-ASCII stay in it; a
    node in two partitions keeps its worst state; 'none' is no reason."""
    sinfo = parse_sinfo(SINFO)
    assert sinfo["n2"] == ("drained", "bad gpu | see ticket #12 (dcgm): ECC")
    assert sinfo["n9"] == ("drained", "kaputt")
    assert sinfo["n18"] == ("down*", "Not responding")
    assert sinfo["n13"] == ("allocated+drain", "\u00d6lpumpe \ufffd defekt")
    assert sinfo["n1"] == ("idle", "")
    assert len(sinfo) == 18


@pytest.mark.parametrize(("state", "kind"), [
    ("idle", "idle"), ("IDLE", "idle"), ("idle+cloud", "idle"),
    ("allocated", "held"), ("alloc", "held"), ("mixed", "held"), ("completing", "held"),
    ("allocated+", "held"),
    ("reserved", "busy"), ("resv", "busy"), ("planned", "planned"), ("plnd", "planned"),
    ("idle+planned", "planned"), ("mixed-", "busy"),
    ("perfctrs", "busy"),
    ("idle*", "down"), ("down*", "down"), ("down", "down"), ("completing*", "down"),
    ("drain*", "down"), ("drained", "down"), ("draining", "down"), ("draining@", "down"),
    ("allocated+drain", "down"), ("idle~", "down"), ("idle#", "down"), ("idle%", "down"),
    ("idle!", "down"), ("powered_down", "down"), ("cloud", "down"), ("fail", "down"),
    ("failing", "down"), ("maint", "busy"), ("idle$", "busy"), ("mixed$", "busy"),
    ("drained$", "down"), ("reboot^", "down"),
    ("idle@", "down"), ("future", "down"), ("unknown", "down"), ("inval", "down"),
    ("down+not_responding", "down"), ("?", "down"), ("something_new", "down")])
def test_every_sinfo_state_is_sorted(state: str, kind: str) -> None:
    assert state_kind(state) == kind


def test_inside_a_reservation_reserved_and_maint_nodes_are_expected() -> None:
    assert [state_kind(s, reservation=True) for s in ("reserved", "maint", "idle$",
                                                      "mixed$", "drained$")] == [
        "idle", "idle", "idle", "held", "down"]


def test_squeue_lines_give_each_node_its_jobs() -> None:
    holders = parse_squeue(SQUEUE, ["n4", "n8", "n11", "n14", "n17"])
    alice = Holder("97", "alice", "RUNNING", "train | big")
    assert holders == {
        "n4": [alice], "n8": [alice],
        "n11": [Holder("98", "root", "COMPLETING", "pytest-cluster-host-1a2b3c4d")],
        "n14": [Holder("99", "root", "RUNNING", "pytest-cluster-gpu-00000000")]}


def test_each_node_is_failed_with_slurms_words_or_kept() -> None:
    nodes = [f"n{i}" for i in range(1, 18)] + ["n19"]
    check = check_nodes(parse_sinfo(SINFO), parse_squeue(SQUEUE, nodes), nodes, "root",
                        timeout_s=60)
    unreachable, busy = ErrorKind.UNREACHABLE, ErrorKind.BUSY
    assert check.failed == {
        "n2": (unreachable, "SLURM reports n2 drained (bad gpu | see ticket #12 (dcgm): "
                            "ECC): taken out of service; `scontrol update nodename=n2 "
                            "state=resume` returns it"),
        "n3": (unreachable, "SLURM reports n3 down* (Not responding): its slurmd does not "
                            "answer slurmctld; check slurmd on n3"),
        "n4": (busy, "SLURM reports n4 mixed (held by job 97 of user alice): another job "
                     "is using it; run again when it is free"),
        "n5": (unreachable, "SLURM reports n5 idle*: its slurmd does not answer slurmctld; "
                            "check slurmd on n5"),
        "n6": (unreachable, "SLURM reports n6 draining@ (reboot asked): taken out of "
                            "service; `scontrol update nodename=n6 state=resume` returns it"),
        "n7": (unreachable, "SLURM reports n7 idle~: powered down or changing power state; "
                            "power it up before the test"),
        "n8": (busy, "SLURM reports n8 allocated (held by job 97 of user alice): another "
                     "job is using it; run again when it is free"),
        "n9": (unreachable, "SLURM reports n9 drained (kaputt): taken out of service; "
                            "`scontrol update nodename=n9 state=resume` returns it"),
        "n10": (busy, "SLURM reports n10 reserved: in an advanced reservation; give "
                      "slurm.reservation to run inside it"),
        "n12": (busy, "SLURM reports n12 mixed-: kept free by the backfill scheduler for a "
                      "pending job"),
        "n13": (unreachable, "SLURM reports n13 allocated+drain (\u00d6lpumpe \ufffd "
                             "defekt): taken out of service; `scontrol update nodename=n13 "
                             "state=resume` returns it"),
        "n15": (ErrorKind.CONTROLLER, "SLURM does not know n15 (sinfo does not list it): "
                                      "check cluster.nodes"),
    }
    # n17: allocated in sinfo, no job in squeue (freed since): srun --immediate decides
    assert check.idle == ["n1", "n16", "n17"]
    assert check.waiting == {
        "n11": Waiting(30, unreachable, (
            "SLURM still shows n11 completing with our step pytest-cluster-host-1a2b3c4d "
            "(job 98, completing) after 30 s more: the node does not confirm the step's "
            "end; its slurmd does not answer slurmctld; check slurmd on n11")),
        "n14": Waiting(70, busy, (
            "SLURM reports n14 allocated, held by our own pytest-cluster-gpu-00000000 "
            "(job 99, running), and did not give it to this step within 70 s")),
        # maybe for our own step that just gave up: srun decides, in a step of its own
        "n19": Waiting(10, busy, (
            "SLURM reports n19 planned: kept free by the backfill scheduler for a pending "
            "job, and did not give it to this step within 10 s"))}


def test_another_users_step_and_the_allocation_we_run_in() -> None:
    sinfo = {"n1": ("allocated", ""), "n2": ("mixed", "")}
    holders = {"n1": [Holder("5", "bob", "RUNNING", "pytest-cluster-host-0")],
               "n2": [Holder("7", "bob", "RUNNING", "interactive")]}
    # bob's pytest-cluster is another job, not ours
    assert check_nodes(sinfo, holders, ["n1"], "root").failed["n1"][0] is ErrorKind.BUSY
    # inside salloc (SLURM_JOB_ID=7) the allocation's nodes are ours: waited for
    inside = check_nodes(sinfo, holders, ["n2"], "alice", allocation_job="7", timeout_s=5)
    assert (inside.failed, inside.waiting["n2"].immediate_s) == ({}, 15)
    partition = check_nodes({}, {}, ["n3"], "root", partition="gpu")
    assert partition.failed["n3"][1] == ("SLURM does not know n3 in partition gpu (sinfo "
                                         "does not list it): check cluster.nodes and "
                                         "slurm.partition")


def test_sinfo_bytes_that_are_not_utf8_are_replaced() -> None:
    code, out, _ = _run_text([sys.executable, "-c", "import sys; sys.stdout.buffer.write("
                              "b'n1|drained|bad \\xff gpu\\n')"])
    assert (code, parse_sinfo(out)) == (0, {"n1": ("drained", "bad \ufffd gpu")})


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


def test_a_busy_node_is_not_checked_never_drained() -> None:
    """Another job held it: nothing was measured, so it is neither rejected nor
    unreachable (no drain line), and the cluster did not fail for it."""
    plan = Plan((PlannedCase("a::t[n1]", "gpus.count", "n1"),
                 PlannedCase("a::u[n1]", "host.memory", "n1")),
                frozenset({"a::t[n1]", "a::u[n1]"}))
    message = ("Failed: n1: host probe busy: SLURM reports n1 allocated (held by job 97 of "
               "user alice): another job is using it; run again when it is free")
    records: list[ResultLine] = [
        {"type": "result", "case": case, "clause": clause, "node": "n1", "outcome": "failed",
         "phase": "call", "message": message, "error_kind": "busy", "probe": "host"}
        for case, clause in (("a::t[n1]", "gpus.count"), ("a::u[n1]", "host.memory"))]
    (n1,) = node_verdicts(["n1"], plan, records)
    assert (n1.verdict, n1.reason) == ("NOT CHECKED", (
        "2 could not be decided (n1: host probe busy: SLURM reports n1 allocated (held by "
        "job 97 of user alice): another job is using it; run again when it is free); none "
        "failed"))
    assert to_drain([n1]) == [] and cluster_failures(records, ["n1"]) == []


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





def slurm_spec(netns: NetnsCluster, fs: Path) -> str:
    text = spec_text(netns, fs).replace("launcher: ssh", "launcher: slurm")
    return text.replace(f"{netns.launcher_section('ssh')}\n",
                        "slurm:\n  time_limit: 5 min\n")
























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


#: A program standing in for an MPI build (no MPI here): each task prints its rank as
#: SLURM gives it; task 1 fails when asked to.
RANKS = """\
#!/bin/sh
echo "rank $SLURM_PROCID of $SLURM_NTASKS on $SLURMD_NODENAME"
if [ "$SLURM_PROCID" = "1" ] && [ -n "$1" ]; then echo "rank 1 gives up" >&2; exit 3; fi
"""
