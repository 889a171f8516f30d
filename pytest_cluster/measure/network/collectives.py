"""The interconnect's benchmark jobs, each run once per run and shared by every test: a
collective's payload sweep inside each node and across the first nodes of the spec (by
torch, measure/network/benchmark.py, or by nccl-tests' binaries), and the stress level's
all_reduce loop over every node."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from typing import TYPE_CHECKING

from pytest_cluster.contract.reading.documents import record_of
from pytest_cluster.contract.sections.busbw import CollectiveRun
from pytest_cluster.measure.cache import document_key
from pytest_cluster.measure.network import nccl_tests
from pytest_cluster.measure.network.benchmark import (
    StressLoop,
    run_collective,
    run_collective_stress,
)
from pytest_cluster.probes import ProbeCall
from pytest_cluster.probes import nccl_tests as nccl_tests_probe

if TYPE_CHECKING:
    from pytest_cluster.contract.model import InterconnectSpec
    from pytest_cluster.measure.prober import Prober

#: The error kind of a job not started because a node of it did not answer its host probe
#: (the verdict's NOT_ESTABLISHED: that node's own verdict says why).
NOT_ALL_NODES = "not_all_nodes"


def section(prober: Prober) -> InterconnectSpec:
    """The spec's interconnect section; ValueError where it has none."""
    if prober.spec.interconnect is None:
        raise ValueError("the spec has no interconnect section")
    return prober.spec.interconnect


def key(prober: Prober, *parts: object) -> str:
    """The cache's name for a document of the interconnect section's jobs (`parts`: which
    one), the section's text made once per process."""
    text = prober.cache.kept(("interconnect", "text"), lambda: json.dumps(
        asdict(section(prober)), sort_keys=True, default=str, allow_nan=False))
    return document_key("interconnect", text, *parts)


def collective(prober: Prober, name: str, nodes: Sequence[str], sizes: Sequence[int],
               env: tuple[tuple[str, str], ...] = (),
               spec: InterconnectSpec | None = None) -> CollectiveRun:
    """One benchmark job of collective `name` over `nodes`, through the launcher (the
    sim's answers its ranks from its description), as the interconnect section says (or
    `spec`), its ranks' network chosen by `env`. A node whose host probe did not answer
    fails the job at once: the other ranks would otherwise wait out the rendezvous
    timeout for it."""
    spec = spec or section(prober)
    host = prober.silent(nodes)
    if host is not None:
        return CollectiveRun(name, spec.backend, tuple(nodes), spec.ranks_per_node,
                             error=host.describe(), simulated=host.simulated,
                             error_kind=NOT_ALL_NODES)
    started = time.time()
    run: CollectiveRun | None = None
    try:
        if spec.engine == "nccl-tests" and spec.nccl_tests and not env:
            run = _nccl_tests(prober, spec, name, nodes[0], sizes) \
                if len(nodes) == 1 else \
                _nccl_tests_across(prober, spec, name, nodes, sizes)
        if run is None:  # torch's, or nccl-tests across nodes with no MPI launch
            run = run_collective(prober.launcher, spec, name, nodes, sizes, env)
    except Exception as exc:  # a bug of ours is this job's, no other's
        # the job's own crash: its cases say so (a tool fault), and the other jobs of
        # a document computed for many (every node's, the search's) are still measured
        run = CollectiveRun(name, spec.backend, tuple(nodes), spec.ranks_per_node,
                            error=f"pytest-cluster crashed measuring it: "
                                  f"{type(exc).__name__}: {exc}",
                            simulated=prober.launcher.simulated, crashed=True)
    return replace(run, details={**run.details, "started_at": started,
                                 "ended_at": time.time()})


def _nccl_tests(prober: Prober, spec: InterconnectSpec, name: str, node: str,
                sizes: Sequence[int]) -> CollectiveRun:
    """One node's job by nccl-tests: its binary driving every GPU of the job from one
    process (-g ranks_per_node), through the launcher like a probe."""
    assert spec.nccl_tests is not None
    base = CollectiveRun(name, spec.backend, (node,), spec.ranks_per_node)
    call = ProbeCall("nccl_tests", nccl_tests.probe_args(
        spec.nccl_tests, name, sizes, spec.ranks_per_node, spec.warmup,
        spec.iterations, spec.timeout_s))
    result = prober.run(call, [node], spec.timeout_s * 2 + 60)[node]
    base = replace(base, simulated=result.simulated)
    if not result.ok:
        return replace(base, error=result.describe())
    return nccl_tests.to_run(base, result.payload(), sizes)


def _nccl_tests_across(prober: Prober, spec: InterconnectSpec, name: str,
                       nodes: Sequence[str], sizes: Sequence[int]) -> CollectiveRun | None:
    """A job over several nodes by nccl-tests' MPI build: one task per GPU (-g 1),
    ranks_per_node on each node, started by the launcher's MPI launch (srun --mpi);
    None where the launcher offers none."""
    assert spec.nccl_tests is not None
    path = f"{spec.nccl_tests}/{nccl_tests.BINARY[name]}"
    runs: list[dict[str, object]] = []
    simulated = False
    for first, last in nccl_tests_probe.runs(list(sizes)):
        argv = nccl_tests_probe.argv(path, first, last, 1, spec.warmup, spec.iterations,
                                     None)
        got = prober.launcher.run_program(argv, nodes, spec.ranks_per_node, spec.timeout_s)
        if got is None:
            return None
        simulated = simulated or got.simulated
        runs.append({"argv": argv, "exit_code": got.exit_code, "stdout": got.first_task,
                     "stderr_tail": got.stderr_tail, "json": None})
        if got.exit_code != 0:
            break
    base = CollectiveRun(name, spec.backend, tuple(nodes), spec.ranks_per_node,
                         simulated=simulated)
    return nccl_tests.to_run(base, {"binary": path, "runs": runs}, sizes,
                             f"-g 1, {spec.ranks_per_node} task(s) per node started "
                             f"as one MPI job by the launcher (srun --mpi)")


def intra_node(prober: Prober, node: str, name: str) -> CollectiveRun:
    """The payload sweep of collective `name` inside `node` (all its ranks); every node's
    job at once."""
    spec = section(prober)

    def compute() -> dict[str, object]:
        def one(each: str) -> CollectiveRun:
            return collective(prober, name, [each], spec.sweep())
        with ThreadPoolExecutor(max_workers=prober.jobs_at_once(len(prober.nodes))) as pool:
            runs = list(pool.map(one, prober.nodes))
        return {each: run.to_json() for each, run in zip(prober.nodes, runs, strict=True)}

    prober.host_all()  # read before the measuring lock is taken (see ProbeCache.alone)
    document = prober.cache.document(key(prober, "intra", name), compute)
    return record_of(CollectiveRun, document[node])


def inter_node(prober: Prober, count: int, name: str) -> CollectiveRun:
    """The payload sweep of collective `name` across the first `count` nodes of the spec,
    as one job. Those of them whose host probe did not answer are left out (details
    `left_out`: node -> why), the job runs over the others, when 2 or more answer: their
    figure is measured, the dead node named, where the job would have failed with no
    number."""
    spec = section(prober)
    nodes = prober.nodes[:count]
    prober.host_all()

    def compute() -> dict[str, object]:
        silent = {node: why for node, why in prober.left_out().items() if node in nodes}
        others = [node for node in nodes if node not in silent]
        if not silent or len(others) < 2:
            return collective(prober, name, nodes, spec.sweep()).to_json()
        run = collective(prober, name, others, spec.sweep())
        return replace(run, details={**run.details, "left_out": silent}).to_json()

    document = prober.cache.document(key(prober, "inter", count, name), compute)
    return CollectiveRun.from_json(document)


def stress(prober: Prober) -> StressLoop:
    """The stress level's all_reduce loop over every node of the spec, as one job; a
    node whose host probe did not answer fails it at once, named."""
    spec = section(prober)

    def compute() -> dict[str, object]:
        host = prober.silent(prober.nodes)
        if host is not None:
            return StressLoop(prober.nodes, spec.ranks_per_node, spec.backend,
                              error=host.describe(), simulated=host.simulated,
                              error_kind=NOT_ALL_NODES).to_json()
        return run_collective_stress(prober.launcher, spec, prober.nodes).to_json()

    prober.host_all()
    return StressLoop.from_json(prober.cache.document(key(prober, "stress"), compute))
