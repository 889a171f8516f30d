"""Interconnect: the spec section, the simulated cluster's answers to benchmark jobs, and
the busbw and latency cases they decide (the slow-node search's own tests:
tests/measure/network/test_node_search.py; the ping-pong's:
tests/measure/network/test_latency.py)."""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.loader import parse_spec
from pytest_cluster.contract.model import InterconnectSpec
from pytest_cluster.contract.sections.busbw import bus_factor
from pytest_cluster.errors import SpecError
from pytest_cluster.evidence.sinks.results import ResultLine
from pytest_cluster.hostlist import expand_hostlist
from pytest_cluster.launchers import sim as sim_launcher
from pytest_cluster.launchers.jobs import JobSpec, node_call, run_job
from pytest_cluster.launchers.local import LocalLauncher
from pytest_cluster.launchers.process import INTERRUPTED_MESSAGE
from pytest_cluster.launchers.result import ErrorKind, ProbeResult
from pytest_cluster.launchers.sim import SimLauncher
from pytest_cluster.measure.network.benchmark import collective_job, run_collective
from pytest_cluster.probes import ProbeCall
from pytest_cluster.probes.jobs import JOB_PROGRAMS, pingpong
from pytest_cluster.report.plots import interconnect_charts, nice_step
from pytest_cluster.sim import answers as sim_answers
from pytest_cluster.sim.cluster import jitter
from pytest_cluster.sim.job_node import NodePart, Rendezvous, read_node_call
from pytest_cluster.units import size_id
from tests.conftest import faulted, has_torch, on_nodes, planned
from tests.netns_cluster import NetnsCluster

H100 = """\
cluster: {name: x, nodes: 'n[1-4]'}
gpus: {count: 8}
interconnect:
  intra_node: {kind: nvlink, rate: 450 GB/s}
  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}
  collectives: [all_reduce, all_gather]
  payloads: [16 GiB, 4 GiB]
  node_counts: [1, 2, 4, 8, 16]
  busbw: ">= 80%"
"""


def ic(text: str = H100) -> InterconnectSpec:
    spec = parse_spec(text, "t.yaml").interconnect
    assert spec is not None
    return spec


def error_of(text: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "t.yaml")
    return str(info.value)


def test_the_spec_section_and_its_defaults() -> None:
    spec = ic()
    assert (spec.ranks_per_node, spec.backend) == (8, "nccl")  # from gpus: one rank per GPU
    assert spec.payloads == (4 * 2**30, 16 * 2**30)
    assert (spec.node_counts, spec.node_counts_dropped) == ((2, 4), (8, 16))
    assert spec.collectives == ("all_reduce", "all_gather")
    assert [(c.key, c.requirement.bound.value, c.line) for c in spec.busbw] == [
        (f"interconnect.busbw[{scope}]", 0.8, 9)
        for scope in ("intra_node", "inter_node", "node_network")]
    assert spec.sweep()[:3] == (2**20, 4 * 2**20, 16 * 2**20)
    assert spec.sweep()[-2:] == (4 * 2**30, 16 * 2**30)
    assert spec.search_payload == 4 * 2**30
    assert [size_id(s) for s in (4 * 2**30, 2**20, 3072, 1536)] == [
        "4GiB", "1MiB", "3KiB", "1536B"]


@pytest.mark.parametrize(("change", "message"), [
    (("  payloads: [16 GiB, 4 GiB]\n", ""),
     "t.yaml:4: interconnect.payloads: missing: the payload sizes the contract names, e.g. "
     "payloads: [4 GiB, 16 GiB] (busbw depends on the size)"),
    (("[all_reduce, all_gather]", "[all_gather]"),
     "t.yaml:6: interconnect.collectives: all_reduce is required (the others are optional)"),
    (("[all_reduce, all_gather]", "[allreduce]"),
     "t.yaml:6: interconnect.collectives[0]: expected one of all_reduce, all_gather, "
     "reduce_scatter, alltoall, got 'allreduce'"),
    (("16 GiB, 4 GiB", "16 GiB, lots"),
     "t.yaml:7: interconnect.payloads[1]: expected a size like '1.5 TiB', got 'lots'"),
    (('">= 80%"', '">= 80 Gb"'),
     "t.yaml:9: interconnect.busbw: expected a share of theoretical like '>= 80%' or a bus "
     "bandwidth like '>= 360 GB/s', got '>= 80 Gb'"),
    (("  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}\n", ""),
     "t.yaml:4: interconnect.inter_node: missing: a share of theoretical needs the network's "
     "rate (inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}), or "
     "give busbw as a rate"),
    (("rate_per_nic: 400 Gb/s", "rate: 400 Gb/s"),
     "t.yaml: 2 problems in the spec:\n  t.yaml:5: interconnect.inter_node.rate_per_nic: "
     "missing: the link's rate, e.g. 400 Gb/s\n  t.yaml:5: interconnect.inter_node.rate: "
     "unknown key (known keys: kind, nics_per_node, rate_per_nic)"),
    (("nodes: 'n[1-4]'}\ngpus: {count: 8}", "nodes: n1}\ngpus: {count: 1}"),
     "t.yaml:4: interconnect.ranks_per_node: nothing to measure: one node with one rank has "
     "no one to talk to; set ranks_per_node to 2 or more (one per GPU), or test several "
     "nodes"),
    (("  busbw: \">= 80%\"\n", "  busbw: \">= 80%\"\n  timeout: 2 s\n"),
     "t.yaml:10: interconnect.timeout: expected a time from 10 s to 24 h, got '2 s'"),
])
def test_bad_interconnect_sections_are_named(change: tuple[str, str], message: str) -> None:
    assert error_of(H100.replace(*change)) == message


def record(node: str, count: int, measured: float, required: float) -> ResultLine:
    return {"spec_key": "interconnect.busbw[inter_node]", "collective": "all_reduce",
            "payload": 2**30, "node_count": count, "node": node,
            "derivation": "nvlink 450 GB/s" if count == 1 else "ib 8 x 400 Gb/s",
            "measured_base": measured, "required_base": required,
            "raw": {"sweep": [[2**20, measured / 4], [2**30, measured]]}}


def test_charts_show_busbw_over_payloads_and_node_counts() -> None:
    records: list[ResultLine] = [record("node1", 1, 400e9, 360e9), record("node2", 1, 300e9, 360e9),
               record("2 nodes (a..b)", 2, 350e9, 320e9),
               record("4 nodes (a..d)", 4, 330e9, 320e9),
               {"spec_key": "host.memory", "measured_base": 1.0}]
    text = interconnect_charts(records)
    root = ElementTree.fromstring(f"<div>{text}</div>")  # well-formed markup
    svgs = root.findall(".//{http://www.w3.org/2000/svg}svg")
    assert [s.get("aria-label") for s in svgs] == [
        "all_reduce: busbw vs payload",
        "all_reduce: busbw vs node count (1 node: the slowest, node2)"]
    payload_chart, count_chart = (ElementTree.tostring(s, encoding="unicode") for s in svgs)
    assert payload_chart.count("<ns0:polyline") == 4  # one line per benchmark run
    assert "required 360 GB/s (1 node)" in payload_chart
    assert "required 320 GB/s" in payload_chart
    assert count_chart.count("<ns0:polyline") == 1
    assert "1 GiB: 1 300" in count_chart  # at 1 node the slowest node's 300 GB/s
    assert "<li>Theoretical busbw in one node: nvlink 450 GB/s</li><li>Theoretical busbw " \
        "across nodes: ib 8 x 400 Gb/s</li>" in text
    assert interconnect_charts([{"spec_key": "host.memory"}]) == ""
    assert [nice_step(v) for v in (1.456, 9.0, 360.0, 0.0)] == [0.5, 2.0, 100.0, 0.2]


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

# -- the simulated cluster answers benchmark jobs as real nodes do --------------------------

SIM = """\
cluster: {{name: s, nodes: 'n[1-3]', launcher: sim}}
interconnect:
  intra_node: {{kind: nvlink, rate: 450 GB/s}}
  inter_node: {{kind: infiniband, nics_per_node: 1, rate_per_nic: 400 Gb/s}}
  payloads: [1 MiB]
  ranks_per_node: 2
  iterations: 2
  busbw: ">= 80%"
  backend: {backend}
sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 2
  faults: [{{node: n3, gpus: 1}}, {{node: n2, down: true}}]
"""


def sim_cluster(backend: str = "gloo") -> tuple[SimLauncher, InterconnectSpec]:
    spec = parse_spec(SIM.format(backend=backend), "t.yaml")
    assert spec.interconnect is not None
    launcher = SimLauncher.from_spec(spec)
    assert isinstance(launcher, SimLauncher)
    return launcher, spec.interconnect


def test_a_simulated_node_says_where_it_is() -> None:
    launcher, _ = sim_cluster()
    result = launcher.run(ProbeCall("job_node", ("--whereami",)), ["n1"], 10)["n1"]
    assert result.simulated and result.data == {"addresses": ["n1"], "hostname": "n1"}
    assert launcher.master_address("n1", 10) == "n1"


def test_a_simulated_node_answers_its_part_of_a_benchmark_job() -> None:
    """The job_node call jobs.run_job sends: every rank's output as the collective probe
    prints it, times from the sim's links (NVLink 450 GB/s x 0.82, latency-bound at
    1 MiB, the job's own jitter)."""
    launcher, spec = sim_cluster()
    job = collective_job(spec, "all_reduce", ["n1"], [2**20])
    result = launcher.run(node_call(job, "n1", 29999, 0), ["n1"], 30)["n1"]
    sizes = [{"bytes": 2**20, "time_s": 9.463021336950564e-05,
              "iteration_s": [9.359598928778236e-05, 9.59798070661608e-05], "wrong": 0}]
    assert result.ok and result.simulated
    assert result.data == {"ranks": [
        {"rank": rank, "local_rank": rank, "exit_code": 0, "ended_at": None, "stderr_tail": "",
         "data": {"rank": rank, "world": 2, "backend": "gloo", "collective": "all_reduce",
                  "sizes": sizes, "simulated": True,
                  "gloo": {"interface": "eno1", "address": "10.0.0.1"}}} for rank in (0, 1)],
        "killed_because": "", "gloo_socket_ifname": None}
    busbw = 450e9 * 0.82 * 2**20 / (2**20 + 32 * 2**20) * jitter(["n1"], "all_reduce", 2**20)
    assert sizes[0]["time_s"] == 2**20 * bus_factor("all_reduce", 2) / busbw


def test_a_simulated_job_waits_for_its_nodes_at_the_rendezvous() -> None:
    """n2 does not answer: n1 waits for it at the rendezvous until the init timeout, then
    its ranks fail as torch's would; the job says both."""
    launcher, spec = sim_cluster()
    job = replace(collective_job(spec, "all_reduce", ["n1", "n2"], [2**20]),
                  init_timeout_s=0.3, master_addr="n1", master_port=29999)
    result = run_job(launcher, job)
    assert result.simulated and not result.ok
    assert result.errors == ("n2: n2: job_node probe unreachable: simulated: the node does "
                             "not answer (sim fault at spec line 13)",)
    assert [(r.rank, r.exit_code, r.stderr_tail) for r in result.ranks] == [
        (rank, 1, "simulated: the rendezvous at n1:29999 timed out after 0.3 s with 1 of 2 "
                  "node(s)") for rank in (0, 1)]


def test_ctrl_c_ends_a_simulated_job_waiting_for_its_nodes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted (Ctrl-C, SIGTERM), a part waiting at the rendezvous stops at once and is
    cancelled, as a real node's ranks are stopped (an init timeout of an hour: a hang
    otherwise)."""
    launcher, spec = sim_cluster()
    monkeypatch.setattr(sim_launcher, "interrupted", lambda: True)
    job = replace(collective_job(spec, "all_reduce", ["n1", "n3"], [2**20]),
                  init_timeout_s=3600)
    result = launcher.run(node_call(job, "n1", 29999, 0), ["n1"], 30)["n1"]
    assert (result.error, result.message) == (ErrorKind.CANCELLED, INTERRUPTED_MESSAGE)


def test_the_sim_runs_no_program_but_the_benchmarks() -> None:
    launcher, _ = sim_cluster()
    result = run_job(launcher, JobSpec(("n1",), "print(1)", master_port=29999))
    played = ", ".join(f"probes/{name}.py" for name in sim_answers.JOBS)
    assert result.errors == ("n1: n1: job_node probe crashed: the sim launcher simulates no "
                             f"job but these rank programs: {played}",)
    assert set(sim_answers.JOBS) <= set(JOB_PROGRAMS)  # each a program of ours


def test_the_sim_reads_every_part_of_a_job_as_jobs_sends_it() -> None:
    job = JobSpec(("a", "b"), "print('hi')\n", ranks_per_node=4, args=("--sizes", "1,2"),
                  init_timeout_s=30, wall_timeout_s=90)
    assert read_node_call(node_call(job, "a", 29600, 1).args) == NodePart(
        "a", 29600, 1, 2, 4, 30.0, 90.0, "print('hi')\n", ("--sizes", "1,2"))
    assert read_node_call(("--whereami",)) is None
    railed = JobSpec(("a", "b"), "print('hi')\n", env=(("NCCL_IB_HCA", "=mlx5_3:1"),))
    part = read_node_call(node_call(railed, "a", 29600, 0).args)
    assert part is not None and part.env == (("NCCL_IB_HCA", "=mlx5_3:1"),)
    with pytest.raises(ValueError, match="node rank 2 of 2 node"):
        read_node_call(node_call(job, "a", 29600, 2).args)


def test_the_parts_of_a_job_meet_and_one_answers_for_all() -> None:
    rendezvous: Rendezvous[str] = Rendezvous()
    asked: list[tuple[str, ...]] = []

    def answer(nodes: tuple[str, ...]) -> list[str]:
        asked.append(nodes)
        return [f"share of {node}" for node in nodes]

    def part(rank: int) -> NodePart:
        return NodePart("m", 1, rank, 3, 1, 30.0, 60.0, "", ())

    with ThreadPoolExecutor(3) as pool:
        shares = list(pool.map(lambda i: rendezvous.join(part(i), f"n{i}", answer,
                                                         lambda: False), [2, 0, 1]))
    assert shares == ["share of n2", "share of n0", "share of n1"]
    assert asked == [("n0", "n1", "n2")]  # once, in rank order
    assert rendezvous.join(part(0), "n0", answer, lambda: True) == (
        "simulated: the rendezvous at m:1 timed out after 30 s with 1 of 3 node(s)")


@pytest.mark.slow
def test_the_simulated_64_node_example_names_its_slow_and_dead_nodes(
        pytester: pytest.Pytester) -> None:
    """sim-gpu-37's network at half rate, sim-gpu-50 down; every result SIMULATED."""
    result = pytester.runpytest(f"--cluster={EXAMPLES / 'sim-h100-64.yaml'}",
                                "-p", "no:cacheprovider")
    records = jsonl(pytester)
    failed = {r["nodeid"].split("::")[1]: r["message"] for r in records
              if r["outcome"] == "failed"}
    failing = [
        "test_collective_inter_node[all_reduce-16GiB-64nodes]",
        "test_collective_inter_node[all_reduce-4GiB-64nodes]",
        "test_collective_intra_node[sim-gpu-50-all_reduce-16GiB]",
        "test_collective_intra_node[sim-gpu-50-all_reduce-4GiB]",
        "test_node_network[sim-gpu-37]", "test_node_network[sim-gpu-50]",
        # not established while sim-gpu-50 does not answer
        *(f"test_software_same_on_all_nodes[{p}]"
          for p in declared("host.same_software").members)]
    assert sorted(failed) == sorted(failing)
    every = planned(pytester, (EXAMPLES / "sim-h100-64.yaml").read_text())
    result.assert_outcomes(failed=len(failing), passed=len(every) - len(failing))
    assert all(m.startswith("Failed: [SIMULATED] ") for m in failed.values())
    assert all(r["simulated"] is True for r in records)
    assert "all_reduce 4 GiB with sim-gpu-01 (round 2 of 2 of the slow-node search)" in (
        failed["test_node_network[sim-gpu-37]"])
    # measured over the 63 nodes that answer, sim-gpu-37 slows them: a failure measured
    sixty_four = failed["test_collective_inter_node[all_reduce-4GiB-64nodes]"]
    assert "busbw[inter_node]: measured " in sixty_four
    assert ("; measured over 63 of 64 nodes (sim-gpu-50 did not answer: host probe "
            "unreachable: simulated: the node does not answer (sim fault at spec line 26)); "
            "all_reduce 4 GiB over 63 node(s)") in sixty_four
    assert "error_kind" not in next(
        r for r in records if r["nodeid"].endswith("[all_reduce-4GiB-64nodes]"))
    assert failed["test_node_network[sim-gpu-50]"] == (
        "Failed: [SIMULATED] sim-gpu-50: host probe unreachable: simulated: the node does not "
        "answer (sim fault at spec line 26)")
    html = (pytester.path / "reports" / "latest" / "report.html").read_text()
    slowest = min((r for r in records if r["clause"] == "interconnect.busbw[intra_node]"
                   and "measured_base" in r), key=lambda r: r["measured_base"])["node"]
    assert "all_reduce: busbw vs node count (1 node: the slowest" in html
    assert f"{slowest} (slowest node)" in html


SLOW_GPU = """\
cluster: {name: slowgpu, nodes: "n[1-2]", launcher: sim}
interconnect:
  intra_node: {kind: nvlink, rate: 450 GB/s}
  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}
  payloads: [1 GiB]
  node_counts: [2]
  node_network: false
  ranks_per_node: 8
  backend: nccl
  busbw: ">= 80%"
sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 8
  faults: [{node: n2, gpu: 5, bandwidth_factor: 0.8}, {node: n2, link_factor: 0.5}]
"""


def test_the_slowest_rank_is_the_one_on_the_slow_gpu_or_node(
        pytester: pytest.Pytester) -> None:
    """n2's GPU 5 copies at 80 %: inside n2 its rank (5, one rank per GPU) is the slowest,
    named with its GPU; n2's network at half rate: across nodes a rank of n2 is. Inside
    the healthy n1 no rank is slower than the others: none is named."""
    (pytester.path / "t.yaml").write_text(SLOW_GPU)
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
    by_case = {r["nodeid"].split("::")[1]: r for r in jsonl(pytester)}
    slow = by_case["test_collective_intra_node[n2-all_reduce-1GiB]"]
    assert slow["outcome"] == "failed"
    assert (slow["raw"]["slowest_rank"], slow["raw"]["slowest_node"]) == (5, "n2")
    assert "; slowest rank 5 (gpu5);" in slow["message"]
    healthy = by_case["test_collective_intra_node[n1-all_reduce-1GiB]"]
    assert healthy["raw"]["slowest_rank"] is None and healthy["raw"]["slowest_node"] is None
    across = by_case["test_collective_inter_node[all_reduce-1GiB-2nodes]"]
    rank = across["raw"]["slowest_rank"]
    assert across["raw"]["slowest_node"] == "n2" and rank // 8 == 1
    assert f"; slowest rank {rank} (n2 gpu{rank % 8});" in across["message"]


# -- pytester: the suite through the local launcher (every node is this machine) ---------

LOCAL = """\
cluster: {{name: local, nodes: [a, b], launcher: local, python: {python}}}
host: {{same_software: false}}
interconnect:
  intra_node: {{kind: shm, rate: 1 TB/s}}
  inter_node: {{kind: loopback, nics_per_node: 1, rate_per_nic: {rate}}}
  payloads: [1 MiB]
  ranks_per_node: 2
  busbw: ">= 80%"
  warmup: 1
  iterations: 3
"""


@pytest.mark.slow
@pytest.mark.skipif(not has_torch(), reason="needs torch")
def test_the_stress_loop_checks_every_all_reduce_over_gloo(pytester: pytest.Pytester) -> None:
    """The stress level's own cases (-m stress runs the levels below it too): all_reduce
    over both nodes (4 gloo ranks) for 3 s, every result checked."""
    text = LOCAL.format(python=sys.executable, rate="1 Mb/s") + "  stress_time: 3 s\n"
    (pytester.path / "t.yaml").write_text(text)
    level = ("-m", "stress and not (sanity or acceptance)")
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", *level)
    result.assert_outcomes(passed=len(planned(pytester, text, *level)))
    (record,) = [r for r in jsonl(pytester) if r.get("clause") == "interconnect.stress_loop"]
    raw = record["raw"]
    assert raw["iterations"] > 10 and raw["wrong"] == 0 and raw["wrong_iterations"] == 0
    assert 3.0 <= raw["seconds"] < 30.0  # at least stress_time, however the pace changed
    assert 1 <= len(raw["busbw_windows"]) <= 100
    assert record["node"] == "2 node(s) (a,b)"
    assert record["measured"].startswith(f"{raw['iterations']} all_reduce of 1 MiB x 2 rank(s)")


@pytest.mark.slow
@pytest.mark.skipif(not has_torch(), reason="needs torch")
def test_the_suite_names_each_case_and_keeps_the_sweep(pytester: pytest.Pytester) -> None:
    (pytester.path / "t.yaml").write_text(LOCAL.format(python=sys.executable,
                                                       rate="1 Tb/s"))
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
    # 1 TB/s of shared memory and 1 Tb/s of loopback are out of reach (a rate declared
    # below what the loopback carries would put every figure above its physical ceiling)
    result.assert_outcomes(passed=0, failed=len(planned(pytester, (pytester.path / "t.yaml")
                                                        .read_text())))
    outcomes = {r["nodeid"].split("::")[1]: r for r in jsonl(pytester)}
    assert sorted(outcomes) == [
        "test_collective_inter_node[all_reduce-1MiB-2nodes]",
        "test_collective_intra_node[a-all_reduce-1MiB]",
        "test_collective_intra_node[b-all_reduce-1MiB]",
        "test_node_network[a]", "test_node_network[b]"]
    intra = outcomes["test_collective_intra_node[a-all_reduce-1MiB]"]
    assert intra["outcome"] == "failed"
    assert intra["requirement"] == ">= 80% of 1000 GB/s = 800 GB/s"
    assert intra["derivation"] == "shm 1 TB/s per GPU per direction = 1000 GB/s"
    assert intra["message"].startswith("Failed: a busbw[intra_node]: measured ")
    assert "all_reduce 1 MiB over 1 node(s) x 2 rank(s); busbw over iterations" in (
        intra["message"])
    inter = outcomes["test_collective_inter_node[all_reduce-1MiB-2nodes]"]
    assert inter["outcome"] == "failed" and inter["node"] == "2 nodes (a..b)"
    assert "busbw[inter_node]: measured " in inter["message"], inter["message"]
    assert [s[0] for s in inter["raw"]["sweep"]] == [2**20]
    assert inter["raw"]["wrong"] == 0 and inter["unit"] == "GB/s"
    assert inter["raw"]["nodes"] == "a,b"
    assert inter["raw"]["slowest_node"] == ["a", "b"][inter["raw"]["slowest_rank"] // 2]


@pytest.mark.slow
@pytest.mark.skipif(not has_torch(), reason="needs torch")
def test_xdist_workers_take_turns_to_measure(pytester: pytest.Pytester) -> None:
    """Two workers, one machine: no benchmark job may run beside another one."""
    (pytester.path / "t.yaml").write_text(LOCAL.format(python=sys.executable,
                                                       rate="1 Tb/s"))
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider",
                                "--tx", "2*popen", "--dist", "load")  # even on 2 CPUs
    result.assert_outcomes(passed=0, failed=len(planned(pytester, (pytester.path / "t.yaml")
                                                        .read_text())))
    spans = []
    for path in (pytester.path / "reports" / "latest" / "probes").glob("interconnect-*.json"):
        document = json.loads(path.read_text())
        runs = document.values() if "collective" not in document else [document]
        spans += [(r["details"]["started_at"], r["details"]["ended_at"]) for r in runs
                  if isinstance(r, dict) and "started_at" in r.get("details", {})]
    spans.sort()
    assert len(spans) >= 2 + 1  # intra a, b; inter 2 nodes; (the search's jobs)
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))


def jsonl(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    lines = (pytester.path / "reports" / "latest" / "results.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("type") == "result"]


# -- the real thing: gloo all-reduce over shaped links between namespace nodes ------------


@contextlib.contextmanager
def node_down(netns: NetnsCluster, node: str, fault: str) -> Iterator[None]:
    """`node` dead for the block: its sshd stopped, or its link down."""
    with netns.sshd_stopped(node) if fault == "sshd" else netns.link_down(node):
        yield


@pytest.mark.slow
@pytest.mark.skipif(not has_torch(), reason="needs torch")
def test_every_collective_checks_its_result_over_gloo() -> None:
    """4 ranks on 2 local "nodes"; a size that does not split evenly is rounded down to
    whole elements per rank, as nccl-tests sizes it."""
    spec = parse_spec(f"cluster: {{name: t, nodes: [a, b], launcher: local, python: "
                      f"{sys.executable}}}\ninterconnect: {{payloads: [1 MiB], "
                      "ranks_per_node: 2, busbw: '>= 1 MB/s', iterations: 2, warmup: 1}\n",
                      "t.yaml")
    assert spec.interconnect is not None
    launcher = LocalLauncher(spec.cluster)
    for collective in ("all_reduce", "all_gather", "reduce_scatter", "alltoall"):
        run = run_collective(launcher, spec.interconnect, collective, ["a", "b"],
                             [2**20, 3000])
        assert run.ok, run.error
        expected = 3000 if collective == "all_reduce" else 2992  # 748 floats: 187 per rank
        assert [(p.bytes, p.wrong) for p in run.points] == [(2**20, 0), (expected, 0)]
        assert all(p.busbw > 0 for p in run.points)


LATENCY_ON_NETNS = """\
cluster:
  name: latency
  nodes: node[1-4]
  launcher: ssh
  python: {python}
  probe_timeout: 5 min
{section}
interconnect:
  payloads: [1 MiB]
  busbw: ">= 1 MB/s"
  ranks_per_node: 1
  node_network: false
  latency: "<= {bound}"
  timeout: 3 min
"""


def _latency_cases(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    return {r["nodeid"].split("::")[1]: r for r in jsonl(pytester)
            if r["clause"] in ("interconnect.latency", "interconnect.colocation")}


# -- latency and colocation: the ping-pong between node pairs -------------------------------

LATENCY = H100.replace('  busbw: ">= 80%"\n', '  busbw: ">= 80%"\n  latency: "<= 5 us"\n')


def test_the_latency_keys_and_their_defaults() -> None:
    spec = parse_spec(LATENCY, "t.yaml").interconnect
    assert spec is not None and spec.latency is not None and spec.colocation is not None
    assert (spec.latency.key, spec.latency.line, spec.latency.requirement.text) == (
        "interconnect.latency", 10, "<= 5 us")
    assert (spec.latency_size, spec.colocation_factor, spec.colocation.line) == (8, 1.5, 0)
    assert spec.latency_sizes() == (8, 65536)
    written = parse_spec(LATENCY + "  latency_size: 4 KiB\n  colocation_factor: 2\n",
                         "t.yaml").interconnect
    assert written is not None and written.latency_sizes() == (8, 4096, 65536)
    assert written.colocation_factor == 2.0
    alone = parse_spec(H100 + "  colocation: true\n", "t.yaml").interconnect
    assert alone is not None and alone.latency is None and alone.colocation is not None
    off = parse_spec(LATENCY + "  colocation: false\n", "t.yaml").interconnect
    assert off is not None and off.latency is not None and off.colocation is None
    plain = parse_spec(H100, "t.yaml").interconnect
    assert plain is not None and (plain.latency, plain.colocation) == (None, None)


@pytest.mark.parametrize(("extra", "message"), [
    ('  latency: ">= 5 us"\n', "t.yaml:10: interconnect.latency: expected an upper bound "
     "above 0 like '<= 5 us', got '>= 5 us'"),
    ("  latency: 5 GB\n", "t.yaml:10: interconnect.latency: expected a time like '5 s', got "
     "'5 GB' (that is a size)"),
    ("  latency_size: 1 MiB\n", "t.yaml:10: interconnect.latency_size: expected a size from "
     "1 B to 64 KiB (a small message), got '1 MiB'"),
    ("  colocation: maybe\n", "t.yaml:10: interconnect.colocation: expected true or false, "
     "got 'maybe'"),
    ("  colocation: true\n  colocation_factor: 0.9\n", "t.yaml:11: "
     "interconnect.colocation_factor: expected a factor above 1 and at most 100 like 1.5 "
     "(times the median latency between the other nodes), got '0.9'"),
    ("  colocation_factor: 2\n", "t.yaml:10: interconnect.colocation_factor: only used with "
     "the colocation rule (colocation: true, or a latency bound)"),
    ("  latency_sise: 8 B\n", "t.yaml:10: interconnect.latency_sise: unknown key; did you "
     "mean 'latency_size'?"),
])
def test_bad_latency_keys_are_named(extra: str, message: str) -> None:
    assert error_of(H100 + extra).startswith(message), error_of(H100 + extra)


def test_a_bad_far_node_fault_is_named() -> None:
    text = SIM.format(backend="gloo").replace("{node: n2, down: true}",
                                              "{node: n2, latency_factor: 0.5}")
    assert "sim.faults[1].latency_factor: expected how many times farther the node is, " \
        "from 1 to 1000 like 3, got '0.5'" in error_of(text)


@pytest.mark.slow
def test_at_scale_a_far_node_of_the_sample_is_tested_again_with_good_peers(
        pytester: pytest.Pytester) -> None:
    """128 nodes: 14 of the tournament's 127 rounds; sim-gpu-100, three times farther, is
    the sample's one suspect, tested again with a node nearest the cluster's median; it
    alone fails colocation."""
    text = ((EXAMPLES / "sim-h100-storage-faulty.yaml").read_text()
            .replace("sim-gpu-[01-04]", "sim-gpu-[001-128]").replace("node_counts: [4]", "")
            .replace("{node: sim-gpu-04, latency_factor: 3}",
                     "{node: sim-gpu-100, latency_factor: 3}")
            .replace("{node: sim-gpu-03,", "{node: sim-gpu-003,"))
    (pytester.path / "t.yaml").write_text(text)
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k",
                                "test_colocation")
    cases = planned(pytester, text, "-k", "test_colocation")
    farther = on_nodes(cases, faulted(text, "latency_factor"))
    assert farther == ("test_colocation[sim-gpu-100]",)
    result.assert_outcomes(passed=len(cases) - len(farther), failed=len(farther))
    records = {r["nodeid"].split("::")[1]: r for r in jsonl(pytester)}
    far = records["test_colocation[sim-gpu-100]"]
    assert far["outcome"] == "failed"
    assert far["raw"]["run"]["rounds"] == 14 and far["raw"]["run"]["of_rounds"] == 127
    assert far["raw"]["run"]["retested"] == "sim-gpu-100"
    assert len(far["raw"]["peers_us"]["8"]) == 14 + 1  # the sample's peers and a good one
    assert "matrix_us" not in far["raw"]  # above 32 nodes: the node's own row only


@pytest.mark.parametrize("nodes", ["sim-gpu-[01-04]", "sim-gpu-[02-04]"])
def test_the_far_node_of_the_example_alone_fails_latency_and_colocation(
        pytester: pytest.Pytester, nodes: str) -> None:
    """Of four nodes and of three (one far): the far node alone fails both, the near ones
    pass both (with three, each near node's mean over a near and the far peer was above
    the bound, while the far node's 1.5 x their median passed colocation)."""
    text = (EXAMPLES / "sim-h100-storage-faulty.yaml").read_text()
    (pytester.path / "t.yaml").write_text(text)
    selection = (f"--cluster-node={nodes}", "-k", "test_latency or test_colocation")
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", *selection)
    records = {r["nodeid"].split("::")[1]: r for r in jsonl(pytester)}
    count = len(expand_hostlist(nodes))
    cases = planned(pytester, text, *selection)
    far = on_nodes(cases, faulted(text, "latency_factor"))
    result.assert_outcomes(passed=len(cases) - len(far), failed=len(far))
    failed = sorted(name for name, r in records.items() if r["outcome"] == "failed")
    assert failed == sorted(far) == ["test_colocation[sim-gpu-04]", "test_latency[sim-gpu-04]"]
    message = records["test_colocation[sim-gpu-04]"]["message"]
    assert message.startswith("Failed: [SIMULATED] sim-gpu-04 colocation: farther from its "
                              "peers than the rest (another spine or switch?): 8 B: median ")
    assert "; nearest sim-gpu-0" in message and ", farthest sim-gpu-0" in message
    raw = records["test_latency[sim-gpu-02]"]["raw"]
    assert len(raw["matrix_us"]["one_way"]) == count and raw["far_peers"] == ["sim-gpu-04"]
    assert raw["own_us"] < raw["median_us"] and raw["ratio"] < 1.5
    assert raw["run"]["rounds"] == pingpong.rounds_of(count)
    assert raw["run"]["retested"] == "sim-gpu-04"  # measured again before it was blamed
    assert set(raw["peers_us"]) == {"8", "65536"}
    result.stdout.fnmatch_lines(["*REJECTED sim-gpu-04: 2 clause(s) failed: "
                                 "interconnect.latency, interconnect.colocation*"])


def test_of_two_nodes_a_latency_above_the_bound_blames_neither(
        pytester: pytest.Pytester) -> None:
    """Two nodes, one far: their one pair is above the bound, but nothing singles either
    out: both cases undecided (no culprit), neither node rejected."""
    text = (EXAMPLES / "sim-h100-storage-faulty.yaml").read_text()
    (pytester.path / "t.yaml").write_text(text)
    selection = ("--cluster-node=sim-gpu-0[3-4]", "-k", "test_latency")
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", *selection)
    result.assert_outcomes(failed=len(planned(pytester, text, *selection)))  # both nodes'
    records = [r for r in jsonl(pytester) if r["clause"] == "interconnect.latency"]
    assert {r["error_kind"] for r in records} == {"undecided"}
    assert all("nothing singles out either node" in r["message"] for r in records)
    verdict = json.loads(next(pytester.path.glob("reports/*/verdict.json")).read_text())
    assert {n["verdict"] for n in verdict["nodes"]} == {"NOT CHECKED"}


DEAD_AND_FAR = """\
cluster: {name: lat-dead, nodes: "n-[1-6]", launcher: sim}
interconnect:
  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}
  payloads: [4 GiB]
  node_counts: [2]
  busbw: ">= 80%"
  latency: "<= 50 us"
sim:
  faults:
    - {node: n-4, latency_factor: 3}
    - {node: n-6, down: true}
"""


def latency_of_six(pytester: pytest.Pytester, spec: str,
                   lost: str) -> tuple[pytest.RunResult, dict[str, dict[str, Any]]]:
    """The latency and colocation cases of a six-node spec whose far node (its
    latency_factor fault: n-4) and `lost` (which does not take part) fail, and only theirs:
    each case's result line by its name."""
    (pytester.path / "t.yaml").write_text(spec)
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k",
                                "test_latency or test_colocation")
    cases = planned(pytester, spec, "-k", "test_latency or test_colocation")
    failing = on_nodes(cases, (*faulted(spec, "latency_factor"), lost))
    result.assert_outcomes(passed=len(cases) - len(failing), failed=len(failing))
    records = {r["nodeid"].split("::")[1]: r for r in jsonl(pytester)}
    failed = sorted(name for name, r in records.items() if r["outcome"] == "failed")
    assert failed == sorted(failing) == sorted(
        f"test_{case}[{node}]" for case in ("latency", "colocation") for node in ("n-4", lost))
    return result, records


def test_a_dead_node_is_left_out_of_the_ping_pong_and_the_far_node_still_named(
        pytester: pytest.Pytester) -> None:
    """n-6 does not answer its host probe: it fails its own latency and colocation cases
    as unreachable, once, and the ping-pong runs among the five that answer, as the
    slow-node search does; n-4, three times farther, is named as without the dead node
    (it had left every node NOT CHECKED, n-4 unnamed)."""
    result, records = latency_of_six(pytester, DEAD_AND_FAR, "n-6")
    assert {records[f"test_{c}[n-6]"]["error_kind"] for c in ("latency", "colocation")} \
        == {"unreachable"}
    assert records["test_colocation[n-4]"]["message"].startswith(
        "Failed: [SIMULATED] n-4 colocation: farther from its peers than the rest")
    raw = records["test_latency[n-1]"]["raw"]
    assert raw["run"]["nodes"] == "n-[1-5]" and list(raw["run"]["left_out"]) == ["n-6"]
    assert raw["run"]["left_out"]["n-6"].startswith("host probe unreachable: ")
    assert set(raw["peers_us"]["8"]) == {"n-2", "n-3", "n-4", "n-5"}
    assert raw["matrix_us"]["nodes"] == ["n-1", "n-2", "n-3", "n-4", "n-5"]
    assert "; left out of the ping-pong: n-6 (its host probe did not answer)" in \
        records["test_colocation[n-4]"]["message"]
    result.stdout.fnmatch_lines(["nodes: 4 ACCEPTED, 1 REJECTED, 1 UNREACHABLE, "
                                 "0 NOT CHECKED"])


def test_a_node_that_dies_during_the_ping_pong_is_left_out_of_it_played_again(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """n-3 answers its host probe at the run's start, then its part of the ping-pong is
    cut off and it answers nothing more: the host probe read again after the failed job
    finds it gone, so the ping-pong is played once more without it. n-3 fails its own
    cases as unreachable; n-4, far, is named; the rest pass (the failed job had left
    them all NOT CHECKED)."""
    dead: set[str] = set()
    answer = SimLauncher.run_one

    def run_one(self: SimLauncher, call: ProbeCall, node: str,
                timeout_s: float) -> ProbeResult:
        if node in dead:
            return ProbeResult(node, call.name, None, ErrorKind.UNREACHABLE,
                               "simulated: the node went down", simulated=True)
        result = answer(self, call, node, timeout_s)
        if node == "n-3" and call.name == "job_node" and read_node_call(call.args):
            dead.add(node)  # it played its part, but the answer never came back
            return ProbeResult(node, call.name, None, ErrorKind.UNREACHABLE,
                               "simulated: connection closed", simulated=True)
        return result

    monkeypatch.setattr(SimLauncher, "run_one", run_one)
    result, records = latency_of_six(
        pytester, DEAD_AND_FAR.replace("    - {node: n-6, down: true}\n", ""), "n-3")
    mine = records["test_latency[n-3]"]
    assert mine["error_kind"] == "unreachable"
    assert mine["message"].startswith("Failed: [SIMULATED] n-3 latency: left out of the "
                                      "ping-pong: host probe unreachable: simulated: the "
                                      "node went down (read again after the ping-pong "
                                      "failed: n-3: "), mine["message"]
    assert "job_node probe unreachable: simulated: connection closed" in mine["message"]
    raw = records["test_latency[n-1]"]["raw"]
    assert raw["run"]["nodes"] == "n-[1-2,4-6]" and list(raw["run"]["left_out"]) == ["n-3"]
    result.stdout.fnmatch_lines(["nodes: 4 ACCEPTED, 1 REJECTED, 1 UNREACHABLE, "
                                 "0 NOT CHECKED"])
