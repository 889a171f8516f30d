"""A check of ours that crashes (an exception inside our code while checking: a
`tool_fault`) describes itself one way in every view, and knocks out no healthy node:
the crash of one node's simulated job is that job's, the other nodes' jobs are measured,
and no job waits out the rendezvous for a part that crashed (issue 47)."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.sim.job_node import NodePart, Rendezvous, _Meeting
from tests.oracle import check

SPEC = """\
cluster: {name: crash, nodes: "n[1-3]", launcher: sim}
interconnect:
  intra_node: {kind: nvlink, rate: 450 GB/s}
  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}
  payloads: [1 GiB]
  node_counts: [2]
  busbw: ">= 70%"
  ranks_per_node: 8
  backend: nccl
sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 8
"""

#: A plugin that makes the sim's answer to any collective job with n1 in it crash, as the
#: NVLink fault did (issue 47).
CRASH = """\
from pytest_cluster.sim import answers

_play = answers.JOBS["collective"]


def _crashing(sim, ic, nodes, part):
    if "n1" in nodes:
        raise ZeroDivisionError("float division by zero")
    return _play(sim, ic, nodes, part)


def pytest_configure(config):
    answers.JOBS["collective"] = _crashing


def pytest_unconfigure(config):
    answers.JOBS["collective"] = _play
"""


def records(run: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    return [line for line in lines if "nodeid" in line]


def run_with(pytester: pytest.Pytester, **plugin: str) -> tuple[Path, str]:
    """SPEC's interconnect checks run with one plugin (its name: its source), every view
    written and found to agree (the consistency oracle); the run's directory and output."""
    pytester.makepyfile(**plugin)
    pytester.syspathinsert()
    (pytester.path / "trial.yaml").write_text(SPEC)
    metrics = pytester.path / "metrics.prom"
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", "-p",
                                *plugin, "--cluster-reports=reports",
                                f"--cluster-metrics={metrics}", "-k", "interconnect")
    run = (pytester.path / "reports" / "latest").resolve()
    assert check(run, result.stdout.str(), metrics) == []
    return run, result.stdout.str()


@pytest.mark.slow
def test_a_crashed_job_is_a_tool_fault_of_its_own_cases_only(
        pytester: pytest.Pytester) -> None:
    run, _ = run_with(pytester, crash=CRASH)
    found = records(run)
    faults = [r for r in found if r.get("error_kind") == "tool_fault"]
    assert faults, [(r["nodeid"], r.get("error_kind")) for r in found]
    assert all(r["simulated"] for r in found)
    # only the cases whose job has n1 in it crashed; n2 and n3 were measured
    for record in found:
        if record["node"] in ("n2", "n3") and "intra_node" in record["nodeid"]:
            assert record["outcome"] == "passed", record
    verdict = json.loads((run / "verdict.json").read_text())
    nodes = {entry["node"]: entry["verdict"] for entry in verdict["nodes"]}
    assert nodes["n2"] != "NOT CHECKED" or nodes["n3"] != "NOT CHECKED", nodes


#: A plugin that makes the check of the 2-node all-reduce itself crash, outside any job.
RAW = """\
from pytest_cluster.measure.network import collectives

_inter_node = collectives.inter_node


def _crashing(prober, count, collective):
    raise ZeroDivisionError("float division by zero")


def pytest_configure(config):
    collectives.inter_node = _crashing


def pytest_unconfigure(config):
    collectives.inter_node = _inter_node
"""


@pytest.mark.slow
def test_a_check_that_crashes_describes_itself_one_way_in_every_view(
        pytester: pytest.Pytester) -> None:
    """The case's line, its JUnit properties, the report, the metrics and the verdict
    agree (the oracle): simulated, its node or nodes named, one sample a case."""
    run, output = run_with(pytester, raw=RAW)
    (crashed,) = [r for r in records(run) if r.get("error_kind") == "tool_fault"]
    assert crashed["simulated"] is True
    assert crashed["message"] == "[SIMULATED] ZeroDivisionError: float division by zero"
    assert crashed["node"] == "cluster crash"
    assert (crashed["collective"], crashed["node_count"]) == ("all_reduce", 2)
    assert "(None)" not in output


def test_a_simulated_job_whose_answer_raises_ends_for_every_part_at_once() -> None:
    """The part that completes the job raises the answer's exception (a tool fault); the
    parts waiting for it say so instead of waiting out the init timeout."""
    rendezvous: Rendezvous[str] = Rendezvous()

    def answer(nodes: tuple[str, ...]) -> list[str]:
        raise ZeroDivisionError("float division by zero")

    def part(rank: int) -> NodePart:
        return NodePart("m", 1, rank, 3, 1, 5.0, 60.0, "", ())

    def join(rank: int) -> str:
        try:
            return rendezvous.join(part(rank), f"n{rank}", answer, lambda: False)
        except ZeroDivisionError:
            return "raised"

    with ThreadPoolExecutor(3) as pool:
        first = [pool.submit(join, rank) for rank in (0, 1)]
        while len(rendezvous._meetings.get(("m", 1), _Meeting(3)).nodes) < 2:
            time.sleep(0.01)  # the first two parts wait at the rendezvous
        last = pool.submit(join, 2)
        found = [future.result() for future in (*first, last)]
    assert found == ["simulated: the job's answer crashed on another node's part "
                     "(ZeroDivisionError: float division by zero)"] * 2 + ["raised"]
