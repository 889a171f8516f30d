"""Data loader reads on a shared filesystem, one rank of a distributed job (job_node starts
`--ranks-per-node` workers on every node, as a training job's data loader workers).
Standard library only; no torch.

`--phase write`: each rank writes its part of the shared file set, `--size` bytes of
random data to PATH/.pytest-cluster-dl-<token>-<rank>, fsync'ed.

`--phase read`: every rank waits for `--start-at` (the controller's UNIX time: every node
starts together), then for `--duration` seconds reads `--read-size` bytes at a random
aligned offset of a random file written on another node (IO500's random small reads; a
one-node job reads its own node's files), one read at a time. `--write-nodes 0,1,3`: the
write job's node of each node of this job, where some node did not write its part (its
files are not read). The reads bypass this node's
page cache: O_DIRECT where the filesystem takes it, else each range's cached pages are
dropped after it is read (posix_fadvise DONTNEED); `method` says which.

`--phase metadata`: every rank, at `--start-at`, creates `--files` files of 3,901 bytes
(mdtest-hard's) in a directory of its own, stats each, reads each, and removes them:
four operations per file.

`--phase remove`: removes every file and directory of the token (the controller's,
however the run ended).

Each rank prints one JSON line: ops, bytes, seconds (the phase's wall time), cpu_s (this
process's CPU time, user + system: a node whose workers are busy computing is not a slow
filesystem), late_s (how late after --start-at it began).

Nothing is left behind: the token is `<expires>-<12 hex digits>`, the time after which no
phase can still run; a phase stopped by SIGTERM, SIGINT or SIGHUP removes what it made;
the controller removes the rest; a later run's write removes what a SIGKILL left once its
expiry has passed (`leftovers`).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import mmap
import os
import random
import re
import shutil
import signal
import socket
import sys
import time
from types import FrameType
from typing import TypedDict


class Leftover(TypedDict):
    """What an earlier run left, and whether the sweep removed it."""

    path: str
    bytes: int
    removed: bool
    why: str


class RankData(TypedDict, total=False):
    """What a rank prints: who it is, then its phase's figures (write, read, metadata or
    remove), or the error that ended the phase."""

    rank: int
    world: int
    host: str
    phase: str
    ops: int
    bytes: int
    seconds: float
    cpu_s: float
    late_s: float
    leftovers: list[Leftover]  # write, rank 0
    files: int  # read: the files it read from
    missing: list[int]  # read: the writers whose files were not there (not written here)
    method: str  # read: how the page cache was bypassed
    removed: int  # remove
    error: str
    errno: str  # the error's name, 'ENOENT'
    simulated: bool  # the sim's answer says so

PREFIX = ".pytest-cluster-dl-"
TOKEN = re.compile(r"^(?P<expires>\d{1,12})-[0-9a-f]{12}$")
NAME = re.compile(r"^(?P<token>\d{1,12}-[0-9a-f]{12})-(?:md-)?\d{1,7}$")
METADATA_FILE_BYTES = 3901
CHUNK = 2**20
MOST_WAIT_S = 300.0


def file_of(path: str, token: str, rank: int) -> str:
    return os.path.join(path, f"{PREFIX}{token}-{rank}")


def folder_of(path: str, token: str, rank: int) -> str:
    return os.path.join(path, f"{PREFIX}{token}-md-{rank}")


def _remove(target: str) -> None:
    if os.path.isdir(target) and not os.path.islink(target):
        shutil.rmtree(target, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(target)


def _on_stop(targets: list[str]) -> None:
    """SIGTERM, SIGINT, SIGHUP: remove what this rank made, then exit."""
    def stop(signum: int, _frame: FrameType | None) -> None:
        for target in targets:
            _remove(target)
        os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)


def _wait(start_at: float) -> float:
    if start_at <= 0:
        return 0.0
    ahead = start_at - time.time()
    if 0 < ahead <= MOST_WAIT_S:
        time.sleep(ahead)
    return max(0.0, time.time() - start_at)


def _size(full: str) -> int:
    """A leftover's bytes: a file's, or the files' of a directory (one level)."""
    try:
        if not os.path.isdir(full) or os.path.islink(full):
            return os.lstat(full).st_size
        with os.scandir(full) as entries:
            return sum(e.stat(follow_symlinks=False).st_size for e in entries)
    except OSError:
        return 0


def sweep(path: str, now: float, token: str = "") -> list[Leftover]:
    """Remove what runs whose expiry has passed left (a killed run's); what another run
    (not `token`'s) whose expiry is to come made is said, left alone (a run that may
    still be going)."""
    found: list[Leftover] = []
    for name in sorted(os.listdir(path)):
        match = NAME.match(name[len(PREFIX):]) if name.startswith(PREFIX) else None
        if match is None or match["token"] == token:
            continue
        expires = int(match["token"].split("-", 1)[0])
        full = os.path.join(path, name)
        if expires >= now:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires))
            found.append({"path": full, "bytes": _size(full), "removed": False,
                          "why": f"another data loader run's, which may still be going "
                                 f"until {stamp}: left alone, removed by a later run after "
                                 "that"})
            continue
        size = _size(full)
        _remove(full)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires))
        found.append({"path": full, "bytes": size, "removed": not os.path.lexists(full),
                      "why": f"its data loader run ended by {stamp}; the run was cut off "
                             "before removing it"})
    return found


def write(path: str, token: str, rank: int, size: int) -> RankData:
    target = file_of(path, token, rank)
    leftovers = sweep(path, time.time(), token) if rank == 0 else []
    _on_stop([target])
    base = os.urandom(CHUNK)
    cpu0, started, done = time.process_time(), time.perf_counter(), 0
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while done < size:
            turn = (done // CHUNK * 4099) % CHUNK
            chunk = (base[turn:] + base[:turn])[:size - done]
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
            done += len(chunk)
        os.fsync(fd)
    except OSError:
        os.close(fd)
        _remove(target)
        raise
    os.close(fd)
    return {"ops": 0, "bytes": done, "seconds": time.perf_counter() - started,
            "cpu_s": time.process_time() - cpu0, "late_s": 0.0, "leftovers": leftovers}


def _open_uncached(name: str) -> tuple[int, bool]:
    """The file opened for reads that bypass the page cache: (fd, O_DIRECT or not)."""
    direct = getattr(os, "O_DIRECT", 0)
    if direct:
        try:
            return os.open(name, os.O_RDONLY | direct), True
        except OSError:
            pass
    return os.open(name, os.O_RDONLY), False


def files_to_read(rank: int, world: int, per_node: int,
                  write_nodes: list[int] | None) -> list[int]:
    """The write job's ranks whose files `rank` reads: those of every other node that
    wrote (`write_nodes`: the write job's index of each node of this job; None: the same
    nodes), or its own node's on a one-node job."""
    nodes = write_nodes or list(range(max(1, world // per_node)))
    mine = nodes[rank // per_node]
    others = [node for node in nodes if node != mine] or [mine]
    return [node * per_node + local for node in others for local in range(per_node)]


def _indexes(text: str) -> list[int]:
    """--write-nodes: node indexes, '0,1,3'."""
    try:
        found = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not node indexes like 0,1,3: {text[:80]!r}") \
            from None
    if not found or min(found) < 0:
        raise argparse.ArgumentTypeError(f"not node indexes like 0,1,3: {text[:80]!r}")
    return found


def read(path: str, token: str, rank: int, others: list[int], read_size: int,
         duration: float, start_at: float) -> RankData:
    opened, missing = [], []
    for other in others:
        try:
            fd, direct = _open_uncached(file_of(path, token, other))
        except FileNotFoundError:  # not written where this node looks: read the others
            missing.append(other)
            continue
        opened.append((fd, direct, os.fstat(fd).st_size))
    if not opened:
        raise FileNotFoundError(errno.ENOENT, f"none of the {len(others)} file(s) other "
                                "nodes wrote is there (No such file or directory)")
    buffer = mmap.mmap(-1, read_size)  # page-aligned, as O_DIRECT needs
    pick = random.Random(f"{token}/{rank}")  # noqa: S311 - where to read, not a secret
    late = _wait(start_at)
    cpu0, ops, done = time.process_time(), 0, 0
    started = time.perf_counter()
    end = started + duration
    try:
        while time.perf_counter() < end:
            fd, direct, size = opened[pick.randrange(len(opened))]
            blocks = max(1, size // read_size)
            offset = pick.randrange(blocks) * read_size
            got = os.preadv(fd, [buffer], offset)
            if not direct and hasattr(os, "posix_fadvise"):
                os.posix_fadvise(fd, offset, read_size, os.POSIX_FADV_DONTNEED)
            ops += 1
            done += got
        seconds = time.perf_counter() - started
    finally:
        for fd, _, _ in opened:
            os.close(fd)
    method = "O_DIRECT" if all(d for _, d, _ in opened) else \
        "page cache dropped after each read (posix_fadvise DONTNEED)"
    found: RankData = {"ops": ops, "bytes": done, "seconds": seconds,
                       "cpu_s": time.process_time() - cpu0, "late_s": late,
                       "files": len(opened), "method": method}
    if missing:
        found["missing"] = missing
    return found


def metadata(path: str, token: str, rank: int, files: int, start_at: float) -> RankData:
    folder = folder_of(path, token, rank)
    _on_stop([folder])
    payload = os.urandom(METADATA_FILE_BYTES)
    late = _wait(start_at)
    cpu0, started = time.process_time(), time.perf_counter()
    os.mkdir(folder, 0o700)
    try:
        names = [os.path.join(folder, f"f{index}") for index in range(files)]
        for name in names:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, payload)
            os.close(fd)
        for name in names:
            os.stat(name)
        for name in names:
            fd = os.open(name, os.O_RDONLY)
            os.read(fd, METADATA_FILE_BYTES)
            os.close(fd)
        for name in names:
            os.unlink(name)
    finally:
        _remove(folder)
    return {"ops": 4 * files, "bytes": files * METADATA_FILE_BYTES,
            "seconds": time.perf_counter() - started, "cpu_s": time.process_time() - cpu0,
            "late_s": late}


def remove(path: str, token: str) -> RankData:
    removed = 0
    for name in sorted(os.listdir(path)):
        match = NAME.match(name[len(PREFIX):]) if name.startswith(PREFIX) else None
        if match is not None and match["token"] == token:
            _remove(os.path.join(path, name))
            removed += 1
    return {"removed": removed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--phase", choices=("write", "read", "metadata", "remove"),
                        required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--size", type=int, default=2**28)
    parser.add_argument("--read-size", type=int, default=4096)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--start-at", type=float, default=0.0)
    parser.add_argument("--ranks-per-node", type=int, default=1)
    parser.add_argument("--write-nodes", type=_indexes, default=None)
    args = parser.parse_args(argv)
    if TOKEN.match(args.token) is None or args.read_size % 512 or args.read_size <= 0 \
            or args.size <= 0 or args.files <= 0 or not 0 < args.duration <= 86400:
        sys.exit(f"bad arguments: token {args.token[:40]!r}, read size {args.read_size}, "
                 f"size {args.size}, files {args.files}, duration {args.duration}")
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    info: RankData = {"rank": rank, "world": world, "host": socket.gethostname(),
                      "phase": args.phase}
    others = files_to_read(rank, world, args.ranks_per_node, args.write_nodes)
    try:
        if args.phase == "write":
            info.update(write(args.path, args.token, rank, args.size))
        elif args.phase == "read":
            info.update(read(args.path, args.token, rank, others, args.read_size,
                             args.duration, args.start_at))
        elif args.phase == "metadata":
            info.update(metadata(args.path, args.token, rank, args.files, args.start_at))
        else:
            info.update(remove(args.path, args.token))
    except OSError as exc:
        info["error"] = f"{args.phase} on {args.path}: {exc.strerror or exc}"
        info["errno"] = errno.errorcode.get(exc.errno or 0, "")
        if args.phase == "read" and exc.errno == errno.ENOENT:
            info["missing"] = others
    print(json.dumps(info, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
