"""launchers/slurm_nodes.py: the sinfo and squeue command lines, and what their text says
of each node: idle, waited for, or failed with SLURM's own words."""

from __future__ import annotations

import pytest

from pytest_cluster.launchers.result import ErrorKind
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


def test_sinfo_and_squeue_command_lines_are_exact() -> None:
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
