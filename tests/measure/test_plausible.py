"""A node's facts and figures are claims: a fact outside the range any machine has (1e308
cores, a NIC counter of -5) or a figure above the physical ceiling the spec implies (a
busbw over its links' theoretical rate, a round trip shorter than any wire's) is bad
output of the node that claimed it, naming the field, the value and the range; the figure
never enters a median (measure/plausible.py declares them once)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.model import InterconnectSpec
from pytest_cluster.contract.sections.sim_records import SimSpec
from pytest_cluster.measure import plausible, stragglers
from pytest_cluster.measure.network import fabric, latency, node_search
from pytest_cluster.sim import answers as sim_answers
from pytest_cluster.sim import cluster as sim_cluster
from pytest_cluster.sim import collectives

SIM_HOST = """\
cluster: {{name: facts, nodes: "n[1-2]", launcher: sim}}
host: {{cpu_cores: ">= 1", cpu_threads: ">= 1"}}
sim: {{cpu_cores: {cores}, cpu_threads: {threads}}}
"""


def results(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    lines = (pytester.path / "reports" / "latest" / "results.jsonl").read_text().splitlines()
    return {r["nodeid"].split("::")[1]: r for r in map(json.loads, lines)
            if r.get("type") == "result"}


def test_every_range_is_of_a_declared_clause_and_holds_what_it_bounds() -> None:
    for family, limit in plausible.FACTS.items():
        assert declared(family).is_clause, family
        assert limit.low <= limit.high and limit.holds(limit.low) and limit.holds(limit.high)
        assert not limit.holds(limit.high * 2 + 1) and not limit.holds(float("nan"))


def test_implausible_cores_fail_as_bad_output_naming_field_value_and_range(
        pytester: pytest.Pytester) -> None:
    """A node reporting more cores than any machine has fails host.cpu_cores as bad
    output; a plausible fact of the same node (its threads) is judged as ever."""
    cores = int(plausible.FACTS["host.cpu_cores"].high) * 10
    (pytester.path / "t.yaml").write_text(SIM_HOST.format(cores=cores, threads=8))
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
    found = results(pytester)
    for node in ("n1", "n2"):
        record = found[f"test_cpu_cores[{node}]"]
        assert record["outcome"] == "failed" and record["error_kind"] == "bad_output"
        limit = plausible.FACTS["host.cpu_cores"]
        assert f"cpu.cores = {cores}" in record["message"], record["message"]
        assert limit.shown() in record["message"]
        assert "measured_base" not in record  # never compared, never written as a figure
        assert found[f"test_cpu_threads[{node}]"]["outcome"] == "passed"


@pytest.mark.parametrize(("counters", "said"), [
    ({"link_downed": -5}, "counters.link_downed = -5"),
    ({"port_rcv_errors": 1e30}, "counters.port_rcv_errors = 1e+30"),
    ({"symbol_error": 2.5}, "counters.symbol_error = 2.5"),
])
def test_a_nic_counter_no_port_has_is_bad_output_not_a_count(
        counters: dict[str, Any], said: str) -> None:
    port = {"name": "mlx5_0/1", "kind": "rdma", "counters": counters}
    with pytest.raises(ValueError, match="mlx5_0/1") as caught:
        fabric.ports_of({"ports": [port]})
    assert said in str(caught.value) and plausible.COUNTER.shown() in str(caught.value)


@pytest.mark.parametrize(("field", "value"), [("rate_gbit", 1e9), ("rate_gbit", -400),
                                              ("mtu", 3)])
def test_a_port_rate_or_mtu_no_port_has_is_bad_output(field: str, value: float) -> None:
    port = {"name": "eth0", "kind": "net", field: value}
    with pytest.raises(ValueError, match=f"eth0.*{field} = "):
        fabric.ports_of({"ports": [port]})
    assert fabric.ports_of({"ports": [{"name": "eth0", "rate_gbit": 400, "mtu": 9000,
                                       "counters": {"rx_errors": 0}}]})


def _rank(rank: int, peer: int, rtt: float) -> dict[str, Any]:
    return {"rank": rank, "pairs": [{"peer": peer, "sizes": {"8": {"typical_rtt_s": rtt}}}]}


def test_a_round_trip_shorter_than_any_wire_is_the_reporting_node_s_bad_output() -> None:
    """n1 reports its pair with n2 at 1 ns: left out of every median, n1 named; n3's
    honest figure kept."""
    refused: dict[str, str] = {}
    links = latency.links_of(["n1", "n2", "n3", "n4"],
                             [_rank(0, 1, 1e-9), _rank(2, 3, 20e-6)], refused)
    assert links == [("n3", "n4", 8, 10e-6)]
    assert list(refused) == ["n1"] and "0.001 us" in refused["n1"]
    assert f"{plausible.MIN_ROUND_TRIP_S * 1e6:g} us" in refused["n1"]


BUSBW = """\
cluster: {name: ceiling, nodes: "n[1-2]", launcher: sim}
interconnect:
  intra_node: {kind: nvlink, rate: 450 GB/s}
  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}
  payloads: [1 GiB]
  node_counts: [2]
  node_network: false
  ranks_per_node: 8
  backend: nccl
  busbw: ">= 50%"
sim: {gpu_model: H100-SXM-80GB, gpus_per_node: 8}
"""
def test_a_busbw_above_the_links_theoretical_rate_is_bad_output_of_its_node(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """n2 claims 10 x NVLink's 450 GB/s inside it: its case fails as bad output naming the
    theoretical rate and the ceiling; n1's honest figure passes."""
    honest = collectives.intra_peak

    def claimed(sim: SimSpec, spec: InterconnectSpec | None, node: str) -> float:
        return honest(sim, spec, node) * (10 if node == "n2" else 1)

    monkeypatch.setattr(collectives, "intra_peak", claimed)
    (pytester.path / "t.yaml").write_text(BUSBW)
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
    found = results(pytester)
    liar = found["test_collective_intra_node[n2-all_reduce-1GiB]"]
    assert liar["outcome"] == "failed" and liar["error_kind"] == "bad_output"
    assert "the theoretical nvlink 450 GB/s" in liar["message"], liar["message"]
    assert f"physical ceiling of {plausible.CEILING_FACTOR:g} x" in liar["message"]
    assert found["test_collective_intra_node[n1-all_reduce-1GiB]"]["outcome"] == "passed"


def test_a_pair_above_the_ceiling_clears_no_one_and_the_node_claiming_it_is_named() -> None:
    """Every group n5 is in claims 1e6 (the links carry 500 at most): its first-round
    partner is cleared with a known-good node, and n5, claiming it again with one, is
    bad output (IMPLAUSIBLE), never OK; the honest nodes pass on their own figures."""
    nodes = [f"n{i}" for i in range(8)]

    def measure(groups: list[list[str]]) -> list[float]:
        return [1e6 if "n5" in group else 100.0 for group in groups]

    search = node_search.find_slow_nodes(nodes, measure, bar=80.0, ceiling=500.0)
    liar = search.verdicts["n5"]
    assert liar.status == node_search.IMPLAUSIBLE and "above the physical ceiling" in liar.why
    assert all(v.ok and v.busbw == 100.0 for n, v in search.verdicts.items() if n != "n5")


def test_a_straggler_s_medians_are_over_plausible_times_only() -> None:
    """A rank reporting forward passes of -5 s and 1e300 s among its steps, and an
    exchange of -1 s: its medians are of the times a step can take."""
    times = stragglers.RankTimes.of("n1", 0, {
        "forward_s": [-5.0, 1e300, 0.1, 0.3, 0.2], "wait_s": [0.01, -1e9],
        "link": {"exchange_s": {"1": 0.5, "2": -1.0}}})
    assert (times.forward_s, times.wait_s, dict(times.exchange_s)) == (0.2, 0.01, {1: 0.5})


GPU_PEAKS = """\
cluster: {name: peaks, nodes: "n[1-2]", launcher: sim}
gpus:
  count: 1
  model: H100-SXM-80GB
  matmul: {bf16: ">= 500 TFLOPS"}
  memory_bandwidth: ">= 2 TB/s"
  nvlink: false
sim: {gpu_model: H100-SXM-80GB, gpus_per_node: 1}
"""


def test_a_gpu_figure_above_twice_its_model_s_peak_is_bad_output(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """n2's GPU claims 10 x H100's HBM3 peak and matmul: both cases fail as bad output
    naming the published figure; n1's honest ones pass."""
    honest = sim_cluster.gpu_perf_payload  # what sim/answers.py calls, by its own name

    def claimed(sim: SimSpec, node: str, options: Any) -> Any:
        payload = honest(sim, node, options)
        for gpu in payload["gpus"] if node == "n2" else ():
            gpu["copy"]["bytes_per_s"] *= 10
            gpu["matmul"]["bf16"]["tflops_median"] *= 10
        return payload

    monkeypatch.setattr(sim_answers, "gpu_perf_payload", claimed)
    (pytester.path / "t.yaml").write_text(GPU_PEAKS)
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
    found = results(pytester)
    for case in ("test_gpu_memory_bandwidth", "test_gpu_matmul"):
        (liar,) = [r for n, r in found.items() if n.startswith(f"{case}[n2")]
        assert liar["outcome"] == "failed" and liar["error_kind"] == "bad_output", liar
        assert "above the physical ceiling" in liar["message"], liar["message"]
        (honest_case,) = [r for n, r in found.items() if n.startswith(f"{case}[n1")]
        assert honest_case["outcome"] == "passed", honest_case["message"]


def test_a_job_of_several_nodes_above_the_ceiling_is_undecided_blaming_none(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The 2-node all_reduce claims 10 x what 8 NICs of 400 Gb/s carry: its figure names
    no node, so its case fails undecided (never a pass, never a node's blame)."""
    honest = collectives.intra_peak

    def claimed(sim: SimSpec, spec: InterconnectSpec | None, node: str) -> float:
        return honest(sim, spec, node) * 20

    monkeypatch.setattr(collectives, "intra_peak", claimed)
    monkeypatch.setattr(collectives, "INTER_EFFICIENCY", 20.0)
    (pytester.path / "t.yaml").write_text(BUSBW)
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
    across = results(pytester)["test_collective_inter_node[all_reduce-1GiB-2nodes]"]
    assert across["outcome"] == "failed" and across["error_kind"] == "undecided", across
    assert "above the physical ceiling" in across["message"]


RAILS = """\
cluster: {name: rails, nodes: "n[1-4]", launcher: sim}
fabric: {rail_busbw: 40 GB/s}
interconnect:
  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}
  payloads: [1 GiB]
  busbw: ">= 80%"
  node_network: false
sim: {faults: []}
"""


def test_a_rail_above_its_line_rate_clears_no_node(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every rail's jobs claim 20 x what a 400 Gb/s port carries: no pair clears, so no
    node passes fabric.rail_busbw on figures no NIC gives."""
    monkeypatch.setattr(collectives, "INTER_EFFICIENCY", 20.0)
    (pytester.path / "t.yaml").write_text(RAILS)
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k", "rail_busbw")
    lines = [r for r in results(pytester).values() if r.get("clause") == "fabric.rail_busbw"]
    assert len(lines) == 4 and all(r["outcome"] == "failed" for r in lines), lines
    assert all("measured_base" not in r for r in lines)
