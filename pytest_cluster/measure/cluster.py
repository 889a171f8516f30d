"""The cluster under test: the validated spec, its launcher and the shared probe cache."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_cluster.contract.busbw import CollectiveRun, required_busbw, theoretical
from pytest_cluster.errors import ClusterError
from pytest_cluster.launchers import ErrorKind, Launcher, ProbeResult, get_launcher
from pytest_cluster.measure import nccl_tests, plausible, rails
from pytest_cluster.measure.benchmark import StressLoop, run_collective, run_collective_stress
from pytest_cluster.measure.cache import ProbeCache, document_key
from pytest_cluster.measure.calls import (
    gpu_call,
    gpu_perf_call,
    gpu_stress_call,
    import_call,
    storage_call,
)
from pytest_cluster.measure.checkpoint import CheckpointRun, run_checkpoint
from pytest_cluster.measure.dataloader import DataloaderRun, run_dataloader
from pytest_cluster.measure.fabric import NIC_END
from pytest_cluster.measure.latency import LatencyRun, run_latency
from pytest_cluster.measure.node_search import NodeSearch, find_slow_nodes, with_crashes
from pytest_cluster.measure.storage_claims import node_ceiling
from pytest_cluster.measure.training import TrainingRun, run_training, step_bound
from pytest_cluster.probes import ProbeCall
from pytest_cluster.probes import nccl_tests as nccl_tests_probe

if TYPE_CHECKING:
    from pytest_cluster.contract.model import GpuSpec, InterconnectSpec, Spec, StorageSpec

#: The error kind of a job not started because a node of it did not answer its host probe
#: (the verdict's NOT_ESTABLISHED: that node's own verdict says why).
NOT_ALL_NODES = "not_all_nodes"
#: Probes that load the nodes (GPUs, disks): one at a time across xdist workers.
LOADING_PROBES = ("gpu_perf", "storage", "import_latency")


def _why(result: ProbeResult) -> str:
    """Why a probe failed, less the node's name ('host probe unreachable: ...')."""
    return result.describe().split(": ", 1)[-1]


class Cluster:
    """What the `cluster` fixture gives a test: spec, nodes and probe results."""

    def __init__(self, spec: Spec, cache_dir: Path, launcher: Launcher | None = None,
                 selected_clauses: frozenset[str] | None = None) -> None:
        self.spec = spec
        #: The clauses this run's selection checks (from the plan the run wrote); None:
        #: every clause (no plan known).
        self.selected_clauses = selected_clauses
        self.launcher = launcher or get_launcher(spec)
        self.cache = ProbeCache(cache_dir)
        self._interconnect_text: str | None = None  # the section as JSON, for _key
        self._search: NodeSearch | None = None  # read once per process
        self._latency: LatencyRun | None = None  # read once per process
        #: the at-once runs on shared filesystems, by document: read once per process
        self._at_once: dict[str, CheckpointRun | DataloaderRun] = {}
        self._rails: rails.RailSearches | None = None

    @property
    def name(self) -> str:
        return self.spec.cluster.name

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.spec.cluster.nodes

    def _run(self, call: ProbeCall, nodes: Sequence[str],
             at_least_s: float = 0.0) -> dict[str, ProbeResult]:
        quiet = call.name in LOADING_PROBES or call == NIC_END
        alone = self.cache.alone() if quiet else contextlib.nullcontext()
        with alone:
            return self.launcher.run(call, nodes,
                                     max(self.spec.cluster.probe_timeout_s, at_least_s))

    def probe(self, call: ProbeCall, node: str) -> ProbeResult:
        """The result of `call` on `node`; the call runs once, on all nodes in parallel."""
        return self.cache.get(call, self.nodes, self._run)[node]

    def probe_all(self, call: ProbeCall) -> dict[str, ProbeResult]:
        return self.cache.get(call, self.nodes, self._run)

    def host(self, node: str) -> ProbeResult:
        return self.probe(ProbeCall("host"), node)

    def host_all(self) -> dict[str, ProbeResult]:
        return self.probe_all(ProbeCall("host"))

    def storage(self, node: str, fs: StorageSpec) -> ProbeResult:
        return self.probe(storage_call(fs, self.selected_clauses), node)

    def import_latency(self, node: str, fs: StorageSpec) -> ProbeResult:
        return self.probe(import_call(fs), node)

    def shared_check(self, fs: StorageSpec) -> tuple[str, ProbeResult,
                                                     dict[str, ProbeResult]]:
        """Write a file on the first node that answers, read it on every node, remove it:
        (writer, its write result, every node's read result). Not cached: run each time.

        The file is removed however the check ends: a write that fails removes its own
        (probes/shared_fs.py), and the last write started is removed here even when a
        Ctrl-C cuts the check short. Its name carries the time by which its reads are
        over (a write and a read, each within probe_timeout, and 10 minutes for the
        clocks of the nodes and this machine to differ): a later write sweeps it after
        that if this process is killed first."""
        timeout = self.spec.cluster.probe_timeout_s
        margin_s = 600

        def call(token: str, mode: str) -> ProbeCall:
            return ProbeCall("shared_fs", ("--path", fs.path, "--token", token, mode))

        write = ProbeResult(self.nodes[0], "shared_fs", None, message="no node answered")
        writer = self.nodes[0]
        started: tuple[str, str] | None = None  # (node, token) of a write that may exist
        try:
            for node in self.nodes:
                expires = int(time.time() + 2 * timeout + margin_s)
                token = f"{expires}-{uuid.uuid4().hex[:12]}"
                started = (node, token)
                writer, write = node, self.launcher.run(call(token, "write"), [node],
                                                        timeout)[node]
                if write.ok and "error" not in write.payload():
                    break
                # a failed write removed its file; a killed one is swept after it expires
                started = None
            if started is None:
                return writer, write, {}
            return writer, write, self.launcher.run(call(started[1], "read"), self.nodes,
                                                    timeout)
        finally:
            if started is not None:
                self.launcher.run(call(started[1], "remove"), [started[0]], timeout)

    def _at_once_run(self, key: str, fs: StorageSpec,
                     run: Callable[..., CheckpointRun | DataloaderRun]) -> dict[str, Any]:
        """`run(launcher, fs, nodes, gpus, silent, ceiling)` over every node that answers
        its host probe (the others, named, are its errors), once per run: its document;
        `ceiling`: what no node's rate may pass (storage_claims.node_ceiling)."""
        def compute() -> dict[str, object]:
            answers = self.host_all()
            silent = {n: r.describe() for n, r in answers.items() if not r.ok}
            gpus = self.spec.gpus.slots if self.spec.gpus is not None else None
            nodes = [n for n in self.nodes if n not in silent]
            found = run(self.launcher, fs, nodes, gpus, silent, node_ceiling(self.spec))
            simulated = found.simulated or any(r.simulated for r in answers.values())
            return replace(found, simulated=simulated).to_json()

        self.host_all()  # read before the measuring lock is taken (ProbeCache.alone)
        return self.cache.document(key, compute)

    def checkpoint(self, fs: StorageSpec) -> CheckpointRun:
        """The checkpoint burst on `fs`, read once per process."""
        key = self.checkpoint_id(fs)
        if key not in self._at_once:
            self._at_once[key] = CheckpointRun.from_json(
                self._at_once_run(key, fs, run_checkpoint))
        found = self._at_once[key]
        assert isinstance(found, CheckpointRun)
        return found

    def dataloader(self, fs: StorageSpec) -> DataloaderRun:
        """The data loader's reads on `fs`, read once per process."""
        key = self.dataloader_id(fs)
        if key not in self._at_once:
            self._at_once[key] = DataloaderRun.from_json(
                self._at_once_run(key, fs, run_dataloader))
        found = self._at_once[key]
        assert isinstance(found, DataloaderRun)
        return found

    @functools.cache  # noqa: B019 - a few filesystems per run
    def dataloader_id(self, fs: StorageSpec) -> str:
        """The data loader run's document in the run's probes/ directory (`<id>.json`)."""
        return document_key("dataloader", asdict(fs), self.nodes)

    @functools.cache  # noqa: B019 - a few filesystems per run
    def checkpoint_id(self, fs: StorageSpec) -> str:
        """The burst's document in the run's probes/ directory (`<id>.json`)."""
        return document_key("checkpoint", asdict(fs), self.nodes)

    def _gpus(self) -> GpuSpec:
        if self.spec.gpus is None:
            raise ValueError("the spec has no gpus section")
        return self.spec.gpus

    def gpu(self, node: str) -> ProbeResult:
        """NVML inventory and health of every GPU of `node`."""
        return self.probe(gpu_call(self._gpus()), node)

    def gpu_all(self) -> dict[str, ProbeResult]:
        return self.probe_all(gpu_call(self._gpus()))

    def gpu_perf(self, node: str) -> ProbeResult | None:
        """torch measurements on every GPU of `node` at once; None if none is in contract."""
        call = gpu_perf_call(self._gpus())
        return None if call is None else self.probe(call, node)

    def gpu_stress(self, node: str) -> ProbeResult:
        """The stress level on `node`: sustained load on every GPU at once, then the same
        matmul on each, compared (gpu_stress_call)."""
        gpus = self._gpus()
        # its timeout: the stress itself, and 10 minutes for starting up and the check
        longer = functools.partial(self._run, at_least_s=gpus.stress_time_s + 600)
        return self.cache.get(gpu_stress_call(gpus), self.nodes, longer)[node]

    # -- interconnect: benchmark jobs, each run once and shared by every test -------------

    def interconnect_spec(self) -> InterconnectSpec:
        if self.spec.interconnect is None:
            raise ValueError("the spec has no interconnect section")
        return self.spec.interconnect

    def _key(self, *parts: object) -> str:
        if self._interconnect_text is None:
            self._interconnect_text = json.dumps(asdict(self.interconnect_spec()), sort_keys=True,
                                                 default=str, allow_nan=False)
        return document_key("interconnect", self._interconnect_text, *parts)

    def _silent(self, nodes: Sequence[str]) -> ProbeResult | None:
        """The host probe of the first of `nodes` that did not answer, None if all did: a
        job over them fails at once, naming it, instead of its other ranks waiting out
        the rendezvous for it."""
        return next((r for r in map(self.host, nodes) if not r.ok), None)

    def left_out(self) -> dict[str, str]:
        """The nodes whose host probe did not answer, each with why (its line less the
        node's name): the jobs that pair or sample the nodes (the slow-node search, the
        latency ping-pong) run without them, so a dead node fails only its own cases (as
        unreachable) and never one of the others'."""
        return {node: _why(result) for node, result in self.host_all().items()
                if not result.ok}

    def stopped_answering(self, nodes: list[str]) -> dict[str, str]:
        """Of `nodes`, whose job failed, those whose host probe read again (not the
        run's cached answer) does not answer, each with why: they stopped answering
        since the run began. A launcher error, or a run interrupted, tells nothing."""
        try:
            fresh = self.launcher.run(ProbeCall("host"), nodes,
                                      self.spec.cluster.probe_timeout_s)
        except (ClusterError, OSError, ValueError):
            return {}
        return {node: _why(result) for node, result in fresh.items()
                if node in nodes and not result.ok and result.error is not ErrorKind.CANCELLED}

    def jobs_at_once(self, jobs: int) -> int:
        """Jobs on disjoint nodes run at once; where every "node" is this machine
        (Launcher.one_host), one at a time (they would share its CPUs and network)."""
        if self.launcher.one_host:
            return 1
        return max(1, min(jobs, self.spec.cluster.parallel))


    def collective(self, collective: str, nodes: Sequence[str], sizes: Sequence[int],
                   env: tuple[tuple[str, str], ...] = (),
                   spec: InterconnectSpec | None = None) -> CollectiveRun:
        """One benchmark job over `nodes`, through the launcher (the sim's answers its
        ranks from its description), as the interconnect section says (or `spec`), its
        ranks' network chosen by `env`. A node whose host probe did not answer fails the
        job at once: the other ranks would otherwise wait out the rendezvous timeout for
        it."""
        spec = spec or self.interconnect_spec()
        host = self._silent(nodes)
        if host is not None:
            return CollectiveRun(collective, spec.backend, tuple(nodes), spec.ranks_per_node,
                                 error=host.describe(), simulated=host.simulated,
                                 error_kind=NOT_ALL_NODES)
        started = time.time()
        run: CollectiveRun | None = None
        try:
            if spec.engine == "nccl-tests" and spec.nccl_tests and not env:
                run = self._nccl_tests(spec, collective, nodes[0], sizes) \
                    if len(nodes) == 1 else \
                    self._nccl_tests_across(spec, collective, nodes, sizes)
            if run is None:  # torch's, or nccl-tests across nodes with no MPI launch
                run = run_collective(self.launcher, spec, collective, nodes, sizes, env)
        except Exception as exc:  # a bug of ours is this job's, no other's
            # the job's own crash: its cases say so (a tool fault), and the other jobs of
            # a document computed for many (every node's, the search's) are still measured
            run = CollectiveRun(collective, spec.backend, tuple(nodes), spec.ranks_per_node,
                                error=f"pytest-cluster crashed measuring it: "
                                      f"{type(exc).__name__}: {exc}",
                                simulated=self.launcher.simulated, crashed=True)
        return replace(run, details={**run.details, "started_at": started,
                                     "ended_at": time.time()})

    def _nccl_tests(self, spec: InterconnectSpec, collective: str, node: str,
                    sizes: Sequence[int]) -> CollectiveRun:
        """One node's job by nccl-tests: its binary driving every GPU of the job from one
        process (-g ranks_per_node), through the launcher like a probe."""
        assert spec.nccl_tests is not None
        base = CollectiveRun(collective, spec.backend, (node,), spec.ranks_per_node)
        call = ProbeCall("nccl_tests", nccl_tests.probe_args(
            spec.nccl_tests, collective, sizes, spec.ranks_per_node, spec.warmup,
            spec.iterations, spec.timeout_s))
        result = self._run(call, [node], spec.timeout_s * 2 + 60)[node]
        base = replace(base, simulated=result.simulated)
        if not result.ok:
            return replace(base, error=result.describe())
        return nccl_tests.to_run(base, result.payload(), sizes)

    def _nccl_tests_across(self, spec: InterconnectSpec, collective: str,
                           nodes: Sequence[str], sizes: Sequence[int]) -> CollectiveRun | None:
        """A job over several nodes by nccl-tests' MPI build: one task per GPU (-g 1),
        ranks_per_node on each node, started by the launcher's MPI launch (srun --mpi);
        None where the launcher offers none."""
        assert spec.nccl_tests is not None
        path = f"{spec.nccl_tests}/{nccl_tests.BINARY[collective]}"
        runs: list[dict[str, object]] = []
        simulated = False
        for first, last in nccl_tests_probe.runs(list(sizes)):
            argv = nccl_tests_probe.argv(path, first, last, 1, spec.warmup, spec.iterations,
                                         None)
            got = self.launcher.run_program(argv, nodes, spec.ranks_per_node, spec.timeout_s)
            if got is None:
                return None
            simulated = simulated or got.simulated
            runs.append({"argv": argv, "exit_code": got.exit_code, "stdout": got.first_task,
                         "stderr_tail": got.stderr_tail, "json": None})
            if got.exit_code != 0:
                break
        base = CollectiveRun(collective, spec.backend, tuple(nodes), spec.ranks_per_node,
                             simulated=simulated)
        return nccl_tests.to_run(base, {"binary": path, "runs": runs}, sizes,
                                 f"-g 1, {spec.ranks_per_node} task(s) per node started "
                                 f"as one MPI job by the launcher (srun --mpi)")

    def intra_node(self, node: str, collective: str) -> CollectiveRun:
        """The payload sweep inside `node` (all its ranks); every node's job at once."""
        spec = self.interconnect_spec()

        def compute() -> dict[str, object]:
            def one(name: str) -> CollectiveRun:
                return self.collective(collective, [name], spec.sweep())
            with ThreadPoolExecutor(max_workers=self.jobs_at_once(len(self.nodes))) as pool:
                runs = list(pool.map(one, self.nodes))
            return {name: run.to_json() for name, run in zip(self.nodes, runs, strict=True)}

        self.host_all()  # read before the measuring lock is taken (see ProbeCache.alone)
        document = self.cache.document(self._key("intra", collective), compute)
        return CollectiveRun.from_json(document[node])

    def inter_node(self, count: int, collective: str) -> CollectiveRun:
        """The payload sweep across the first `count` nodes of the spec, as one job. Those
        of them whose host probe did not answer are left out (details `left_out`: node ->
        why), the job runs over the others, when 2 or more answer: their figure is
        measured, the dead node named, where the job would have failed with no number."""
        spec = self.interconnect_spec()
        nodes = self.nodes[:count]
        self.host_all()

        def compute() -> dict[str, object]:
            silent = {node: why for node, why in self.left_out().items() if node in nodes}
            others = [node for node in nodes if node not in silent]
            if not silent or len(others) < 2:
                return self.collective(collective, nodes, spec.sweep()).to_json()
            run = self.collective(collective, others, spec.sweep())
            return replace(run, details={**run.details, "left_out": silent}).to_json()

        document = self.cache.document(self._key("inter", count, collective), compute)
        return CollectiveRun.from_json(document)

    def collective_stress(self) -> StressLoop:
        """The stress level's all_reduce loop over every node of the spec, as one job; a
        node whose host probe did not answer fails it at once, named."""
        spec = self.interconnect_spec()

        def compute() -> dict[str, object]:
            host = self._silent(self.nodes)
            if host is not None:
                return StressLoop(self.nodes, spec.ranks_per_node, spec.backend,
                                  error=host.describe(), simulated=host.simulated,
                                  error_kind=NOT_ALL_NODES).to_json()
            return run_collective_stress(self.launcher, spec, self.nodes).to_json()

        self.host_all()
        return StressLoop.from_json(self.cache.document(self._key("stress"), compute))

    def latency(self) -> LatencyRun:
        """The ping-pong over every node of the spec that answers its host probe (one
        rank each), as one job, run once per run; the others are left out (left_out), as
        the slow-node search leaves them out."""
        spec = self.interconnect_spec()

        def compute() -> dict[str, object]:
            hosts = self.host_all()
            started = time.time()
            run = run_latency(self.launcher, spec, self.nodes, self.left_out(),
                              self.stopped_answering)
            return replace(run, simulated=run.simulated or any(
                result.simulated for result in hosts.values()),
                details={**run.details, "started_at": started,
                         "ended_at": time.time()}).to_json()

        if self._latency is None:
            self.host_all()  # read before the measuring lock is taken (ProbeCache.alone)
            self._latency = LatencyRun.from_json(self.cache.document(self._key("latency"),
                                                                     compute))
        return self._latency

    def latency_id(self) -> str:
        """The ping-pong's document in the run's probes/ directory (`<id>.json`)."""
        return self._key("latency")

    def search_bar(self) -> float:
        """The busbw a group of nodes must reach in the slow-node search (bytes/s): the
        node_network clause's bound."""
        clause, _ = required_busbw(self.interconnect_spec(), 2, "node_network")
        return clause.requirement.bound.value

    def search_ceiling(self) -> float:
        """The most busbw a pair of nodes can reach (bytes/s): plausible.CEILING_FACTOR x
        the theoretical rate of the spec's links (no bound where it declares none)."""
        theory = theoretical(self.interconnect_spec(), 2)
        return plausible.CEILING_FACTOR * theory.bytes_per_s if theory else math.inf

    def search_id(self) -> str:
        """The slow-node search's id: it is stored once per run as `<id>.json` in the
        run's probes/ directory, and each node's case refers to it by this id."""
        return self._key("search", self.interconnect_spec().search_payload)

    def node_search(self) -> NodeSearch:
        """Pairs, then suspects with known-good nodes (all_reduce at search_payload); run
        once per run, read once per process."""
        if self._search is not None:
            return self._search
        spec = self.interconnect_spec()
        size = spec.search_payload

        crashed: dict[frozenset[str], str] = {}  # a group whose job crashed in our code

        def measure(groups: list[list[str]]) -> list[float]:
            def one(group: list[str]) -> float:
                run = self.collective("all_reduce", group, [size])
                if run.crashed:
                    crashed[frozenset(group)] = run.error
                point = run.at(size) if run.ok else None
                return point.busbw if point is not None else math.nan
            with ThreadPoolExecutor(max_workers=self.jobs_at_once(len(groups))) as pool:
                return list(pool.map(one, groups))

        hosts = self.host_all()
        # a node whose host probe failed is left out: paired, it would fail its partner
        simulated = any(result.simulated for result in hosts.values())
        document = self.cache.document(
            self.search_id(),
            lambda: replace(with_crashes(find_slow_nodes(
                self.nodes, measure, self.search_bar(), leave_out=self.left_out(),
                ceiling=self.search_ceiling()), crashed),
                simulated=simulated).to_json())
        self._search = NodeSearch.from_json(document)
        return self._search


    def rail_searches(self) -> rails.RailSearches:
        """The slow-node search on each rail alone (measure/rails.py), once per run."""
        if self._rails is None:
            self._rails = rails.search(self)
        return self._rails

    def training(self) -> TrainingRun:
        """The training loop over every node of the spec, as one job, run once per run.
        A node whose host probe did not answer fails it at once, named (its ranks would
        otherwise leave the others waiting out the rendezvous)."""
        spec = self.spec.training
        if spec is None:
            raise ValueError("the spec has no training section")

        def compute() -> dict[str, object]:
            host = self._silent(self.nodes)
            if host is not None:
                return TrainingRun(self.nodes, spec.ranks_per_node, spec.backend,
                                   step_bound(spec), error=host.describe(),
                                   simulated=host.simulated).to_json()
            started = time.time()
            run = run_training(self.launcher, spec, self.nodes)
            return replace(run, details={**run.details, "started_at": started,
                                         "ended_at": time.time()}).to_json()

        self.host_all()  # read before the measuring lock is taken (see ProbeCache.alone)
        document = self.cache.document(document_key("training", asdict(spec)), compute)
        return TrainingRun.from_json(document)
