"""A checkpoint burst on a shared filesystem (storage[].checkpoint), as MLPerf Storage's
checkpoint workload and IO500 measure one: every node's writers (one per GPU) write their
shard at once with fsync, then every writer's file is read back, uncached, by the same GPU
of the next node (probes/jobs/checkpoint/__main__.py, two jobs through the cluster's
launcher, then a third that removes what is left; where a reader did not find its file, the
path is not one filesystem on every node, and a fourth removes what each other node has of
its own).

The figures: each node's rate (its bytes over its slowest writer's time: its writers run
at once), the burst's duration (the slowest node's time) and the aggregate rate (every
byte over that duration); what a bound per node or per GPU compares is the aggregate
shared out. A node below `keeps_up` x the nodes' median holds the burst back.

A node's figures are claims, checked against what the node does not control before any
enters a median or an aggregate (each failure is that node's bad output, naming what was
wrong; its figure is left out):
- bytes: a writer wrote the `size_per_writer` bytes the controller asked, no more, no
  less; its file is proven by the reader (another node): the size it found, and a digest
  of the pages a challenge picks (chosen by the controller after the writes: no writer
  can know it) that the controller checks against the data the burst's seed (its token)
  makes. A file that read back short, long, or not at all (where its writer found the
  files it read itself and its reader is not the one without the mount) disproves its
  writer (`disproved`); its reader is then not judged on it.
- a read-back names the file the controller asked for (the writer `writer_of` gives), has
  read all of it (or, of a short file, counts its missing blocks bad), and its digest is
  the file's where it says every block was as written.
- time: no node's rate may pass its ceiling (storage_claims.node_ceiling: 10 TB/s, or 4 x
  the line rate of the NICs the spec declares): a claim of near-zero seconds is above it.
Those checks are checkpoint_claims.py's; `run` is the burst on a cluster (a Prober).
"""

from __future__ import annotations

import functools
import secrets
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, cast

from pytest_cluster.contract.reading.documents import record_of
from pytest_cluster.errors import ClusterError
from pytest_cluster.launchers.jobs import JobSpec, how_ended, reason_line, run_job
from pytest_cluster.measure.cache import document_key
from pytest_cluster.measure.plausible import FACTS
from pytest_cluster.measure.storage.at_once import (
    NO_RENDEZVOUS,
    NOT_STARTED,
    SILENT_KINDS,
    Removal,
    everywhere,
    failed_everywhere,
    not_shared,
    part_errors,
    remove_elsewhere,
    remove_left,
    said_of,
    start_at,
    token,
)
from pytest_cluster.measure.storage.checkpoint_claims import (
    BAD,
    NOT_AS_CLAIMED,
    PROVEN,
    Asked,
    RankFigures,
    figures,
)
from pytest_cluster.measure.storage.claims import Ceiling, held_to_observed, over_ceiling
from pytest_cluster.probes.jobs import job_source
from pytest_cluster.units import finite

if TYPE_CHECKING:
    from pytest_cluster.contract.model import CheckpointSpec, StorageSpec
    from pytest_cluster.launchers.base import Launcher
    from pytest_cluster.measure.prober import Prober
    from pytest_cluster.probes.jobs.checkpoint import RankData

PHASES = ("write", "read")
#: What a filesystem's size may be (plausible.FACTS: statvfs's, whole bytes).
FILESYSTEM = FACTS["storage.capacity"]
#: The error kind of a node whose answer claimed what it could not have done.
BAD_OUTPUT = "bad_output"


class CheckpointDetails(Removal, total=False):
    """What the evidence keeps of a burst beside its figures: its token and times, the
    files of earlier bursts its sweep found (as the ranks said them), the filesystem's
    capacity, and what removing its files did."""

    token: str
    started_at: float
    leftovers: list[dict[str, object]]
    capacity_bytes: float
    ended_at: float


@dataclass(frozen=True)
class CheckpointRun:
    nodes: tuple[str, ...]  # the nodes of the burst (those that answered)
    writers_per_node: int
    size_per_writer: int
    block_bytes: int
    path: str
    write: tuple[RankFigures, ...] = ()
    read: tuple[RankFigures, ...] = ()
    #: per node (and phase) why it has no figures: a node that did not answer, a job
    #: part that failed
    errors: tuple[tuple[str, str], ...] = ()
    #: per node whose part of a phase the launcher could not run, its error kind
    #: ('unreachable', 'timeout', ...: ProbeResult.error)
    error_kinds: tuple[tuple[str, str], ...] = ()
    details: CheckpointDetails = field(default_factory=CheckpointDetails)
    simulated: bool = False
    #: the writers whose files read back not as they claimed (short, long, not there):
    #: their write figures are left out, and their readers not judged on them
    disproved: tuple[str, ...] = ()

    def ranks(self, phase: str) -> tuple[RankFigures, ...]:
        return self.write if phase == "write" else self.read

    def node_error(self, node: str) -> str:
        return said_of(self.errors, node)

    def node_kind(self, node: str) -> str:
        """The launcher's error kind for `node`'s part of the burst ('' when it ran)."""
        return next((kind for who, kind in self.error_kinds if who == node), "")

    def node_figures(self, phase: str) -> dict[str, tuple[int, float]]:
        """Per node whose writers (or readers) all measured: (bytes, seconds), its
        seconds the slowest of its ranks' (made once per run object and phase)."""
        return self._figures[phase]

    @functools.cached_property
    def _figures(self) -> dict[str, dict[str, tuple[int, float]]]:
        return {phase: self._node_figures(phase) for phase in PHASES}

    def _node_figures(self, phase: str) -> dict[str, tuple[int, float]]:
        mine: dict[str, list[RankFigures]] = {}
        for rank in self.ranks(phase):
            mine.setdefault(rank.node, []).append(rank)
        return {node: (sum(r.bytes for r in ranks), max(r.seconds for r in ranks))
                for node, ranks in mine.items()
                if len(ranks) == self.writers_per_node
                and not any(r.error for r in ranks) and max(r.seconds for r in ranks) > 0
                and not (phase == "write" and node in self.disproved)}

    def node_rate(self, phase: str, node: str) -> float | None:
        found = self.node_figures(phase).get(node)
        return found[0] / found[1] if found else None

    def median_rate(self, phase: str) -> float | None:
        """The nodes' median rate, the lower of the two middle ones where they are even
        (statistics.median_low): always a node's own figure, never one that fewer than
        half the nodes claiming more could raise above every other's (with two nodes, a
        liar's figure never sets the bar the honest one is held to)."""
        rates = [b / s for b, s in self.node_figures(phase).values()]
        return statistics.median_low(rates) if rates else None

    def duration(self, phase: str) -> float | None:
        figures = self.node_figures(phase)
        return max(s for _, s in figures.values()) if figures else None

    def total_bytes(self, phase: str) -> int:
        return sum(b for b, _ in self.node_figures(phase).values())

    def aggregate(self, phase: str) -> float | None:
        """Every byte of the phase over its duration (the slowest node's time), bytes/s;
        None unless every node of the burst measured."""
        figures = self.node_figures(phase)
        if len(figures) != len(self.nodes) or not figures:
            return None
        return sum(b for b, _ in figures.values()) / max(s for _, s in figures.values())

    def start_spread(self, phase: str) -> float:
        """How far apart the ranks' first timed calls were (s, the nodes' clocks)."""
        starts = [r.started_at for r in self.ranks(phase) if not r.error]
        return max(starts) - min(starts) if starts else 0.0

    def bad(self, node: str | None = None) -> list[RankFigures]:
        """The reads with blocks not as written (of `node`, or of every node)."""
        return self._bad.get(node, []) if node is not None else \
            [r for found in self._bad.values() for r in found]

    @functools.cached_property
    def _bad(self) -> dict[str, list[RankFigures]]:
        found: dict[str, list[RankFigures]] = {}
        for rank in self.read:
            if rank.bad_blocks:
                found.setdefault(rank.node, []).append(rank)
        return found

    def shared_fault(self) -> str:
        """A fault of the filesystem every node shares (at_once.failed_everywhere): the
        phase that failed on every node that answered, and the first one's error; ''."""
        return failed_everywhere(self.nodes, PHASES, self.errors, self.error_kinds)

    def writer_node(self, writer: int) -> str:
        """The node of the write job's rank `writer` (every node of the burst wrote)."""
        index = writer // self.writers_per_node
        return self.nodes[index] if 0 <= index < len(self.nodes) else ""

    @functools.cached_property
    def not_shared(self) -> set[str]:
        """The nodes that do not see the shared filesystem the others see (at_once.
        not_shared): no reader found their files and they found no other node's."""
        return not_shared((r.node, self.writer_node(r.writer), r.errno == "ENOENT")
                          for r in self.read if r.writer >= 0)

    def unseen(self, node: str) -> list[str]:
        """Where every read of `node` that failed did not find its file, written on a
        node that does not see the shared filesystem: those nodes (the files were never
        written where `node` looks; `node` is not judged on them). [] otherwise."""
        failed = [r for r in self.read if r.node == node and r.error]
        writers = {self.writer_node(r.writer) for r in failed}
        if not failed or node in self.not_shared \
                or not writers <= self.not_shared | set(self.disproved) \
                or any(r.errno not in ("ENOENT", NOT_AS_CLAIMED) for r in failed):
            return []
        return sorted(writers)

    def disproving(self) -> dict[str, str]:
        """The writers whose files their readers found not as claimed, and how: a file
        short or long (NOT_AS_CLAIMED), or not there (ENOENT) where the writer found the
        files it read itself and neither it nor its reader is the node without the
        shared filesystem (not_shared). First reader's words per writer."""
        found: dict[str, str] = {}
        sees = {r.node for r in self.read if r.writer >= 0 and not r.error}
        # a reader whose own file another node read back writes, and so looks, where the
        # others do (a writer whose reads were its bad output proves nothing itself)
        seen = {self.writer_node(r.writer) for r in self.read if r.writer >= 0
                and not r.error and self.writer_node(r.writer) != r.node}
        for r in self.read:
            writer = self.writer_node(r.writer) if r.writer >= 0 else ""
            if not writer or writer == r.node or writer in found:
                continue
            if r.errno == NOT_AS_CLAIMED:
                found[writer] = (f"{PROVEN}{r.error.removeprefix('read: ')} (read back on "
                                 f"{r.node})")
            elif r.errno == "ENOENT" and (writer in sees or r.node in seen) and not \
                    {writer, r.node} & self.not_shared:
                why = f"{writer} found the files it read itself" if writer in sees else \
                    f"{r.node}'s own file was read back on another node"
                found[writer] = (f"{PROVEN}writer {r.writer}'s file was not there when "
                                 f"{r.node} read it back, though {why}: its write is not "
                                 "proven")
        return found

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, record: Mapping[str, object]) -> CheckpointRun:
        return record_of(cls, record)


def writers_per_node(checkpoint: CheckpointSpec, gpus: int | None) -> int:
    """One writer per GPU (a node's GPUs write their shards at once); 1 without GPUs."""
    return gpus if gpus else 1


def size_per_writer(checkpoint: CheckpointSpec, writers: int) -> int:
    """Each writer's file: the shard per GPU, or the node's share split among its writers
    (whole 4 KiB pages)."""
    if checkpoint.per == "gpu":
        return checkpoint.size_bytes
    return max(4096, checkpoint.size_bytes // writers // 4096 * 4096)


def phase_job(fs: StorageSpec, nodes: Sequence[str], writers: int, size: int, phase: str,
              tag: str, start_at: float, write_nodes: Sequence[int] = (),
              challenge: str = "") -> JobSpec:
    """One phase's job. The ranks never meet (no rendezvous): the master address is a
    placeholder, so that no node is asked for its own before the job starts.
    `write_nodes` (read): the write job's index of each node, where some node did not
    write; `challenge` (read): what picks the pages each reader's digest covers."""
    assert fs.checkpoint is not None
    timeout = fs.checkpoint.timeout_s
    return JobSpec(nodes=tuple(nodes), program=job_source("checkpoint"),
                   ranks_per_node=writers if phase != "remove" else 1,
                   args=("--phase", phase, "--path", fs.path, "--token", tag,
                         "--size", str(size), "--block", str(fs.checkpoint.block_bytes),
                         "--start-at", f"{start_at:.3f}", "--ranks-per-node", str(writers),
                         *(("--write-nodes", ",".join(map(str, write_nodes)))
                           if write_nodes else ()),
                         *(("--challenge", challenge) if challenge else ())),
                   init_timeout_s=min(60.0, timeout), wall_timeout_s=timeout,
                   master_addr=NO_RENDEZVOUS)


def _phase(launcher: Launcher, job: JobSpec, phase: str, asked: Asked) -> tuple[
        tuple[RankFigures, ...], list[tuple[str, str]], list[tuple[str, str]], bool,
        CheckpointDetails]:
    """A phase's ranks, per node why it has none, per node the launcher's error kind where
    it could not run the node's part (or `bad_output`, where its answer claimed what
    `asked` rules out), whether simulated, and what to keep of it."""
    began = time.monotonic()
    result = run_job(launcher, job)
    observed = None if result.simulated else time.monotonic() - began
    errors = part_errors(result, phase)
    ranks = over_ceiling(tuple(
        figures(r.node, r.rank,  # a rank's answer: figures checks it
                 cast("RankData | None", r.data if r.ok else None), phase,
                 reason_line(r.stderr_tail) or how_ended(r.exit_code), asked)
        for r in result.ranks), phase, asked.ceiling, BAD)
    ranks = held_to_observed(ranks, phase, observed, BAD)
    errors += [(r.node, f"{phase}: rank {r.rank}: {r.error}") for r in ranks if r.error]
    kinds = list(result.error_kinds)
    for node in dict.fromkeys(r.node for r in ranks if r.error.startswith(BAD)):
        kinds.append((node, BAD_OUTPUT))
    leftovers = [item for r in result.ranks if r.data
                 and isinstance(listed := r.data.get("leftovers"), list)
                 for item in listed if isinstance(item, dict)]
    more: CheckpointDetails = {"leftovers": leftovers[:100]} if leftovers else {}
    capacity = next((r.data.get("capacity_bytes") for r in result.ranks
                     if r.data and r.data.get("capacity_bytes") is not None), None)
    # a node's claim, for the references per TiB: a filesystem's size (5e-324 bytes made
    # a reference of 0 GB/s, and its ratio a ZeroDivisionError in the aggregate's case)
    if FILESYSTEM.holds(capacity) and (size := finite(capacity)) is not None and size > 0:
        more["capacity_bytes"] = size
    return ranks, errors, kinds, result.simulated, more


def _remove(launcher: Launcher, fs: StorageSpec, run: CheckpointRun, tag: str) -> Removal:
    """Remove every file of the burst, on the first node that can: those whose part ran
    first (a node that did not answer is tried last)."""
    ordered = sorted(run.nodes, key=lambda n: bool(run.node_error(n)))
    removal = remove_left(launcher, ordered, lambda node: phase_job(
        fs, [node], run.writers_per_node, run.size_per_writer, "remove", tag, 0.0))
    if any(r.errno == "ENOENT" for r in run.read):  # some files not where one node looks
        remover = removal.get("removed", {}).get("node")
        others = [n for n in run.nodes if n != remover and run.node_kind(n) not in
                  SILENT_KINDS]
        removal.update(remove_elsewhere(launcher, others, lambda on: phase_job(
            fs, on, run.writers_per_node, run.size_per_writer, "remove", tag, 0.0)))
    return removal


def run_checkpoint(launcher: Launcher, fs: StorageSpec, nodes: Sequence[str],
                   gpus: int | None, silent: dict[str, str],
                   ceiling: Ceiling | None = None) -> CheckpointRun:
    """The burst over `nodes` (those of the cluster that answered; `silent`: the others
    and why): the write job; the read job on the nodes whose writers all wrote, each
    reading the next such node's files; then a job on one node that removes whatever is
    left of it, also when interrupted. Each rank's claims are checked against what was
    asked and `ceiling` (storage_claims.node_ceiling); the writers whose files read back
    not as claimed are `disproved`."""
    assert fs.checkpoint is not None
    writers = writers_per_node(fs.checkpoint, gpus)
    size = size_per_writer(fs.checkpoint, writers)
    run = CheckpointRun(tuple(nodes), writers, size, fs.checkpoint.block_bytes, fs.path,
                        errors=tuple(silent.items()))
    if not nodes:
        return run
    tag = token(fs.checkpoint.timeout_s)
    challenge = secrets.token_hex(16)  # the read's: chosen now, told after the writes
    details: CheckpointDetails = {"token": tag, "started_at": time.time()}
    simulated = False
    try:
        for phase in PHASES:
            on = list(nodes)
            wrote: list[int] = []
            if phase == "read":  # the files of the nodes that wrote them all
                on = [n for n in nodes if n in run.node_figures("write")]
                wrote = [nodes.index(n) for n in on] if len(on) < len(nodes) else []
                if not on:
                    break
            asked = Asked(size, fs.checkpoint.block_bytes, tag, ceiling or Ceiling(),
                          challenge if phase == "read" else "", writers,
                          len(on) * writers, tuple(wrote))
            try:
                ranks, errors, kinds, sim, more = _phase(launcher, phase_job(
                    fs, on, writers, size, phase, tag, start_at(len(on)), wrote,
                    asked.challenge), phase, asked)
            except (ClusterError, OSError, ValueError) as exc:
                errors = [(n, f"{phase}: {exc}") for n in on]
                kinds = [(n, NOT_STARTED) for n in on]
                ranks, sim, more = (), False, {}
            simulated = simulated or sim
            details.update(more)
            run = replace(run, errors=(*run.errors, *errors),
                          error_kinds=(*run.error_kinds, *kinds))
            run = replace(run, write=ranks) if phase == "write" else replace(run, read=ranks)
        disproving = run.disproving()
        run = replace(run, disproved=tuple(disproving),
                      errors=(*run.errors, *disproving.items()),
                      error_kinds=(*run.error_kinds,
                                   *((node, BAD_OUTPUT) for node in disproving)))
    finally:
        details = {**details, **_remove(launcher, fs, run, tag)}
    details["ended_at"] = time.time()
    return replace(run, details=details, simulated=simulated)


def document_id(prober: Prober, fs: StorageSpec) -> str:
    """The burst's document in the run's probes/ directory (`<id>.json`)."""
    return prober.cache.kept(("checkpoint_id", fs), lambda: document_key(
        "checkpoint", asdict(fs), prober.nodes))


def run(prober: Prober, fs: StorageSpec) -> CheckpointRun:
    """The checkpoint burst on `fs` over every node that answers (at_once.everywhere),
    run once per run, read once per process."""
    key = document_id(prober, fs)
    return prober.cache.kept(("record", key), lambda: CheckpointRun.from_json(
        everywhere(prober, key, fs, run_checkpoint)))
