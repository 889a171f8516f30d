"""Storage clauses per node and filesystem: capacity, free space, write, read, metadata
rate (each a field of the storage probe's payload compared with the clause, a test per
declared clause: `test_storage_write[node01-/data]`), `import torch` latency, and that a
shared filesystem is shared.

A fault every node sees is the filesystem's, never a node's: a clause the storage probe
could measure on no node that answered (the only node, in a one-node run) is undecided on
each; a checkpoint burst or data loader test that failed on every node fails its
aggregates as a cluster check and leaves each node's keeps_up undecided. A node whose path
is not the shared filesystem fails alone; the node that was to read its file is not judged
on it.

Files an earlier, killed run left on a tested filesystem (the probes' `leftovers`, see
probes/storage.py) are notes, not failures: each case that reads the probe records them
(`leftovers` in its evidence) and warns with a LeftoverWarning (pytest's warnings
summary), saying whether the sweep removed it and why."""

from __future__ import annotations

import statistics
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.sections.storage import Share, shared_over
from pytest_cluster.evidence.verdict.blame import NO_ANSWER_HOST
from pytest_cluster.hostlist import compress_hostlist
from pytest_cluster.measure import storage
from pytest_cluster.measure.reference import for_checkpoint
from pytest_cluster.measure.storage import checkpoint, dataloader
from pytest_cluster.measure.storage.at_once import SILENT_KINDS
from pytest_cluster.measure.storage.checkpoint import BAD_OUTPUT, PHASES
from pytest_cluster.measure.storage.dataloader import CPU_BOUND
from pytest_cluster.measure.storage.dataloader_claims import JUDGED
from pytest_cluster.run.contract_tests import check_reading, checks, table_tests
from pytest_cluster.units import Dim, format_size, format_value

if TYPE_CHECKING:
    from pytest_cluster.contract.declaration import Declaration
    from pytest_cluster.contract.model import Clause, Rule, StorageSpec
    from pytest_cluster.evidence.record.check import Evidence
    from pytest_cluster.launchers.result import ProbeResult
    from pytest_cluster.measure.cluster import Cluster
    from pytest_cluster.measure.storage.checkpoint import CheckpointRun
    from pytest_cluster.measure.storage.dataloader import DataloaderRun


class LeftoverWarning(UserWarning):
    """Files an earlier pytest-cluster run left on a tested filesystem."""


def leftover_note(node: str, item: dict[str, Any]) -> str:
    """One leftover as a sentence: what, how big, removed or not, and why."""
    what = f"{item['path']} ({format_size(item['bytes'])})"
    if item["removed"]:
        return f"{node}: removed {what}, left by an earlier pytest-cluster run: {item['why']}"
    return f"{node}: found {what}, left by an earlier pytest-cluster run: {item['why']}"


def _leftovers(evidence: Evidence, node: str, payload: dict[str, Any]) -> None:
    """Record and warn about what the probe found of earlier runs (not a failure)."""
    found: list[dict[str, Any]] = payload.get("leftovers") or []
    if payload.get("leftovers_error"):
        warnings.warn(LeftoverWarning(f"{node}: could not look for files earlier runs left: "
                                      f"{payload['leftovers_error']}"), stacklevel=2)
    if not found:
        return
    evidence.record(leftovers=found)
    for item in found:
        warnings.warn(LeftoverWarning(leftover_note(node, item)), stacklevel=2)


def burst_leftovers(evidence: Evidence, path: str, what: str,
                    found: Sequence[dict[str, Any]]) -> None:
    """What the sweep of an at-once run (the checkpoint burst, the data loader's test)
    found that earlier runs left in `path`: recorded (`leftovers`, and `leftovers_removed`
    with their count and bytes) and said in one LeftoverWarning (not a failure)."""
    if not found:
        return
    removed = [item for item in found if item.get("removed")]
    left = [item for item in found if not item.get("removed")]
    total = sum(int(item.get("bytes") or 0) for item in removed)
    evidence.record(leftovers=list(found),
                    leftovers_removed={"files": len(removed), "bytes": total})
    said = []
    if removed:
        said.append(f"removed {len(removed)} file(s) ({format_size(total)}) earlier {what}s "
                    f"left in {path}")
    if left:
        said.append(f"found {len(left)} file(s) of other {what}s in {path}: "
                    f"{left[0].get('why')}")
    warnings.warn(LeftoverWarning("; ".join(said)), stacklevel=2)


def _clause(fs: StorageSpec, key: str) -> Clause:
    clause = fs.clause(key)
    assert clause is not None, f"{declared(f'storage.{key}').name(fs.path)} is not in the contract"
    return clause


def _failure(payload: dict[str, Any], declaration: Declaration) -> str:
    """Why the storage probe could not measure `declaration`'s part on a node ('')."""
    reads = declaration.reads
    assert reads is not None
    part = payload.get(reads.part)
    return str(payload.get("error") or (part.get("error") if isinstance(part, dict)
                                         else "") or "")


def _everywhere(cluster: Cluster, filesystem: StorageSpec, declaration: Declaration,
                node: str) -> str:
    """Where the probe could measure `declaration`'s part on no node that answered (the
    path missing everywhere, every write failing with ENOSPC or EIO; the one node of a
    one-node run): the filesystem's fault, not the node's, said as its case's reason."""
    answered = {n: r.data for n in cluster.nodes
                if (r := storage.storage(cluster, n, filesystem)).ok and r.data is not None}
    why = {n: _failure(dict(data), declaration) for n, data in answered.items()}
    if node not in why or not all(why.values()):
        return ""
    where = (f"on every node that answered ({len(why)} of {len(cluster.nodes)})"
             if len(cluster.nodes) > 1 else "on the only node checked")
    return (f"cannot measure: {why[node]}, {where}: a fault of the filesystem, not "
            f"{node}'s (not judged)")


def _test(declaration: Declaration) -> Callable[..., None]:
    def test(cluster: Cluster, node: str, filesystem: StorageSpec,
             storage_result: ProbeResult, evidence: Evidence) -> None:
        clause = _clause(filesystem, declaration.key)
        payload = evidence.require(storage_result, clause)
        _leftovers(evidence, node, payload)
        shared = _everywhere(cluster, filesystem, declaration, node)
        if shared:  # undecided: NOT CHECKED, never drained (as a one-node search's)
            evidence.undecided(clause, shared, raw=payload)
        check_reading(evidence, declaration, clause, storage_result, payload)
    return test


globals().update(table_tests("storage", _test))


@checks("storage.import_torch")
def test_import_torch(filesystem: StorageSpec, import_result: ProbeResult,
                      evidence: Evidence) -> None:
    """Cold start when the page cache could be dropped (root), else the warm median."""
    clause = _clause(filesystem, "import_torch")
    data = evidence.require(import_result, clause)
    if "error" in data:
        evidence.cannot_measure(clause, data["error"], raw=data)
    cold = data.get("cold") or {}
    if cold.get("error"):
        evidence.cannot_measure(clause, f"cold run failed: {cold['error']}", raw=data)
    if "seconds" in cold:
        seconds, method = cold["seconds"], f"cold: {cold['method']}"
    else:
        seconds = data["warm"]["median_s"]
        why = cold.get("skipped", "cold run not asked for (cold_cache: false)")
        method = f"warm: median of {len(data['warm']['runs_s'])} runs ({why})"
    evidence.check(clause, seconds, result=import_result, method=method, raw=data)


@checks("storage.shared")
def test_storage_shared(cluster: Cluster, filesystem: StorageSpec, evidence: Evidence) -> None:
    """`shared: true` means it: a file written on one node is seen, byte for byte, on
    every other node."""
    writer, write, reads = storage.shared_check(cluster, filesystem)
    rule = filesystem.rule("shared")
    assert rule is not None, f"{filesystem.path} is not promised shared"
    data = evidence.require(write, rule)
    _leftovers(evidence, writer, data)
    if "error" in data:  # every node was asked in turn: the filesystem's, no node's
        evidence.cannot_measure(rule, f"no node could write the shared file, a fault of "
                                f"the filesystem they share (the last tried, {writer}: "
                                f"{data['error']})", raw=data, node="all")
    missing, different, failed, silent = [], [], [], []
    for node, result in reads.items():
        seen = result.data if result.ok else None
        if result.controller_side or (result.error is not None
                                      and result.error.value in NO_ANSWER_HOST):
            silent.append(result.describe())  # its own verdict says it
        elif seen is None or "error" in seen:
            failed.append(f"{node} ({seen['error'] if seen else result.describe()})")
        elif not seen.get("seen"):
            missing.append(node)
        elif seen.get("sha256") != data["sha256"]:
            different.append(node)
    problems = []  # each a predicate of "a file written on <writer>"
    if missing:
        problems.append(f"is not seen on {', '.join(missing)}")
    if different:
        problems.append(f"has different content on {', '.join(different)}")
    if failed:
        problems.append(f"could not be read on {', '.join(failed)}")
    seen_on = len(reads) - len(missing) - len(different) - len(failed) - len(silent)
    raw = {"writer": writer, "file": data.get("file"), "missing": missing,
           "different": different, "failed": failed, "silent": silent}
    if silent and not problems:  # as "the same on every node" is, with a node silent
        evidence.cannot_measure(
            rule, f"a file written on {writer} is seen on {seen_on} of {len(reads)} nodes; "
            f"{len(silent)} did not answer ({', '.join(silent)}), so seen on every node is "
            "not established", raw=raw, kind="not_all_nodes", node="all")
    if silent:
        problems.append(f"did not answer on {', '.join(silent)}")
    evidence.check_rule(
        rule, not problems, f"seen on {seen_on} of {len(reads)} nodes", node="all",
        result=write, problem=f"a file written on {writer} " + "; ".join(problems),
        method=f"1 MiB of random data written and fsync'ed on {writer}, SHA-256 compared on "
               "every node", raw=raw)


# -- the checkpoint burst: every node at once on a shared filesystem --------------------

CHECKPOINT_METHOD = (
    "{writers} writer(s) per node on {nodes} node(s) at once, each writing {size} in "
    "{block} blocks of stamped random data, fsync'ed; then each file read back by the same "
    "writer of the next node ({uncached}), every block checked; timed: each writer's span "
    "of writes and fsync (or reads), the data made and checked beside them in a thread; "
    "aggregate = every byte / the slowest node's time")


def _run(cluster: Cluster, filesystem: StorageSpec, evidence: Evidence) -> CheckpointRun:
    run = checkpoint.run(cluster, filesystem)
    evidence.saw(run)
    return run


def _checkpoint_raw(cluster: Cluster, filesystem: StorageSpec, run: CheckpointRun,
                    phase: str) -> dict[str, Any]:
    """What a case keeps of the burst: the run's document, the phase's figures and each
    node's rate (GB/s, a small cluster's only)."""
    rates = {node: b / s for node, (b, s) in run.node_figures(phase).items()}
    raw: dict[str, Any] = {
        "run": {"id": checkpoint.document_id(cluster, filesystem),
                "file": f"probes/{checkpoint.document_id(cluster, filesystem)}.json",
                "nodes": compress_hostlist(run.nodes) if run.nodes else None,
                "writers_per_node": run.writers_per_node,
                "bytes_per_writer": run.size_per_writer, "block_bytes": run.block_bytes},
        "phase": phase, "total_bytes": run.total_bytes(phase),
        "duration_s": run.duration(phase), "start_spread_s": round(run.start_spread(phase), 3),
        "median_node_bytes_per_s": run.median_rate(phase)}
    if len(rates) <= MATRIX_NODES:
        raw["node_bytes_per_s"] = rates
    if rates:
        slowest = min(rates, key=lambda n: (rates[n], n))
        raw["slowest"] = [slowest, rates[slowest]]
    return raw


#: Up to this many nodes, each case's raw keeps every node's rate.
MATRIX_NODES = 64


def format_rate(bytes_per_s: float) -> str:
    return format_value(bytes_per_s, Dim.RATE, "GB/s")


def _method(run: CheckpointRun) -> str:
    one_node = len(run.nodes) == 1
    return CHECKPOINT_METHOD.format(
        writers=run.writers_per_node, nodes=len(run.nodes),
        size=format_size(run.size_per_writer), block=format_size(run.block_bytes),
        uncached="its own, its cached pages dropped first" if one_node else
        "a file another node wrote: never in this node's page cache")


def every_node(evidence: Evidence, clause: Clause, nodes: Sequence[str],
               figures: Mapping[str, object], why: Callable[[str], str], raw: Any,
               missing_words: str, wrong: str = "", readers: Sequence[str] = ()) -> None:
    """Fail an aggregate of every node at once where some node has no figures, naming
    them and the first one's reason: not established, blaming no one; but where others
    read data back wrong (`wrong`, by `readers`), that is said first and fails them, as
    it would with every node there."""
    missing = [n for n in nodes if n not in figures]
    if not missing:
        return
    first = next((why(n) for n in missing if why(n)), "no figures")
    named = compress_hostlist(missing)
    absent = (f"{len(missing)} of {len(nodes)} node(s) {missing_words} "
              f"({first if first.startswith(f'{named}: ') else f'{named}: {first}'})")
    if wrong:
        evidence.record(culprits=compress_hostlist(readers))
        evidence.cannot_measure(clause, f"{wrong}; and {absent}", raw=raw,
                                kind="read_back_wrong", node="all")
    evidence.cannot_measure(clause, f"{absent}, so every node at once is not established",
                            raw=raw, kind="not_all_nodes", node="all")


#: What a node that does not see the shared filesystem is told (at_once.not_shared).
NOT_SHARED_WORDS = ("{node} does not see the files the other nodes wrote, nor they its "
                    "own: not the filesystem they share (its mount missing?)")


def shared_fault(evidence: Evidence, clause: Clause, fault: str, what: str,
                 raw: Any) -> None:
    """Fail an aggregate as the filesystem's own where `what` failed on every node that
    answered (`fault`, at_once.failed_everywhere): a cluster failure naming the
    filesystem and the shared cause, no node blamed."""
    if fault:
        evidence.cannot_measure(clause, f"{what} failed on every node, a fault of the "
                                f"filesystem they share: {fault}", raw=raw, node="all")


def not_its_own(evidence: Evidence, rule: Rule, node: str, kind: str, fault: str,
                what: str, unseen: Sequence[str], raw: Any) -> None:
    """A node's keeps_up is not judged where the fault is not its own (undecided: NOT
    CHECKED, never drained): `what` failed on every node that answered (`fault`), unless
    `node` itself did not answer or its answer was its bad output (`kind`: a claim it
    could not have made is its own, whatever the filesystem did); or the files it was to
    read were written on nodes that do not see the shared filesystem (`unseen`: they fail
    for it)."""
    if fault and kind not in SILENT_KINDS and kind != BAD_OUTPUT:
        evidence.undecided(rule, f"{what} failed on every node, a fault of the filesystem "
                           f"they share, not {node}'s: {fault}", raw=raw, node=node)
    if unseen:
        named = compress_hostlist(unseen)
        evidence.undecided(rule, f"the files {node} was to read were written on {named}, "
                           f"which does not see the shared filesystem or did not write "
                           f"them as it claimed (its own case says which): not {node}'s "
                           "fault, not judged", raw=raw, node=node)


def held_back(rates: dict[str, float], share: float, holds: Callable[[float], bool],
              fixed_work: bool) -> list[str]:
    """The nodes that held an aggregate back, slowest first: those below `share` x the
    nodes' median rate, and only when, at the median instead, the aggregate (`holds`
    judges it) would have met its bound; else the filesystem as a whole fell short and no
    node is to blame. `fixed_work`: every node does the same work (a checkpoint's share,
    the metadata files), so the slowest node's time sets the aggregate (nodes x the least
    rate); else every node works for the same time (sum of the rates)."""
    if not rates:
        return []
    middle = statistics.median(rates.values())
    slow = sorted((n for n, rate in rates.items() if rate < share * middle),
                  key=lambda n: (rates[n], n))
    if not slow:
        return []
    fair = [middle if n in slow else rate for n, rate in rates.items()]
    return slow if holds(len(fair) * min(fair) if fixed_work else sum(fair)) else []


def _shared(cluster: Cluster, evidence: Evidence, basis: str,
            nodes: Sequence[str]) -> Share:
    """What an aggregate of the `nodes` that took part is shared out over where its bound
    is per node or per GPU: those nodes, or their GPUs (the spec's gpus.count each);
    recorded with the bound's own basis (`basis`, `basis_nodes`, `basis_gpus`), so that a
    baseline measured on another basis converts exactly."""
    gpus = cluster.spec.gpus
    per_node = gpus.slots if gpus is not None else None
    evidence.record(basis=basis or "cluster", basis_nodes=len(nodes),
                    **({"basis_gpus": len(nodes) * per_node} if per_node else {}))
    return shared_over(basis, len(nodes), per_node)


def _over(share: Share) -> str:
    """A failure's note on the aggregate: ' over 16 GPU(s) (2 node(s) x gpus.count 8)'."""
    return f" over {share.over}" if share.per else ""


def _basis(share: Share) -> str:
    """The method's last words where a bound is per node or per GPU."""
    return f"; {share.per} = the aggregate / {share.over}" if share.per else ""


def _aggregate(cluster: Cluster, filesystem: StorageSpec, evidence: Evidence,
               phase: str) -> None:
    """The burst's aggregate rate in `phase` as its bound counts it: the cluster's, or
    shared out per node or per GPU. Failing, it names the nodes that held it back."""
    clause = _clause(filesystem, f"checkpoint.{phase}")
    promised = filesystem.checkpoint
    assert promised is not None
    run = _run(cluster, filesystem, evidence)
    burst_leftovers(evidence, filesystem.path, "checkpoint burst",
                    run.details.get("leftovers") or [])
    raw = _checkpoint_raw(cluster, filesystem, run, phase)
    total = run.aggregate(phase)
    bad = run.bad() if phase == "read" else []
    readers = sorted({r.node for r in bad})
    wrong = (f"{sum(r.bad_blocks for r in bad)} block(s) read back not as written, on "
             f"{compress_hostlist(readers)}") if bad else ""
    shared_fault(evidence, clause, run.shared_fault(), "the checkpoint burst", raw)
    every_node(evidence, clause, cluster.nodes, run.node_figures(phase), run.node_error, raw,
               f"did not {phase} their share", wrong, readers)
    assert total is not None
    basis = promised.basis_of(f"checkpoint.{phase}")
    share = _shared(cluster, evidence, basis, run.nodes)
    measured = total / share.count
    raw.update(aggregate_bytes_per_s=total, per=basis or "cluster", shared_over=share.count)
    # a bound missed is held back by the nodes below keeps_up x the median (none: the
    # filesystem as a whole); data read back wrong, by the nodes that read it
    rates = {node: b / s for node, (b, s) in run.node_figures(phase).items()}
    slow = [] if clause.requirement.holds(measured) else held_back(
        rates, promised.keeps_up or 0.8,
        lambda fair: clause.requirement.holds(fair / share.count), fixed_work=True)
    blamed = [*readers, *(n for n in slow if n not in readers)]
    if blamed:
        evidence.record(culprits=compress_hostlist(blamed))
    note = f"{format_rate(total)} aggregate{_over(share)}, " \
           f"{format_size(run.total_bytes(phase))} in {run.duration(phase) or 0:.1f} s" + (
               f"; held back by {compress_hostlist(slow)}" if slow else "")
    gpus = cluster.spec.gpus
    references = for_checkpoint(phase, basis, len(run.nodes), run.writers_per_node,
                                gpus.model if gpus is not None else None,
                                run.details.get("capacity_bytes"))
    evidence.check(clause, measured, result=None, node="all", raw=raw,
                   method=_method(run) + _basis(share), note=note, wrong=wrong,
                   references=references)


@checks("storage.checkpoint.write")
def test_storage_checkpoint_write(cluster: Cluster, filesystem: StorageSpec,
                                  evidence: Evidence) -> None:
    """Every node writes its share of a checkpoint at once (one writer per GPU), fsync'ed:
    the aggregate rate the filesystem sustained."""
    _aggregate(cluster, filesystem, evidence, "write")


@checks("storage.checkpoint.read")
def test_storage_checkpoint_read(cluster: Cluster, filesystem: StorageSpec,
                                 evidence: Evidence) -> None:
    """Every node reads back a checkpoint file another node wrote (to resume), uncached,
    every block checked: the aggregate rate."""
    _aggregate(cluster, filesystem, evidence, "read")


@checks("storage.checkpoint.keeps_up")
def test_storage_checkpoint_keeps_up(cluster: Cluster, node: str, filesystem: StorageSpec,
                                     evidence: Evidence) -> None:
    """This node wrote its share and read another's back, every block as written, at no
    less than keeps_up of the nodes' median rate: it does not hold the burst back."""
    rule = filesystem.rule("checkpoint.keeps_up")
    promised = filesystem.checkpoint
    assert rule is not None and promised is not None, "no checkpoint.keeps_up promised"
    evidence.require(cluster.host(node), rule)  # a node that does not answer says so
    run = _run(cluster, filesystem, evidence)
    raw = {phase: _checkpoint_raw(cluster, filesystem, run, phase) for phase in PHASES}
    error = run.node_error(node)
    not_its_own(evidence, rule, node, run.node_kind(node), run.shared_fault(),
                "the checkpoint burst", run.unseen(node), raw)
    if error:  # the launcher's kind where it could not run the node's part (unreachable)
        alone = f" ({NOT_SHARED_WORDS.format(node=node)})" if node in run.not_shared else ""
        evidence.cannot_measure(rule, f"the checkpoint burst on {node}: {error}{alone}",
                                raw=raw, kind=run.node_kind(node) or "job_failed", node=node)
    shown, problems = [], []
    for phase in PHASES:
        rate, middle = run.node_rate(phase, node), run.median_rate(phase)
        if rate is None or not middle:
            evidence.cannot_measure(rule, f"{node} has no {phase} figure in the burst",
                                    raw=raw, node=node)
        text = f"{phase} {format_rate(rate)} ({rate / middle:.0%} of the median " \
               f"{format_rate(middle)})"
        shown.append(text)
        if rate < promised.keeps_up * middle:
            problems.append(text)
    bad = run.bad(node)
    if bad:
        problems.append(f"{sum(r.bad_blocks for r in bad)} block(s) it read back were not "
                        f"as written (rank(s) {', '.join(str(r.rank) for r in bad)})")
    measured = "; ".join(shown)
    evidence.check_rule(rule, not problems, measured, result=None, node=node, raw=raw,
                        method=_method(run),
                        problem=f"holds the checkpoint burst back: {'; '.join(problems)} "
                                f"(keeps_up {promised.keeps_up:.0%} of the nodes' median)")


# -- the data loader's reads: every node at once on a shared filesystem ------------------

DATALOADER_METHOD = {
    "read": "{workers} worker(s) per node on {nodes} node(s) at once, each reading {size} at "
            "random aligned offsets of the files other nodes wrote, one read at a time, for "
            "{duration:g} s ({uncached}); the file set: {file} per worker, {written} per "
            "node (size_per_node {per_node}); aggregate = every read / the slowest node's "
            "time",
    "metadata": "{workers} worker(s) per node on {nodes} node(s) at once, each creating "
                "{files} files of 3,901 bytes in a directory of its own, then stat, read and "
                "remove each (4 operations a file); aggregate = every operation / the "
                "slowest node's time"}
#: Each dataloader clause: its phase and what it counts.
LOADER_CLAUSES = {"iops": ("read", "ops"), "read": ("read", "bytes"),
                  "metadata": ("metadata", "ops")}


def _loader_method(run: DataloaderRun, fs: StorageSpec, phase: str) -> str:
    loader = fs.dataloader
    assert loader is not None
    return DATALOADER_METHOD[phase].format(
        workers=run.workers_per_node, nodes=len(run.nodes), size=format_size(run.read_size),
        duration=loader.duration_s, files=loader.metadata_files,
        uncached=run.method or "page cache bypassed", file=format_size(run.file_bytes),
        written=format_size(run.file_bytes * run.workers_per_node),
        per_node=format_size(loader.size_per_node))


def _loader_raw(cluster: Cluster, fs: StorageSpec, run: DataloaderRun,
                phase: str) -> dict[str, Any]:
    figures = run.node_figures(phase)
    raw: dict[str, Any] = {
        "run": {"id": dataloader.document_id(cluster, fs),
                "file": f"probes/{dataloader.document_id(cluster, fs)}.json",
                "nodes": compress_hostlist(run.nodes) if run.nodes else None,
                "workers_per_node": run.workers_per_node, "read_size": run.read_size,
                "file_bytes_per_worker": run.file_bytes},
        "phase": phase, "median_node_ops_per_s": run.median_rate(phase)}
    if len(figures) <= MATRIX_NODES:
        raw["nodes"] = {node: {"ops_per_s": f.rate("ops"), "bytes_per_s": f.rate("bytes"),
                               "cpu_share": round(f.cpu_share, 3)}
                        for node, f in figures.items()}
    if figures:
        slowest = min(figures, key=lambda n: (figures[n].rate("ops"), n))
        raw["slowest"] = [slowest, figures[slowest].rate("ops")]
    return raw


def _cpu_bound(run: DataloaderRun, phase: str, nodes: list[str]) -> list[str]:
    figures = run.node_figures(phase)
    return [n for n in nodes if n in figures and figures[n].cpu_share >= CPU_BOUND]


def _loader_aggregate(cluster: Cluster, fs: StorageSpec, evidence: Evidence,
                      key: str) -> None:
    """The data loader's aggregate in `key` (iops, read, metadata) as its bound counts
    it: the cluster's, or shared out per node or per GPU. Failing, it names the nodes
    below keeps_up x the nodes' median, a CPU-bound one said to be CPU-bound."""
    clause = _clause(fs, f"dataloader.{key}")
    loader = fs.dataloader
    assert loader is not None
    phase, what = LOADER_CLAUSES[key]
    run = dataloader.run(cluster, fs)
    evidence.saw(run)
    burst_leftovers(evidence, fs.path, "data loader run", run.details.get("leftovers") or [])
    raw = _loader_raw(cluster, fs, run, phase)
    total = run.aggregate(phase, what)
    shared_fault(evidence, clause, run.shared_fault(), "the data loader's test", raw)
    every_node(evidence, clause, cluster.nodes, run.node_figures(phase), run.node_error, raw,
               f"have no {phase} figures")
    assert total is not None
    basis = loader.basis_of(f"dataloader.{key}")
    share = _shared(cluster, evidence, basis, run.nodes)
    measured = total / share.count
    raw.update(aggregate=total, per=basis or "cluster", shared_over=share.count)
    rates = {node: f.rate(what) for node, f in run.node_figures(phase).items()}
    slow = [] if clause.requirement.holds(measured) else held_back(
        rates, loader.keeps_up or 0.8,
        lambda fair: clause.requirement.holds(fair / share.count),
        fixed_work=phase == "metadata")
    # a node measured again and not below keeps_up beside the others then is not named
    slow = [n for n in slow if run.slow(phase, n, loader.keeps_up or 0.8, what)]
    if slow:
        evidence.record(culprits=compress_hostlist(slow))
    busy = _cpu_bound(run, phase, slow)
    note = f"{clause.requirement.show(total)} aggregate{_over(share)}" + (
        f"; held back by {compress_hostlist(slow)}" if slow else "") + (
        f" ({compress_hostlist(busy)} CPU-bound: its workers' CPU time >= "
        f"{CPU_BOUND:.0%} of their time)" if busy else "")
    evidence.check(clause, measured, result=None, node="all", raw=raw,
                   method=_loader_method(run, fs, phase) + _basis(share), note=note)


@checks("storage.dataloader.iops")
def test_storage_dataloader_iops(cluster: Cluster, filesystem: StorageSpec,
                                 evidence: Evidence) -> None:
    """Small random reads from every node at once: the operations per second."""
    _loader_aggregate(cluster, filesystem, evidence, "iops")


@checks("storage.dataloader.read")
def test_storage_dataloader_read(cluster: Cluster, filesystem: StorageSpec,
                                 evidence: Evidence) -> None:
    """Small random reads from every node at once: the bytes per second."""
    _loader_aggregate(cluster, filesystem, evidence, "read")


@checks("storage.dataloader.metadata")
def test_storage_dataloader_metadata(cluster: Cluster, filesystem: StorageSpec,
                                     evidence: Evidence) -> None:
    """Small-file metadata from every node at once: the operations per second."""
    _loader_aggregate(cluster, filesystem, evidence, "metadata")


@checks("storage.dataloader.keeps_up")
def test_storage_dataloader_keeps_up(cluster: Cluster, node: str, filesystem: StorageSpec,
                                     evidence: Evidence) -> None:
    """This node's random reads and metadata operations at no less than keeps_up of the
    nodes' median: it does not slow the others' data loaders. A node below it is measured
    again (with as many nodes nearest the median) and fails only when below keeps_up of
    theirs then too: one short sample convicts no node. Its CPU share is said beside: a
    CPU-bound node is not a slow filesystem."""
    rule = filesystem.rule("dataloader.keeps_up")
    loader = filesystem.dataloader
    assert rule is not None and loader is not None, "no dataloader.keeps_up promised"
    evidence.require(cluster.host(node), rule)
    run = dataloader.run(cluster, filesystem)
    evidence.saw(run)
    raw: dict[str, Any] = {phase: _loader_raw(cluster, filesystem, run, phase)
                           for phase in JUDGED}
    error = run.node_error(node)
    not_its_own(evidence, rule, node, run.node_kind(node), run.shared_fault(),
                "the data loader's test", (), raw)
    if error:  # the launcher's kind where it could not run the node's part (unreachable)
        evidence.cannot_measure(rule, f"the data loader's reads on {node}: {error}", raw=raw,
                                kind=run.node_kind(node) or "job_failed", node=node)
    shown, problems = [], []
    if node in run.retested and run.again is not None:  # measured again: that job's
        raw["again"] = {phase: _loader_raw(cluster, filesystem, run.again, phase)
                        for phase in JUDGED}
    for phase in JUDGED:
        mine, middle = run.node_figures(phase).get(node), run.median_rate(phase)
        if mine is None or not middle:
            evidence.cannot_measure(rule, f"{node} has no {phase} figure", raw=raw, node=node)
        rate = mine.rate("ops")
        text = (f"{phase} {format_value(rate, Dim.OPS)} ({rate / middle:.0%} of the median "
                f"{format_value(middle, Dim.OPS)}; CPU {mine.cpu_share:.0%})")
        second = run.again_figure(phase, node)
        if second is not None and run.below(phase, node, loader.keeps_up):
            again, beside = second
            text += (f", measured again {format_value(again, Dim.OPS)} ({again / beside:.0%} "
                     f"of the median {format_value(beside, Dim.OPS)} of the nodes beside it)")
        elif run.below(phase, node, loader.keeps_up) and node in run.retested:
            text += ", not measured again (the first figure stands)"
        shown.append(text)
        if run.slow(phase, node, loader.keeps_up):
            problems.append(text + (" - CPU-bound, not the filesystem" if mine.cpu_share >=
                                    CPU_BOUND else ""))
    evidence.check_rule(rule, not problems, "; ".join(shown), result=None, node=node, raw=raw,
                        method=_loader_method(run, filesystem, "read"),
                        problem=f"slows the data loaders: {'; '.join(problems)} (keeps_up "
                                f"{loader.keeps_up:.0%} of the nodes' median)")
