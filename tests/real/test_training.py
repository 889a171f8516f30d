"""Real components (network namespaces with sshd, SLURM) for tests/measure/test_training.py:
the same checks on real parts; its unit tests stay there."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
from typing import Any

import pytest
from markupsafe import escape

from tests.conftest import has_torch
from tests.measure.test_training import (
    TRAINING_ON_NETNS,
    _stop_at_start,
    _stop_at_step,
    _train_rank,
)
from tests.netns_cluster import NetnsCluster
from tests.test_oracle import run_and_check
from tests.test_plugin import jsonl


@pytest.mark.realcomponents
def test_ddp_trains_across_the_namespace_nodes_through_ssh(
        pytester: pytest.Pytester, netns: NetnsCluster) -> None:
    if not has_torch():
        pytest.skip("needs torch on the nodes")
    (pytester.path / "t.yaml").write_text(
        f"cluster:\n  name: train\n  nodes: node[1-4]\n  launcher: ssh\n"
        f"  python: {sys.executable}\n{netns.launcher_section('ssh')}\n"
        "training:\n  steps: 10\n  step_time: '<= 60 s'\n  tokens_per_s: '>= 10'\n")
    # four "nodes" share this machine's two cores: their step times jitter too much for
    # the default spread bound (measured 63 %), which is left out here
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k",
                                "training_steps or training_throughput")
    result.assert_outcomes(passed=2)
    (steps,) = [r for r in jsonl(pytester) if r.get("clause") == "training.step_time"]
    assert steps["raw"]["nodes"] == "node[1-4]"
    assert len(steps["raw"]["step_s"]) == 10


@pytest.mark.realcomponents
def test_a_stopped_rank_is_named_and_the_job_ends_at_the_bound(
        pytester: pytest.Pytester, netns: NetnsCluster) -> None:
    """node3's rank SIGSTOPped at step 8: the case names node3 rank 2 (not the ranks that
    wait for it), and the job ends at the 8 s bound plus the stall check, far before the
    5 min training.timeout: node3's own node kills the silent rank."""
    if not has_torch():
        pytest.skip("needs torch on the nodes")
    bound = 8
    (pytester.path / "t.yaml").write_text(TRAINING_ON_NETNS.format(
        python=sys.executable, section=netns.launcher_section("ssh"), steps=60, bound=bound))
    stopped: dict[str, Any] = {}
    stopper = threading.Thread(target=_stop_at_step, args=(netns, "node3", 8, stopped))
    stopper.start()
    try:
        result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k",
                                    "training_steps")
        ended = time.monotonic()
    finally:
        stopper.join()
        if stopped and _train_rank(netns, "node3") == stopped["pid"]:
            os.kill(stopped["pid"], signal.SIGKILL)
    assert stopped, "node3's rank never reached step 8"
    result.assert_outcomes(failed=1)
    (record,) = [r for r in jsonl(pytester) if r.get("type") == "result"]
    message = record["message"]
    # stopped once it had begun step 8: it may have gone on a step before SIGSTOP landed
    stuck = re.search(r"node3 rank 2: stuck at step (\d+) \(", message)
    assert stuck is not None and int(stuck[1]) >= 8, message
    assert ", no sign of life for " in message and ": stopped or frozen; " in message
    assert "ranks 0, 1, 3 wait for it in " in message
    assert not any(f"{node} rank" in message for node in ("node1", "node2", "node4"))
    assert _train_rank(netns, "node3") is None  # killed by its node, not left stopped
    # the bound (8 s), the stall check's (8 s after the last beat) and the run's end;
    # training.timeout is 300 s
    assert ended - stopped["at"] < bound + 10, ended - stopped["at"]


@pytest.mark.realcomponents
def test_a_killed_rank_rejects_its_own_node_and_no_other(
        pytester: pytest.Pytester, netns: NetnsCluster) -> None:
    """node3's rank SIGKILLed at step 3: node3 fails training.ranks saying the signal (its
    rank did not finish its steps), so the verdict rejects it; the nodes whose ranks were
    ended with the job pass theirs and are accepted; the cluster case names node3 rank 2
    killed by SIGKILL, not a line of its stderr. Every view says so alike (the oracle)."""
    if not has_torch():
        pytest.skip("needs torch on the nodes")
    spec = TRAINING_ON_NETNS.format(python=sys.executable,
                                    section=netns.launcher_section("ssh"), steps=20, bound=8)
    killed: dict[str, Any] = {}
    killer = threading.Thread(target=_stop_at_step,
                              args=(netns, "node3", 3, killed, signal.SIGKILL))
    killer.start()
    try:
        disagree = run_and_check(pytester, spec, "-k", "training_steps or training_ranks")
    finally:
        killer.join()
    assert killed, "node3's rank never reached step 3"
    assert disagree == []
    records = [r for r in jsonl(pytester) if r.get("type") == "result"]
    assert sorted(r["outcome"] for r in records) == ["failed"] * 2 + ["passed"] * 3
    (steps,) = [r for r in records if r.get("clause") == "training.step_time"]
    assert "node3 rank 2 was killed by SIGKILL (signal 9)" in steps["message"], steps
    ranks = {r["node"]: r for r in records if r.get("clause") == "training.ranks"}
    assert {n for n, r in ranks.items() if r["outcome"] == "failed"} == {"node3"}, ranks
    assert re.search(r"node3 ranks: rank 2 was killed by SIGKILL \(signal 9\) at step \d+ "
                     r"\(\w+\) of 23; it did not finish its steps", ranks["node3"]["message"])
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    assert {n["node"]: n["verdict"] for n in verdict["nodes"]} == {
        "node1": "ACCEPTED", "node2": "ACCEPTED", "node3": "REJECTED", "node4": "ACCEPTED"}


@pytest.mark.realcomponents
def test_a_rank_stopped_before_its_first_step_is_named_and_its_node_rejected(
        pytester: pytest.Pytester, netns: NetnsCluster) -> None:
    """node3's rank SIGSTOPped as it starts (before torch is even imported): it is known
    from its start, so its node kills it for its silence and names it; the other ranks'
    rendezvous ends at the start bound, not at the store's 120 s timeout; the job ends
    within the bound + 15 s (training.timeout is 300 s). Only node3 fails training.ranks,
    with the silence measured; no healthy node is blamed."""
    if not has_torch():
        pytest.skip("needs torch on the nodes")
    bound = 8
    (pytester.path / "t.yaml").write_text(TRAINING_ON_NETNS.format(
        python=sys.executable, section=netns.launcher_section("ssh"), steps=20, bound=bound))
    stopped: dict[str, Any] = {}
    stopper = threading.Thread(target=_stop_at_start, args=(netns, "node3", stopped))
    stopper.start()
    try:
        result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k",
                                    "training_steps or training_ranks")
        ended = time.monotonic()
    finally:
        stopper.join()
        if stopped and _train_rank(netns, "node3") == stopped["pid"]:
            os.kill(stopped["pid"], signal.SIGKILL)
    assert stopped and stopped["step"] == -1, stopped
    result.assert_outcomes(passed=3, failed=2)
    records = [r for r in jsonl(pytester) if r.get("type") == "result"]
    (steps,) = [r for r in records if r.get("clause") == "training.step_time"]
    message = steps["message"]
    assert "node3 rank 2: stuck at " in message and "(before its first step)" in message
    assert ": stopped or frozen; " in message, message
    assert not any(f"{node} rank" in message for node in ("node1", "node2", "node4"))
    assert "DistStoreError" not in message and "wait timeout" not in message
    ranks = {r["node"]: r for r in records if r.get("clause") == "training.ranks"}
    assert {n for n, r in ranks.items() if r["outcome"] == "failed"} == {"node3"}, ranks
    assert ranks["node3"]["measured_base"] > bound
    assert _train_rank(netns, "node3") is None
    took = ended - stopped["at"]
    print(f"frozen before its first step: the job ended {took:.1f} s after the SIGSTOP; "
          f"node3's silence measured {ranks['node3']['measured_base']:.1f} s")
    assert took < bound + 15, took


@pytest.mark.realcomponents
def test_a_slow_link_names_its_node(pytester: pytest.Pytester, netns: NetnsCluster) -> None:
    """node4's link shaped to 20 Mbit/s both ways: the steps slow down on every rank alike
    (the ring all-reduce), and the link probe's pairwise exchanges name node4."""
    if not has_torch():
        pytest.skip("needs torch on the nodes")
    (pytester.path / "t.yaml").write_text(TRAINING_ON_NETNS.format(
        python=sys.executable, section=netns.launcher_section("ssh"), steps=4, bound=60))
    try:
        netns.shape("node4", "20mbit")
        result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k",
                                    "training_steps")
    finally:
        netns.shape("node4", None)
    result.assert_outcomes(passed=1)
    (record,) = [r for r in jsonl(pytester) if r.get("type") == "result"]
    slowest = record["raw"]["slowest"]
    # the straggler is said where a reader looks: the terminal, the report, JUnit
    result.stdout.fnmatch_lines([f"found: training.step_time: {slowest[:40]}*"])
    run_dir = pytester.path / "reports" / "latest"
    # escaped as the report's templates escape (markupsafe: ' is &#39;)
    assert str(escape(f"found: training.step_time: {slowest[:40]}")) in (
        run_dir / "report.html").read_text(encoding="utf-8")
    assert 'name="finding"' in (run_dir / "junit.xml").read_text(encoding="utf-8")
    assert "node4's link is the slowest: exchanging 1 MiB each way with a rank on " \
           "another node takes " in slowest, slowest
    assert not any(node in slowest for node in ("node1", "node2", "node3")), slowest

