"""The slurm launcher (launchers/slurm.py): how it reads a command's bytes, what a busy node
becomes, the slurm settings of a spec, and the spec its real SLURM test (tests/real/) runs.
Its command lines are tested in test_slurm_commands.py, sinfo and squeue in
test_slurm_nodes.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.errors import SpecError
from pytest_cluster.evidence.cluster_verdict import cluster_failures
from pytest_cluster.evidence.drain import to_drain
from pytest_cluster.evidence.plan import Plan, PlannedCase
from pytest_cluster.evidence.sinks.results import ResultLine
from pytest_cluster.evidence.verdict import node_verdicts
from pytest_cluster.launchers.slurm import _run_text
from pytest_cluster.launchers.slurm_nodes import parse_sinfo
from tests.launchers.test_ssh import spec_text
from tests.netns_cluster import NetnsCluster


def test_sinfo_bytes_that_are_not_utf8_are_replaced() -> None:
    code, out, _ = _run_text([sys.executable, "-c", "import sys; sys.stdout.buffer.write("
                              "b'n1|drained|bad \\xff gpu\\n')"])
    assert (code, parse_sinfo(out)) == (0, {"n1": ("drained", "bad \ufffd gpu")})


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


#: A program standing in for an MPI build (no MPI here): each task prints its rank as
#: SLURM gives it; task 1 fails when asked to.
RANKS = """\
#!/bin/sh
echo "rank $SLURM_PROCID of $SLURM_NTASKS on $SLURMD_NODENAME"
if [ "$SLURM_PROCID" = "1" ] && [ -n "$1" ]; then echo "rank 1 gives up" >&2; exit 3; fi
"""
