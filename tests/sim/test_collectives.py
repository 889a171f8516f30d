"""sim/collectives.py: the collective benchmark's arguments, nccl-tests' payloads, and the
node whose fault stops a job named as that node."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.sections.sim_records import SimFault, SimSpec
from pytest_cluster.sim.collectives import Benchmark, doubling, job_ranks, missing_gpu

NODES = ("n1", "n2", "n3")
SHORT = SimSpec("H100-SXM-80GB", 8, faults=(SimFault("n2", None, 1, gpus=6),))


def test_the_benchmarks_arguments_are_read_with_their_defaults() -> None:
    assert Benchmark.from_args(["--sizes", "1024,,4096", "--backend", "nccl"]) == \
        Benchmark("all_reduce", (1024, 4096), 5, 20, "nccl", 0.0)
    assert Benchmark.from_args(["--collective", "all_gather", "--sizes", "8", "--warmup", "1",
                                "--iterations", "2", "--seconds", "2.5"]) == \
        Benchmark("all_gather", (8,), 1, 2, "gloo", 2.5)


@pytest.mark.parametrize("args", [[], ["--sizes"], ["sizes", "8"], ["--warmup", "1"],
                                  ["--sizes", "8", "--bogus", "1"]])
def test_what_is_not_the_benchmarks_arguments_is_refused(args: list[str]) -> None:
    with pytest.raises(ValueError, match=r"^not the collective benchmark's arguments: "):
        Benchmark.from_args(args)


@pytest.mark.parametrize(("first", "last", "sizes"), [
    (1, 8, (1, 2, 4, 8)), (0, 3, (1, 2)), (3, 20, (3, 6, 12)), (16, 8, ())])
def test_nccl_tests_payloads_double_from_first_to_last(first: int, last: int,
                                                        sizes: tuple[int, ...]) -> None:
    assert doubling(first, last) == sizes


def test_the_first_node_short_of_gpus_is_named_for_nccl_only() -> None:
    nccl = Benchmark("all_reduce", (8,), backend="nccl")
    assert missing_gpu(SHORT, nccl, NODES, 8) == (1, 6, "LOCAL_RANK 6 but n2 has 6 GPU(s)")
    assert missing_gpu(SHORT, nccl, NODES, 6) is None
    assert missing_gpu(SHORT, Benchmark("all_reduce", (8,)), NODES, 8) is None  # gloo


def test_a_job_on_a_node_short_of_gpus_fails_that_nodes_first_missing_rank_alone() -> None:
    parts = job_ranks(SHORT, None, Benchmark("all_reduce", (2**20,), 1, 3, "nccl"), NODES, 8)
    failing = [(NODES[index], rank["local_rank"], rank["stderr_tail"])
               for index, part in enumerate(parts) for rank in part if rank["exit_code"] != 0]
    assert failing == [("n2", 6, "LOCAL_RANK 6 but n2 has 6 GPU(s)")]
    healthy = job_ranks(SimSpec("H100-SXM-80GB", 8),
                        None, Benchmark("all_reduce", (2**20,), 1, 3, "nccl"), NODES, 8)
    assert all(rank["exit_code"] == 0 for part in healthy for rank in part)
