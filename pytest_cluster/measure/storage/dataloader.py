"""A data loader's reads on a shared filesystem (storage[].dataloader), from every node at
once (probes/jobs/dataloader.py, jobs through the cluster's launcher): every worker writes its
part of a file set, then every worker reads small random blocks of the files other nodes
wrote for `duration` (IO500's random reads), then creates, stats, reads and removes
small files in a directory of its own (mdtest-hard's); a last job removes what is left.

The figures, per phase: each node's rate (its workers' operations, or bytes, over its
slowest worker's time), the aggregate (every operation over the slowest node's time) and
each node's CPU share (its workers' CPU time over their wall time: a node whose workers
are busy computing is named CPU-bound, not a slow filesystem).

A node below keeps_up x the nodes' median in a judged phase (a suspect) is measured again
before it is blamed, as the latency ping-pong re-plays a far node: a second read and
metadata job on the suspects and as many nodes nearest the median (`again`, `retested`),
reading the same file set. A suspect is slow only when it is below keeps_up x the median
of the nodes measured beside it the second time too (`slow`): a node a passing load slowed
once (a busy CPU, another job's reads) is not blamed. Where its second job has no figure
of it, the first stands, said.

The file set is what the spec says: each worker writes `size_per_node` / workers (whole
pages; `file_bytes`), never more, so a node writes at most `size_per_node`.

A worker's figures are claims, checked against what the controller asked before any
enters a median or an aggregate (each failure is its node's bad output, naming what was
wrong): its file set's bytes as asked; no more bytes read than its reads of `read_size`;
a read phase no shorter than `duration`; a metadata test of exactly 4 x `metadata_files`
operations; at most one operation a microsecond (storage_claims.MOST_WORKER_OPS_PER_S),
and no node above its bytes ceiling (storage_claims.node_ceiling). Those checks are
dataloader_claims.py's; `run` is the data loader on a cluster (a Prober).
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, cast

from pytest_cluster.contract.reading.documents import record_of
from pytest_cluster.errors import ClusterError
from pytest_cluster.launchers.jobs import JobSpec, how_ended, reason_line, run_job
from pytest_cluster.measure.cache import document_key
from pytest_cluster.measure.storage.at_once import (
    NO_RENDEZVOUS,
    NOT_STARTED,
    SILENT_KINDS,
    Removal,
    everywhere,
    failed_everywhere,
    part_errors,
    remove_elsewhere,
    remove_left,
    said_of,
    start_at,
    token,
)
from pytest_cluster.measure.storage.claims import Ceiling, held_to_observed, over_ceiling
from pytest_cluster.measure.storage.dataloader_claims import (
    BAD,
    JUDGED,
    Asked,
    WorkerFigures,
    worker_figures,
)
from pytest_cluster.probes.jobs import job_source

if TYPE_CHECKING:
    from pytest_cluster.contract.model import StorageSpec
    from pytest_cluster.launchers.base import Launcher
    from pytest_cluster.measure.prober import Prober
    from pytest_cluster.probes.jobs.dataloader import RankData

#: A node whose workers' CPU time is this share of their wall time or more is CPU-bound.
CPU_BOUND = 0.9
#: The error kind of a node whose answer claimed what it could not have done.
BAD_OUTPUT = "bad_output"


@dataclass(frozen=True)
class NodeFigures:
    ops: int
    bytes: int
    seconds: float  # its slowest worker's
    cpu_share: float  # its workers' CPU time over their wall time

    def rate(self, what: str) -> float:
        return (self.ops if what == "ops" else self.bytes) / self.seconds


class DataloaderDetails(Removal, total=False):
    """What the evidence keeps of a run beside its figures: its token and times, and what
    removing its files did."""

    token: str
    started_at: float
    ended_at: float
    leftovers: list[dict[str, object]]  # what earlier runs left, as the write's sweep said


@dataclass(frozen=True)
class DataloaderRun:
    nodes: tuple[str, ...]  # those that took part (that answered)
    workers_per_node: int
    read_size: int
    path: str
    read: tuple[WorkerFigures, ...] = ()
    file_bytes: int = 0  # each worker's file of the set (x workers: a node's)
    metadata: tuple[WorkerFigures, ...] = ()
    errors: tuple[tuple[str, str], ...] = ()  # per node: why it has no figures
    #: per node whose part the launcher could not run, its error kind ('unreachable')
    error_kinds: tuple[tuple[str, str], ...] = ()
    method: str = ""  # how the reads bypassed the page cache
    details: DataloaderDetails = field(default_factory=DataloaderDetails)
    simulated: bool = False
    #: the suspects (below keeps_up x the median) measured again, and that second job
    #: (on them and as many nodes nearest the median); None: none was needed
    retested: tuple[str, ...] = ()
    again: DataloaderRun | None = None

    def workers(self, phase: str) -> tuple[WorkerFigures, ...]:
        return self.read if phase == "read" else self.metadata

    def node_error(self, node: str) -> str:
        return said_of(self.errors, node)

    def node_kind(self, node: str) -> str:
        """The launcher's error kind where it could not run `node`'s part; ''."""
        return next((kind for who, kind in self.error_kinds if who == node), "")

    def node_figures(self, phase: str) -> dict[str, NodeFigures]:
        """Per node whose workers all measured: its figures (made once per run object
        and phase)."""
        return self._figures[phase]

    @functools.cached_property
    def _figures(self) -> dict[str, dict[str, NodeFigures]]:
        return {phase: self._node_figures(phase) for phase in JUDGED}

    def _node_figures(self, phase: str) -> dict[str, NodeFigures]:
        mine: dict[str, list[WorkerFigures]] = {}
        for worker in self.workers(phase):
            mine.setdefault(worker.node, []).append(worker)
        found = {}
        for node, workers in mine.items():
            slowest = max(w.seconds for w in workers)
            if len(workers) != self.workers_per_node or any(w.error for w in workers) \
                    or slowest <= 0:
                continue
            wall = sum(w.seconds for w in workers)
            found[node] = NodeFigures(sum(w.ops for w in workers),
                                      sum(w.bytes for w in workers), slowest,
                                      sum(w.cpu_s for w in workers) / wall if wall else 0.0)
        return found

    def node_rate(self, phase: str, node: str, what: str = "ops") -> float | None:
        found = self.node_figures(phase).get(node)
        return found.rate(what) if found else None

    def median_rate(self, phase: str, what: str = "ops") -> float | None:
        """The nodes' median, the lower middle one where they are even (as checkpoint's
        median_rate: a liar's figure never sets the bar an honest node is held to)."""
        rates = [f.rate(what) for f in self.node_figures(phase).values()]
        return statistics.median_low(rates) if rates else None

    def aggregate(self, phase: str, what: str = "ops") -> float | None:
        """Every operation (or byte) of the phase over the slowest node's time; None
        unless every node of the run measured."""
        figures = self.node_figures(phase)
        if len(figures) != len(self.nodes) or not figures:
            return None
        total = sum(f.ops if what == "ops" else f.bytes for f in figures.values())
        return total / max(f.seconds for f in figures.values())

    def shared_fault(self) -> str:
        """A fault of the filesystem every node shares (at_once.failed_everywhere): the
        phase that failed on every node that answered (the write; or the reads, or the
        metadata test, of every node that wrote), and the first one's error; ''."""
        return next((found for phase in JUDGED if (found := failed_everywhere(
            self.nodes, ("write", phase), self.errors, self.error_kinds))), "")

    def below(self, phase: str, node: str, keeps_up: float, what: str = "ops") -> bool:
        """Whether `node` is below `keeps_up` x the nodes' median in this job's figures."""
        rate, middle = self.node_rate(phase, node, what), self.median_rate(phase, what)
        return rate is not None and bool(middle) and rate < keeps_up * (middle or 0.0)

    def suspects(self, keeps_up: float) -> list[str]:
        """The nodes below `keeps_up` x the median in a judged phase (operations, or bytes
        read), in the run's order."""
        return [n for n in self.nodes if any(
            self.below(phase, n, keeps_up, what)
            for phase, what in (("read", "ops"), ("read", "bytes"), ("metadata", "ops")))]

    def again_figure(self, phase: str, node: str,
                     what: str = "ops") -> tuple[float, float] | None:
        """`node`'s rate when measured again, and the median of the nodes measured beside
        it that were no suspects; None where it was not, or that job has no figure."""
        if self.again is None or node not in self.retested:
            return None
        rate = self.again.node_rate(phase, node, what)
        others = [r for n in self.again.nodes if n not in self.retested
                  and (r := self.again.node_rate(phase, n, what)) is not None]
        if rate is None or not others:
            return None
        return rate, statistics.median_low(others)

    def slow(self, phase: str, node: str, keeps_up: float, what: str = "ops") -> bool:
        """Below `keeps_up` x the median, and (measured again) again below `keeps_up` x
        the median of the nodes beside it; the first figure stands where the second job
        has none of it."""
        if not self.below(phase, node, keeps_up, what):
            return False
        second = self.again_figure(phase, node, what)
        return second is None or second[0] < keeps_up * second[1]

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, record: Mapping[str, object]) -> DataloaderRun:
        return record_of(cls, record)


def workers_per_node(fs: StorageSpec, gpus: int | None) -> int:
    """The spec's workers, else one per GPU (one without GPUs)."""
    assert fs.dataloader is not None
    return fs.dataloader.workers or gpus or 1


def file_bytes(size_per_node: int, workers: int) -> int:
    """Each worker's file of the set: its share of `size_per_node`, in whole pages where
    that is one at least; `workers` of them are never more than `size_per_node`."""
    share = max(1, size_per_node // workers)
    return share // 4096 * 4096 if share >= 4096 else share


def phase_job(fs: StorageSpec, nodes: Sequence[str], workers: int, phase: str, tag: str,
              start_at: float, write_nodes: Sequence[int] = ()) -> JobSpec:
    """One phase's job (its ranks never meet: no rendezvous). `write_nodes` (read): the
    write job's index of each node, where some node did not write."""
    loader = fs.dataloader
    assert loader is not None
    size = file_bytes(loader.size_per_node, workers)
    return JobSpec(nodes=tuple(nodes), program=job_source("dataloader"),
                   ranks_per_node=1 if phase == "remove" else workers,
                   args=("--phase", phase, "--path", fs.path, "--token", tag,
                         "--size", str(size), "--read-size", str(loader.read_size),
                         "--duration", f"{loader.duration_s:g}",
                         "--files", str(loader.metadata_files),
                         "--start-at", f"{start_at:.3f}", "--ranks-per-node", str(workers),
                         *(("--write-nodes", ",".join(map(str, write_nodes)))
                           if write_nodes and phase == "read" else ())),
                   init_timeout_s=min(60.0, loader.timeout_s),
                   wall_timeout_s=loader.timeout_s, master_addr=NO_RENDEZVOUS)


def _phase(launcher: Launcher, job: JobSpec, phase: str,
           details: DataloaderDetails, asked: Asked) -> tuple[
        tuple[WorkerFigures, ...], list[tuple[str, str]], list[tuple[str, str]], bool, str]:
    """A phase's workers, per node why it has none, per node the launcher's error kind (or
    `bad_output`, where its answer claimed what `asked` rules out), whether simulated, and
    how the reads bypassed the page cache; what the write's sweep found of earlier runs
    into `details`."""
    began = time.monotonic()
    result = run_job(launcher, job)
    observed = None if result.simulated else time.monotonic() - began
    leftovers = [item for r in result.ranks if r.data
                 and isinstance(listed := r.data.get("leftovers"), list)
                 for item in listed if isinstance(item, dict)]
    if leftovers:
        details["leftovers"] = leftovers[:100]
    errors = part_errors(result, phase)
    workers = over_ceiling(tuple(
        worker_figures(r.node, r.rank,  # a worker's answer: worker_figures checks it
                cast("RankData | None", r.data if r.ok else None),
                reason_line(r.stderr_tail) or how_ended(r.exit_code), phase, asked)
        for r in result.ranks), phase, asked.ceiling, BAD)
    workers = held_to_observed(workers, phase, observed, BAD)
    errors += [(w.node, f"{phase}: worker {w.rank}: {w.error}") for w in workers if w.error]
    kinds = [*result.error_kinds, *((node, BAD_OUTPUT) for node in dict.fromkeys(
        w.node for w in workers if w.error.startswith(BAD)))]
    methods = {str(r.data.get("method")) for r in result.ranks
               if r.ok and r.data and r.data.get("method")}
    return (workers, errors, kinds, result.simulated, "; ".join(sorted(methods))[:300])


def _judged(launcher: Launcher, fs: StorageSpec, run: DataloaderRun, on: list[str],
            tag: str, wrote: list[int], details: DataloaderDetails,
            asked: Asked) -> tuple[DataloaderRun, bool]:
    """The judged phases (reads, metadata) on `on` into `run`, and whether simulated."""
    simulated = False
    for phase in JUDGED:
        try:
            found, errors, kinds, sim, method = _phase(launcher, phase_job(
                fs, on, run.workers_per_node, phase, tag, start_at(len(on)), wrote), phase,
                details, asked)
        except (ClusterError, OSError, ValueError) as exc:
            found, errors, sim, method = (), [(n, f"{phase}: {exc}") for n in on], False, ""
            kinds = [(n, NOT_STARTED) for n in on]
        simulated = simulated or sim
        run = replace(run, errors=(*run.errors, *errors),
                      error_kinds=(*run.error_kinds, *kinds))
        run = replace(run, read=found, method=method) if phase == "read" \
            else replace(run, metadata=found)
    return run, simulated


def _with_references(run: DataloaderRun, suspects: list[str]) -> list[str]:
    """The suspects and as many nodes nearest the median reads, in the run's order."""
    middle = run.median_rate("read") or 0.0
    near = sorted((abs(rate - middle), n) for n in run.nodes if n not in suspects
                  and (rate := run.node_rate("read", n)) is not None)
    chosen = set(suspects) | {n for _, n in near[:len(suspects)]}
    return [n for n in run.nodes if n in chosen]


def run_dataloader(launcher: Launcher, fs: StorageSpec, nodes: Sequence[str],
                   gpus: int | None, silent: dict[str, str],
                   ceiling: Ceiling | None = None) -> DataloaderRun:
    """The file set's write on `nodes` (the others, `silent`, named), then the random
    reads and the metadata test on the nodes whose workers all wrote (reading only their
    files); the suspects (below keeps_up x the median) measured again with as many nodes
    nearest the median (`again`); then a job on one node that removes what is left, also
    when interrupted. Each worker's claims are checked against what was asked and
    `ceiling` (storage_claims.node_ceiling)."""
    loader = fs.dataloader
    assert loader is not None
    workers = workers_per_node(fs, gpus)
    size = file_bytes(loader.size_per_node, workers)
    asked = Asked(size, loader.read_size, loader.duration_s, loader.metadata_files,
                  ceiling or Ceiling())
    run = DataloaderRun(tuple(nodes), workers, loader.read_size, fs.path, file_bytes=size,
                        errors=tuple(silent.items()))
    if not nodes:
        return run
    tag = token(loader.timeout_s * 2)
    details: DataloaderDetails = {"token": tag, "started_at": time.time()}
    simulated = False
    try:
        try:
            found, errors, kinds, simulated, _ = _phase(launcher, phase_job(
                fs, nodes, workers, "write", tag, start_at(len(nodes))), "write", details,
                asked)
        except (ClusterError, OSError, ValueError) as exc:
            found, errors = (), [(n, f"write: {exc}") for n in nodes]
            kinds = [(n, NOT_STARTED) for n in nodes]
        run = replace(run, errors=(*run.errors, *errors),
                      error_kinds=(*run.error_kinds, *kinds))
        # the others read the files of the nodes that wrote
        failed = {node for node, _ in errors} | {w.node for w in found if w.error}
        on = [n for n in nodes if n not in failed]
        wrote = [nodes.index(n) for n in on] if len(on) < len(nodes) else []
        if on:
            run, sim = _judged(launcher, fs, run, on, tag, wrote, details, asked)
            simulated = simulated or sim
            suspects = run.suspects(loader.keeps_up or 0.8)
            if suspects:
                group = _with_references(run, suspects)
                again, sim = _judged(launcher, fs, DataloaderRun(
                    tuple(group), workers, run.read_size, fs.path, file_bytes=size), group,
                    tag, [nodes.index(n) for n in group], details, asked)
                simulated = simulated or sim
                run = replace(run, retested=tuple(suspects), again=again)
    finally:
        ordered = sorted(run.nodes, key=lambda n: bool(run.node_error(n)))
        removal = remove_left(launcher, ordered, lambda node: phase_job(
            fs, [node], workers, "remove", tag, 0.0))
        if any(w.missing for w in run.read):  # some files not where one node looks
            remover = removal.get("removed", {}).get("node")
            removal.update(remove_elsewhere(launcher, [
                n for n in run.nodes if n != remover and run.node_kind(n) not in SILENT_KINDS],
                lambda on: phase_job(fs, on, workers, "remove", tag, 0.0)))
        details = {**details, **removal}
    details["ended_at"] = time.time()
    return replace(run, details=details, simulated=simulated)


def document_id(prober: Prober, fs: StorageSpec) -> str:
    """The data loader run's document in the run's probes/ directory (`<id>.json`)."""
    return prober.cache.kept(("dataloader_id", fs), lambda: document_key(
        "dataloader", asdict(fs), prober.nodes))


def run(prober: Prober, fs: StorageSpec) -> DataloaderRun:
    """The data loader's reads on `fs` over every node that answers (at_once.everywhere),
    run once per run, read once per process."""
    key = document_id(prober, fs)
    return prober.cache.kept(("record", key), lambda: DataloaderRun.from_json(
        everywhere(prober, key, fs, run_dataloader)))
