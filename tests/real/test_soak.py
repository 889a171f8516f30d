"""A soak of the namespace cluster through real sshd and a real SLURM: one node's daemon is
stopped for a minute in the middle, and the soak's availability says when, to within a
round."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from decimal import Decimal

import pytest

from pytest_cluster.evidence.sinks.results import ResultLine, read_results
from tests.netns_cluster import NetnsCluster
from tests.soak.test_driver import _lines

OUTAGE_S = 60.0
STOP_AT_S = 35.0
SOAK = "150s"


def _spec(netns: NetnsCluster, kind: str) -> str:
    launcher = (netns.launcher_section("ssh") if kind == "ssh"
                else "slurm:\n  time_limit: 5 min")
    return (f"cluster:\n  name: soak-{kind}\n  nodes: node[1-4]\n  launcher: {kind}\n"
            f"  python: {sys.executable}\n  probe_timeout: 1 min\n{launcher}\n"
            "host:\n  cpu_cores: '>= 1'\n  memory: '>= 256 MiB'\n"
            "  software: {kernel: '>= 3.0', python: '>= 3.8'}\n"
            "sla:\n  uptime: 99%\n  down_after: 0 s\n  price_per_node_hour: 3.0\n"
            "  credits: [{below: 99%, credit: 10%}, {below: 95%, credit: 30%}]\n")


def _resume_slurmd(slurm: NetnsCluster, node: str) -> None:
    """slurmd back, and the node back in service (without cancelling the soak's steps)."""
    slurm.start_slurmd(node)
    env = {**os.environ, **slurm.slurm_env}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], env=env,
                       capture_output=True, check=False)
        state = subprocess.run(["sinfo", "--noheader", "--Node", f"--nodes={node}",
                                "--format=%T"], env=env, capture_output=True, text=True,
                               check=False).stdout.strip()
        if state in ("idle", "mixed", "allocated"):
            return
        time.sleep(0.5)


def _outage(stop: Callable[[], None], start: Callable[[], None],
            when: dict[str, float]) -> threading.Thread:
    def run() -> None:
        time.sleep(STOP_AT_S)
        when["stopped"] = time.time()
        stop()
        time.sleep(OUTAGE_S)
        start()
        when["back"] = time.time()

    return threading.Thread(target=run, daemon=True)


@pytest.mark.realcomponents
@pytest.mark.parametrize("kind", ["ssh", "slurm"])
def test_a_node_down_for_a_minute_mid_soak_is_down_for_that_minute(
        pytester: pytest.Pytester, request: pytest.FixtureRequest, kind: str) -> None:
    cluster: NetnsCluster = request.getfixturevalue("netns" if kind == "ssh" else "slurm")

    def stop() -> None:
        if kind == "ssh":
            cluster.stop_sshd("node3")
        else:
            cluster.stop_slurmd("node3")

    def start() -> None:
        if kind == "ssh":
            cluster.start_sshd("node3")
            cluster.wait_for_port("node3")
        else:
            _resume_slurmd(cluster, "node3")
    (pytester.path / "trial.yaml").write_text(_spec(cluster, kind))
    when: dict[str, float] = {}
    outage = _outage(stop, start, when)
    outage.start()
    try:
        result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                    f"--cluster-soak={SOAK}")
    finally:
        outage.join(timeout=OUTAGE_S + STOP_AT_S + 120)
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    rounds = _lines(soak_dir / "results.jsonl", "round")
    print(f"{kind}: {len(rounds)} rounds; " + "; ".join(
        f"{r['round']} {r['ended_at'] - r['started_at']:.1f} s {r['nodes']}" for r in rounds))
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    period = max(b["started_at"] - a["started_at"] for a, b in itertools.pairwise(rounds))
    down = [r for r in rounds if "node3" in r["nodes"].get("unreachable", [])]
    assert down, rounds
    # only node3 was ever down, and only in the rounds of the outage
    assert all(r["nodes"].get("unreachable", []) in ([], ["node3"]) for r in rounds)
    assert all(not r["nodes"].get("failed") for r in rounds)
    run = read_results(soak_dir / "results.jsonl")
    by_case: dict[str, ResultLine] = {r["case"]: r for r in run.results}
    node3 = by_case["pytest_cluster/soak.py::test_available[node3]"]
    (outage_span,) = node3["outages_at"]
    began, ended = outage_span
    # the outage as measured starts and ends within a round of the real one
    assert abs(began - when["stopped"]) <= period + 1, (outage_span, when, period)
    assert abs(ended - when["back"]) <= period + 1, (outage_span, when, period)
    assert abs(node3["down_s"] - OUTAGE_S) <= 2 * period + 2
    window = rounds[-1]["ended_at"] - rounds[0]["started_at"]
    assert node3["availability"] == pytest.approx(1 - node3["down_s"] / window, abs=1e-3)
    for node in ("node1", "node2", "node4"):
        healthy = by_case[f"pytest_cluster/soak.py::test_available[{node}]"]
        assert healthy["outcome"] == "passed" and healthy["down_s"] == 0
    assert run.end is not None and Decimal(run.end["soak"]["credit"]["owed"]) > 0
    assert Decimal(run.end["soak"]["credit"]["owed"]) == sum(
        Decimal(by_case[f"pytest_cluster/soak.py::test_available[{node}]"]["credit"])
        for node in ("node1", "node2", "node3", "node4"))
