"""sim/cluster.py: what a simulated node is (its GPUs, merged faults) and what its host, inventory
and GPU probes answer."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.sections.sim_records import SimFault, SimSpec
from pytest_cluster.probes.gpu_perf import parse_options
from pytest_cluster.sim import round as rounds
from pytest_cluster.sim.cluster import (
    MIN_FACTOR,
    floored,
    gpu_count,
    gpu_perf_payload,
    jitter,
    latency_factor,
    lies,
    link_factor,
    merged,
    node_is_down,
)

SIM = SimSpec("H100-SXM-80GB", 8, faults=(
    SimFault("n1", None, 3, gpus=7),
    SimFault("n2", 2, 4, memory_held_bytes=5 * 2**30, xid=79),
    SimFault("n2", 2, 5, pcie_gen=4),
))


def test_sim_faults_merge_per_gpu_and_node() -> None:
    assert gpu_count(SIM, "n1") == 7
    assert gpu_count(SIM, "n2") == 8
    fault = merged(SIM, "n2", 2)
    assert (fault.memory_held_bytes, fault.xid, fault.pcie_gen) == (5 * 2**30, 79, 4)
    assert merged(SIM, "n2", 3) == SimFault("n2", 3, 0)


def test_sim_numbers_are_deterministic_and_follow_faults() -> None:
    one = gpu_perf_payload(SIM, "n2", parse_options(["--dtypes", "bf16"]))
    two = gpu_perf_payload(SIM, "n2", parse_options(["--dtypes", "bf16"]))
    assert one == two
    assert one["simulated"] is True
    healthy, slow = one["gpus"][1], one["gpus"][2]
    assert 790 <= healthy["matmul"]["bf16"]["tflops_median"] <= 806
    assert slow["h2d"]["bytes_per_s"] == pytest.approx(healthy["h2d"]["bytes_per_s"] / 2,
                                                       rel=0.03)
    assert slow["load"]["pcie_gen_max"] == 4
    held = healthy["usable_memory"]["allocated_bytes"] - slow["usable_memory"][
        "allocated_bytes"]
    assert held == 5 * 2**30
    assert len(one["p2p"]["pairs"]) == 8 * 7


def test_a_fault_is_on_its_node_from_its_round_until_its_repair(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sim = SimSpec("H100-SXM-80GB", 8, faults=(
        SimFault("n2", None, 1, link_factor=0.5, from_round=2, until_round=3),
        SimFault("n3", None, 2, latency_factor=4.0),
        SimFault("n1", None, 3, lies="counters")))
    nodes = ("n1", "n2", "n3")
    seen = {}
    for number in (1, 2, 3, 4):
        monkeypatch.setenv(rounds.ENV, str(number))
        seen[number] = [node for node in nodes if link_factor(sim, node) != 1.0]
    assert seen == {1: [], 2: ["n2"], 3: ["n2"], 4: []}
    assert [node for node in nodes if latency_factor(sim, node) != 1.0] == ["n3"]
    assert {node: lies(sim, node) for node in nodes} == {
        "n1": frozenset({"counters"}), "n2": frozenset(), "n3": frozenset()}


def test_a_factor_is_played_at_no_less_than_a_millionth() -> None:
    sim = SimSpec("H100-SXM-80GB", 8, faults=(SimFault("n1", None, 1, link_factor=1e-300),))
    assert link_factor(sim, "n1") == MIN_FACTOR
    assert floored(0.5) == 0.5


def test_a_down_node_is_the_one_with_the_fault() -> None:
    sim = SimSpec("H100-SXM-80GB", 8, faults=(SimFault("n2", None, 1, down=True),))
    assert [node for node in ("n1", "n2", "n3") if node_is_down(sim, node)] == ["n2"]


def test_jitter_is_the_same_for_the_same_key_and_within_its_spread() -> None:
    assert jitter("n1", 8) == jitter("n1", 8)
    factors = [jitter("n1", size, spread=0.05) for size in range(200)]
    assert all(0.95 <= factor <= 1.05 for factor in factors)
    assert len(set(factors)) > 1
