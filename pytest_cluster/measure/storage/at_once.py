"""What the jobs every node runs at once on a shared filesystem (the checkpoint burst,
the data loader's reads) share: the run over the nodes that answer (`everywhere`), when
they start, the token their files carry, and how a node's numbers are read."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from pytest_cluster.errors import ClusterError
from pytest_cluster.launchers.jobs import run_job
from pytest_cluster.launchers.result import ErrorKind
from pytest_cluster.measure.storage.claims import Ceiling, node_ceiling

if TYPE_CHECKING:
    from pytest_cluster.contract.model import StorageSpec
    from pytest_cluster.launchers.base import Launcher
    from pytest_cluster.launchers.jobs import JobResult, JobSpec
    from pytest_cluster.measure.prober import Prober

#: The placeholder master address of jobs whose ranks never meet (no rendezvous): no node
#: is asked for its own before the job starts.
NO_RENDEZVOUS = "127.0.0.1"
#: The error kind of every node of a phase the controller could not start (the launcher
#: raised): the tool's failure, not the nodes', so it blames none of them (verdict.NO_CULPRIT).
NOT_STARTED = "undecided"
#: On how many nodes at most the controller tries to remove what is left of a run.
REMOVE_TRIES = 3

#: How long before a phase starts the controller names its start time, by node count
#: (every node's part is launched by then), in seconds.
LEAD_S, LEAD_PER_NODE_S, LEAD_MOST_S = 3.0, 0.02, 60.0


class Measured(Protocol):
    """A run's record (checkpoint.CheckpointRun, dataloader.DataloaderRun)."""

    @property
    def simulated(self) -> bool: ...

    def to_json(self) -> Mapping[str, object]: ...


#: How a run is made: (launcher, filesystem, the nodes that answered, GPUs per node,
#: the others and why, what no node's rate may pass).
Runner = Callable[["Launcher", "StorageSpec", list[str], "int | None", dict[str, str],
                   Ceiling], Measured]


def everywhere(prober: Prober, key: str, fs: StorageSpec, run: Runner
               ) -> Mapping[str, object]:
    """`run` over every node that answers its host probe (the others, named, are its
    errors), no node's rate above storage_claims.node_ceiling, once per run: its
    document under `key`."""
    def compute() -> dict[str, object]:
        answers = prober.host_all()
        silent = {n: r.describe() for n, r in answers.items() if not r.ok}
        gpus = prober.spec.gpus.slots if prober.spec.gpus is not None else None
        nodes = [n for n in prober.nodes if n not in silent]
        found = run(prober.launcher, fs, nodes, gpus, silent, node_ceiling(prober.spec))
        simulated = found.simulated or any(r.simulated for r in answers.values())
        return {**found.to_json(), "simulated": simulated}

    prober.host_all()  # read before the measuring lock is taken (ProbeCache.alone)
    return prober.cache.document(key, compute)


def start_at(nodes: int) -> float:
    """The UNIX time a phase over `nodes` nodes starts at."""
    return time.time() + min(LEAD_MOST_S, LEAD_S + LEAD_PER_NODE_S * nodes)


def token(timeout_s: float) -> str:
    """A run's file token: when none of its phases can still run (two phases' limits and
    10 minutes for clocks that differ), and 12 random hex digits."""
    return f"{int(time.time() + 2 * timeout_s + 600)}-{secrets.token_hex(6)}"


class Removed(TypedDict):
    node: str  # the node whose job removed them
    files: Any  # what its rank said it removed


class Elsewhere(TypedDict, total=False):
    """What the other nodes removed of their own: how many files, on how many nodes, or
    why not (all of them)."""

    files: int
    nodes: int
    error: str


class Removal(TypedDict, total=False):
    """What removing a run's files did: what was removed, or why nothing could be; where
    some node did not find the files it was to read (the path not the same filesystem
    on every node), what the other nodes removed of their own (`removed_elsewhere`)."""

    removed: Removed
    remove_error: str
    removed_elsewhere: Elsewhere


def remove_left(launcher: Launcher, nodes: Sequence[str], job: Callable[[str], JobSpec]
                ) -> Removal:
    """Remove what is left of a run, by `job(node)` on the first of `nodes` (in the order
    to try them: a node that did not answer last) that can, trying REMOVE_TRIES at most:
    what it removed, or why none could."""
    tried = []
    for node in nodes[:REMOVE_TRIES]:
        try:
            result = run_job(launcher, job(node))
        except (ClusterError, OSError, ValueError) as exc:
            tried.append(f"{node}: {str(exc)[:200]}")
            continue
        data = result.ranks[0].data if result.ok and result.ranks else None
        if data is not None and "error" not in data:
            return {"removed": {"node": node, "files": data.get("removed")}}
        tried.append(str(data["error"])[:200] if data else
                     result.first_failure()[:200] or f"{node}: no result")
    return {"remove_error": "; ".join(tried)}


def remove_elsewhere(launcher: Launcher, nodes: Sequence[str],
                     job: Callable[[Sequence[str]], JobSpec]) -> Removal:
    """Remove what is left of a run on each of `nodes` at once (one job, a rank each),
    where the files are not all where one node looks (a path that is not one filesystem
    on every node: each node's own would stay): how many each removed, or why not."""
    if not nodes:
        return {}
    try:
        result = run_job(launcher, job(nodes))
    except (ClusterError, OSError, ValueError) as exc:
        return {"removed_elsewhere": {"error": str(exc)[:200]}}
    said = {r.node: r.data.get("removed") for r in result.ranks
            if r.ok and r.data and "error" not in r.data}
    found: Elsewhere = {"files": sum(n for n in said.values() if isinstance(n, int)
                                     and not isinstance(n, bool) and n > 0),
                        "nodes": len(said)}
    if result.errors or len(said) < len(nodes):
        found["error"] = (result.first_failure() or "; ".join(result.errors))[:200]
    return {"removed_elsewhere": found}


def said_of(found: Sequence[tuple[str, str]], node: str) -> str:
    """What `found`'s (node, text) pairs say of `node`, joined; ''."""
    return "; ".join(text for who, text in found if who == node)


def part_errors(result: JobResult, phase: str) -> list[tuple[str, str]]:
    """Per node whose part of the job did not run, why: ('node1', 'write: job_node probe
    unreachable: ...') from run_job's 'node1: node1: job_node probe unreachable: ...'."""
    found = []
    for part in result.errors:
        node, _, why = part.partition(": ")
        found.append((node, f"{phase}: {why.removeprefix(f'{node}: ')}"))
    return found


#: The launcher's error kinds of a node that was not reached: it did not answer, or this
#: machine could not launch on it (ErrorKind.controller_side); never the filesystem's
#: fault (the others' failure is judged without it).
SILENT_KINDS = frozenset({ErrorKind.UNREACHABLE.value,
                          *(kind.value for kind in ErrorKind if kind.controller_side)})


def failed_everywhere(nodes: Sequence[str], phases: Sequence[str],
                      errors: Sequence[tuple[str, str]],
                      kinds: Sequence[tuple[str, str]]) -> str:
    """A fault of the filesystem every node shares: the first of `phases` (in the order
    they ran, each on the nodes the one before left) in which every node of `nodes` that
    answered failed (its server down, its export full, the mount missing everywhere):
    'write: n1: write: rank 0: write on /shared: No space left on device', the first
    node's error said for all. '' where some node measured, or none answered."""
    silent = {who for who, kind in kinds if kind in SILENT_KINDS}
    on = [n for n in nodes if n not in silent]
    for phase in phases:
        if not on:
            return ""
        said = [(who, text) for who, text in errors if text.startswith(f"{phase}: ")]
        failed = {who for who, _ in said}
        if all(n in failed for n in on):
            first = next(text for who, text in said if who == on[0])
            return f"{on[0]}: {first}"
        on = [n for n in on if n not in failed]
    return ""


def not_shared(reads: Iterable[tuple[str, str, bool]]) -> set[str]:
    """The nodes whose view of the filesystem is not the others' (its mount missing: a
    local directory in its place), from who read whose file and whether it was there
    (reader, writer, missing): no other node found the files it wrote, and it found none
    of theirs. Where that is every node, nothing singles one out (the filesystem's own
    fault, or two nodes that cannot tell which): none."""
    wrote: dict[str, list[bool]] = {}
    read: dict[str, list[bool]] = {}
    for reader, writer, missing in reads:
        if reader != writer:
            wrote.setdefault(writer, []).append(missing)
            read.setdefault(reader, []).append(missing)
    found = {node for node, seen in wrote.items()
             if all(seen) and read.get(node) and all(read[node])}
    return set() if found >= set(wrote) | set(read) else found
