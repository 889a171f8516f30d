"""The simulator answers every fault the spec accepts: whatever the faults (every NVLink
of a GPU down, factors a hair above 0, every GPU faulty, a node with no GPU), each
simulated probe and job answers with finite numbers and never raises (issue 47: NVLink
all down crashed the collectives with a ZeroDivisionError)."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_cluster.contract.loader import parse_spec
from pytest_cluster.contract.sections.sim import LIES
from pytest_cluster.contract.sections.sim_records import SimFault, SimSpec
from pytest_cluster.probes.gpu_perf import parse_options
from pytest_cluster.sim.cluster import describe_node, gpu_perf_payload
from pytest_cluster.sim.collectives import Benchmark, job_ranks, nccl_tests_run
from pytest_cluster.sim.pingpong import pingpong_ranks
from pytest_cluster.sim.storage import checkpoint_ranks, dataloader_ranks

NODES = ("n1", "n2", "n3")
SPEC = parse_spec("""\
cluster: {name: x, nodes: 'n[1-3]'}
interconnect:
  intra_node: {kind: nvlink, rate: 450 GB/s}
  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}
  payloads: [1 GiB]
  busbw: ">= 80%"
""", "t.yaml").interconnect
#: A factor the spec accepts: above 0, up to 1, the extremes included.
FACTORS = st.one_of(st.sampled_from([5e-324, 1e-300, 1e-9, 1.0]),
                    st.floats(min_value=5e-324, max_value=1.0))


@st.composite
def faults(draw: st.DrawFn) -> SimFault:
    node = draw(st.sampled_from(NODES))
    if draw(st.booleans()):  # a GPU's fault
        return SimFault(node, draw(st.integers(0, 7)), 1,
                        nvlinks_down=draw(st.integers(0, 40)),
                        bandwidth_factor=draw(FACTORS), matmul_factor=draw(FACTORS),
                        pcie_gen=draw(st.none() | st.integers(1, 5)),
                        pcie_width=draw(st.none() | st.integers(1, 16)))
    return SimFault(node, None, 1, gpus=draw(st.none() | st.integers(0, 8)),
                    link_factor=draw(FACTORS), storage_factor=draw(FACTORS),
                    latency_factor=draw(st.floats(1, 1000)),
                    lies=draw(st.none() | st.sampled_from(tuple(LIES))))


def finite(value: Any) -> bool:
    """Whether every number in `value` is finite (as strict JSON writes it)."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(faults(), max_size=12), st.sampled_from(["nccl", "gloo"]),
       st.integers(1, 3), st.integers(1, 8))
def test_every_fault_the_spec_accepts_gets_a_finite_answer(
        found: list[SimFault], backend: str, count: int, ranks: int) -> None:
    sim = SimSpec("H100-SXM-80GB", 8, faults=tuple(found))
    nodes = NODES[:count]
    for node in NODES:
        assert finite(describe_node(sim, node))
        assert finite(gpu_perf_payload(sim, node, parse_options(
            ["--dtypes", "bf16", "--load-time", "1"])))
    for collective in ("all_reduce", "all_gather"):
        for seconds in (0.0, 5.0):
            answer = job_ranks(sim, SPEC, Benchmark(collective, (2**20, 2**30), 1, 3, backend,
                                                    seconds), nodes, ranks)
            assert finite(answer)
            times = [size["time_s"] for part in answer for rank in part if rank["data"]
                     for size in rank["data"]["sizes"]]
            assert all(math.isfinite(t) and t >= 0 for t in times), times
        run = nccl_tests_run(sim, SPEC, "all_reduce_perf", nodes, (2**20, 2**30), 1, ranks)
        assert finite(run.document)
    assert finite(pingpong_ranks(sim, SPEC, nodes, ["--sizes", "8,1048576"]))
    for phase in ("write", "read"):
        assert finite(checkpoint_ranks(sim, nodes, ranks, ["--phase", phase]))
    for phase in ("read", "metadata"):
        assert finite(dataloader_ranks(sim, nodes, ranks, ["--phase", phase]))


def test_every_nvlink_of_a_gpu_down_falls_back_to_pcie() -> None:
    """NCCL over a GPU whose NVLink links are all down goes through PCIe: the node's
    all-reduce is measured, at about the PCIe rate, not 0 (and no ZeroDivisionError)."""
    sim = SimSpec("H100-SXM-80GB", 8, faults=(SimFault("n1", 3, 1, nvlinks_down=18),))
    (part,) = job_ranks(sim, SPEC, Benchmark("all_reduce", (2**30,), 1, 3, "nccl"), ["n1"], 8)
    data = part[0]["data"]
    assert data is not None
    size = data["sizes"][0]
    busbw = size["bytes"] * 2 * 7 / 8 / size["time_s"]
    assert 10e9 < busbw < 100e9, busbw
