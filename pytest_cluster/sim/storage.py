"""A shared filesystem on simulated nodes: what the shared-file check (probes/shared_fs.py)
and the checkpoint burst's ranks (probes/jobs/checkpoint/__main__.py) would print.

Each node's client writes at CLIENT_WRITE and reads at CLIENT_READ bytes/s, shared by its
writers, times its `storage_factor` fault (a slow client); the filesystem gives every node
at most its share of `sim.storage_rate` (a slow aggregate; 0: no limit). A node with the
`storage_corrupt` fault reads back blocks that are not as written. A node with the
`storage_error` fault (ENOSPC, EIO, ENOENT, EROFS) fails every write and read with it (on
every node: the filesystem's own fault); one with `storage_unmounted` has a local
directory in its place: its writes succeed, but no other node sees its files and it sees
none of theirs (the shared-file check's writer, the first node, is taken to have the
mount). A node that `lies: storage_bytes` claims LIE_FACTOR x the bytes (and operations)
it moved, one that `lies: storage_seconds` claims it took a nanosecond, one that `lies:
read_back` claims its checkpoint ranks read back the files of writer 999 (whom no one
is); each reads and writes what an honest node does. Pure functions.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_cluster.contract.sections.sim import STORAGE_ERRORS
from pytest_cluster.probes.jobs.checkpoint import expected_digest, writer_of
from pytest_cluster.sim.cluster import LIE_FACTOR, faults_on, floored, jitter, lies

if TYPE_CHECKING:
    from pytest_cluster.contract.sections.sim_records import SimSpec
    from pytest_cluster.probes.job_node import RankEntry
    from pytest_cluster.probes.jobs import checkpoint, dataloader
    from pytest_cluster.probes.shared_fs import SharedData

#: One node's client of the shared filesystem (bytes/s): two 200 Gb/s storage NICs.
CLIENT_WRITE = 20e9
CLIENT_READ = 25e9
#: The simulated shared filesystem's size: 1 PiB.
SIM_CAPACITY = 2**50
_OPTIONS = ("--phase", "--path", "--token", "--size", "--block", "--start-at",
            "--ranks-per-node", "--write-nodes", "--challenge")


def storage_factor(sim: SimSpec, node: str) -> float:
    factors = [f.storage_factor for f in faults_on(sim, node) if f.storage_factor != 1.0]
    return floored(factors[-1]) if factors else 1.0


def corrupt(sim: SimSpec, node: str) -> bool:
    return any(f.storage_corrupt for f in faults_on(sim, node))


def storage_error(sim: SimSpec, node: str) -> str | None:
    """The error every write and read of `node`'s client fails with ('ENOSPC'); None."""
    errors = [f.storage_error for f in faults_on(sim, node) if f.storage_error]
    return errors[-1] if errors else None


def unmounted(sim: SimSpec, node: str) -> bool:
    return any(f.storage_unmounted for f in faults_on(sim, node))


#: The seconds a node that `lies: storage_seconds` claims a phase took.
LIE_SECONDS = 1e-9
#: The writer a node that `lies: read_back` claims to have read back.
LIE_WRITER = 999


def claimed(sim: SimSpec, node: str, data: checkpoint.RankData) -> None:
    """A checkpoint rank's figures as `node` reports them: a liar's bytes, seconds or the
    writer it read back as its lie says (`data` changed in place; an honest node's as
    measured)."""
    told = lies(sim, node)
    if "storage_bytes" in told and data.get("bytes"):
        data["bytes"] = int(data["bytes"] * LIE_FACTOR)
    if "storage_seconds" in told and isinstance(data.get("seconds"), float):
        data["seconds"] = LIE_SECONDS
        if isinstance(data.get("started_at"), float):
            data["ended_at"] = data["started_at"] + LIE_SECONDS
    if "read_back" in told and data.get("phase") == "read" and "writer" in data:
        data["writer"] = LIE_WRITER


def claimed_loading(sim: SimSpec, node: str, data: dataloader.RankData) -> None:
    """A data loader rank's figures as `node` reports them: a liar's bytes, operations or
    seconds as its lie says (`data` changed in place; an honest node's as measured)."""
    told = lies(sim, node)
    if "storage_bytes" in told:
        if data.get("bytes"):
            data["bytes"] = int(data["bytes"] * LIE_FACTOR)
        if data.get("ops"):
            data["ops"] = int(data["ops"] * LIE_FACTOR)
    if "storage_seconds" in told and isinstance(data.get("seconds"), float):
        data["seconds"] = LIE_SECONDS


def failed(sim: SimSpec, node: str, what: str, path: str) -> tuple[str, str] | None:
    """The error a rank of `node` prints where its client fails `what` ('write'), and
    its name; None."""
    name = storage_error(sim, node)
    if name is None:
        return None
    return f"{what} on {path}: {STORAGE_ERRORS[name]}", name


def apart(sim: SimSpec, reader: str, writer: str) -> bool:
    """Whether `reader` does not see the files `writer` wrote (either's mount missing)."""
    return reader != writer and (unmounted(sim, reader) or unmounted(sim, writer))


def node_rate(sim: SimSpec, node: str, nodes: int, phase: str) -> float:
    """What `node` writes (or reads) at while `nodes` nodes do at once, bytes/s."""
    client = (CLIENT_WRITE if phase == "write" else CLIENT_READ) * storage_factor(sim, node)
    if sim.storage_rate:
        client = min(client, sim.storage_rate / nodes)
    return client * jitter(node, phase, "storage", spread=0.02)


def shared_fs_payload(sim: SimSpec, node: str, args: Sequence[str]) -> SharedData:
    """The shared-file check: every simulated node sees the file the writer wrote."""
    mode = args[-1] if args else ""
    given = dict(zip(args[:-1:2], args[1:-1:2], strict=False))
    path, tag = given.get("--path", "/"), given.get("--token", "")
    data: SharedData = {"file": f"{path}/.pytest-cluster-shared-{tag}", "mode": mode,
                        "host": node}
    digest = hashlib.sha256(tag.encode()).hexdigest()
    error = storage_error(sim, node) if mode in ("write", "read") else None
    if error is not None:  # as the probe says it
        data["error"] = f"{mode} {data['file']}: {STORAGE_ERRORS[error]}"
    elif mode == "write":
        data.update({"leftovers": [], "sha256": digest, "bytes": 2**20})
    elif mode == "read" and unmounted(sim, node):
        data["seen"] = False
    elif mode == "read":
        data.update({"seen": True, "sha256": digest, "bytes": 2**20})
    elif mode == "remove":
        data["removed"] = True
    else:
        raise ValueError(f"not the shared-file check's arguments: {list(args)}")
    return data


def checkpoint_ranks(sim: SimSpec, nodes: Sequence[str], ranks_per_node: int,
                     args: Sequence[str]) -> list[list[RankEntry]]:
    """Every node's ranks of one phase of the checkpoint burst, as job_node reports them."""
    if len(args) % 2 or any(name not in _OPTIONS for name in args[::2]):
        raise ValueError(f"not the checkpoint's arguments: {list(args)}")
    given = dict(zip(args[::2], args[1::2], strict=True))
    phase, size = given["--phase"], int(given.get("--size", 2**30))
    writers = int(given.get("--ranks-per-node", ranks_per_node))
    world = len(nodes) * ranks_per_node
    write_nodes = [int(i) for i in given["--write-nodes"].split(",")] \
        if "--write-nodes" in given else None
    now, path = time.time(), given.get("--path", "/")
    parts: list[list[RankEntry]] = []
    for index, node in enumerate(nodes):
        ranks: list[RankEntry] = []
        for local in range(ranks_per_node):
            rank = index * ranks_per_node + local
            data: checkpoint.RankData = {"rank": rank, "world": world, "host": node,
                                         "phase": phase, "simulated": True}
            writer = writer_of(rank, world, writers, write_nodes) if phase == "read" else 0
            # the write job's node of the writer: this job's node at its index
            writer_node = nodes[(write_nodes or list(range(len(nodes)))).index(
                writer // writers)] if phase == "read" else node
            failure = failed(sim, node, phase, path)
            if failure is not None:
                data["error"], data["errno"] = failure
                if phase == "read":
                    data["writer"] = writer
            elif apart(sim, node, writer_node):
                data.update({"error": f"read on {path}: No such file or directory",
                             "errno": "ENOENT", "writer": writer})
            elif phase == "remove":
                data["removed"] = len(nodes) * writers
            else:
                seconds = size / (node_rate(sim, node, len(nodes), phase) / writers)
                data.update({"bytes": size, "seconds": seconds, "started_at": now,
                             "ended_at": now + seconds, "late_s": 0.0, "cpu_s": seconds * 0.3})
                if phase == "read":
                    block = int(given.get("--block", 2**24))
                    bad = max(1, size // block) if corrupt(sim, node) else 0
                    data.update({"writer": writer, "file_bytes": size,
                                 "bad_blocks": bad, "first_bad_block": 0 if bad else None})
                    if given.get("--challenge") and not bad:  # what it read: as written
                        data["digest"] = expected_digest(given.get("--token", ""),
                                                         given["--challenge"], writer, size,
                                                         block)
                else:
                    data["leftovers"] = []
                    if rank == 0:
                        data["capacity_bytes"] = SIM_CAPACITY
            claimed(sim, node, data)
            ranks.append({"rank": rank, "local_rank": local, "exit_code": 0,
                          "ended_at": None, "stderr_tail": "", "data": data})
        parts.append(ranks)
    return parts


#: A data loader worker's small random reads, one at a time (100 us each), and its
#: metadata operations (create, stat, read, remove) per second.
WORKER_IOPS = 10_000.0
WORKER_METADATA_OPS = 5_000.0
_LOADER_OPTIONS = ("--phase", "--path", "--token", "--size", "--read-size", "--duration",
                   "--write-nodes",
                   "--files", "--start-at", "--ranks-per-node")


def dataloader_ranks(sim: SimSpec, nodes: Sequence[str], ranks_per_node: int,
                     args: Sequence[str]) -> list[list[RankEntry]]:
    """Every node's workers of one phase of the data loader's reads, as job_node reports
    them: a slow client (`storage_factor`) makes fewer operations in the same time."""
    if len(args) % 2 or any(name not in _LOADER_OPTIONS for name in args[::2]):
        raise ValueError(f"not the data loader's arguments: {list(args)}")
    given = dict(zip(args[::2], args[1::2], strict=True))
    phase, read_size = given["--phase"], int(given.get("--read-size", 4096))
    duration, files = float(given.get("--duration", 10)), int(given.get("--files", 1000))
    path = given.get("--path", "/")
    write_nodes = [int(i) for i in given["--write-nodes"].split(",")] \
        if "--write-nodes" in given else list(range(len(nodes)))
    parts: list[list[RankEntry]] = []
    for index, node in enumerate(nodes):
        factor = storage_factor(sim, node) * jitter(node, "dataloader", spread=0.02)
        ranks: list[RankEntry] = []
        # the write job's ranks whose files this node reads: every other node's
        others = [write_nodes[i] * ranks_per_node + local for i, other in enumerate(nodes)
                  if other != node for local in range(ranks_per_node)]
        missing = [rank for rank in others if apart(
            sim, node, nodes[write_nodes.index(rank // ranks_per_node)])]
        for local in range(ranks_per_node):
            rank = index * ranks_per_node + local
            data: dataloader.RankData = {"rank": rank, "world": len(nodes) * ranks_per_node,
                                         "host": node, "phase": phase, "simulated": True}
            failure = failed(sim, node, phase, path) if phase != "remove" else None
            if failure is not None:
                data["error"], data["errno"] = failure
            elif phase == "read" and others and len(missing) == len(others):
                data.update({"error": f"read on {path}: none of the {len(others)} file(s) "
                                      "other nodes wrote is there (No such file or "
                                      "directory)", "errno": "ENOENT", "missing": missing})
            elif phase == "read":
                ops = int(WORKER_IOPS * factor * duration)
                data.update({"ops": ops, "bytes": ops * read_size, "seconds": duration,
                             "cpu_s": duration * 0.2, "late_s": 0.0, "method": "O_DIRECT"})
                if missing:
                    data["missing"] = missing
            elif phase == "metadata":
                seconds = 4 * files / (WORKER_METADATA_OPS * factor)
                data.update({"ops": 4 * files, "bytes": files * 3901, "seconds": seconds,
                             "cpu_s": seconds * 0.3, "late_s": 0.0})
            elif phase == "write":
                size = int(given.get("--size", 2**28))
                data.update({"ops": 0, "bytes": size, "seconds": size / CLIENT_WRITE,
                             "cpu_s": 0.1, "late_s": 0.0, "leftovers": []})
            else:
                data["removed"] = len(nodes) * ranks_per_node
            claimed_loading(sim, node, data)
            ranks.append({"rank": rank, "local_rank": local, "exit_code": 0,
                          "ended_at": None, "stderr_tail": "", "data": data})
        parts.append(ranks)
    return parts
