"""A checkpoint burst on a shared filesystem, one rank of a distributed job (job_node
starts `--ranks-per-node` ranks on every node: one writer per GPU, as a training job's
ranks each write their shard). Standard library only; no torch.

`--phase write`: every rank waits for `--start-at` (the controller's UNIX time, so that
ranks launched over many connections start together), then writes `--size` bytes to
PATH/.pytest-cluster-ckpt-<token>-<rank> in blocks of `--block` bytes and fsyncs it. Each
block is random data that differs from every other block at every offset (one random
block per writer, turned by an offset of its own per block) with a 16-byte stamp (magic,
writer rank, block, page) at the start of every 4 KiB page: no dedup, compression or
stale copy can pass for it.

`--phase read`: every rank reads the file of the rank `--ranks-per-node` after it (the
same GPU of the next node: a file another node wrote, so this node's page cache never
held it; on a one-node job its own, its cached pages dropped first), checks every block
against what its writer wrote, then removes it.

`--phase remove`: removes every file of the token (the controller's, however the burst
ended).

Only the write(), fsync() and readinto() calls are timed (`seconds`): making and checking
the data are not. Each rank prints one JSON line: bytes, seconds, started_at and ended_at
(UNIX time of the first and last timed call), late_s (how late after --start-at it
started), cpu_s (this process's CPU time, user + system), and for a read the blocks that
were not as written.

Nothing is left behind: the token is `<expires>-<12 hex digits>`, the time after which no
phase of this burst can still run. A write stopped by SIGTERM, SIGINT or SIGHUP removes
its partial file; the reader removes what it read; the controller removes the rest; what
a SIGKILL leaves is removed by a later burst's write after its expiry (`leftovers`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import struct
import sys
import time
from types import FrameType
from typing import Any

PREFIX = ".pytest-cluster-ckpt-"
TOKEN = re.compile(r"^(?P<expires>\d{1,12})-[0-9a-f]{12}$")
NAME = re.compile(r"^(?P<token>\d{1,12}-[0-9a-f]{12})-\d{1,7}$")
PAGE = 4096
MAGIC = b"PCKP"
#: How long a rank waits for --start-at at most (a clock far off is not waited for).
MOST_WAIT_S = 300.0


def file_of(path: str, token: str, rank: int) -> str:
    return os.path.join(path, f"{PREFIX}{token}-{rank}")


def base_block(token: str, rank: int, size: int) -> bytes:
    """The writer's random block, the same on the node that checks it."""
    import hashlib  # noqa: PLC0415
    return hashlib.shake_256(f"{token}/{rank}".encode()).digest(size)


def block(base: bytes, rank: int, index: int) -> bytearray:
    """Block `index` of writer `rank`: the base turned by an offset of its own, stamped
    at the start of every page."""
    size = len(base)
    turn = (index * 7919 * 64 + 4099) % size if size > 1 else 0
    data = bytearray(base[turn:] + base[:turn])
    for page in range(0, size // PAGE):
        struct.pack_into("<4sIII", data, page * PAGE, MAGIC, rank, index, page)
    return data


def sweep(path: str, now: float) -> list[dict[str, Any]]:
    """Remove the files of bursts whose expiry has passed (a killed run's)."""
    found = []
    for name in sorted(os.listdir(path)):
        match = NAME.match(name[len(PREFIX):]) if name.startswith(PREFIX) else None
        if match is None:
            continue
        expires = int(TOKEN.match(match["token"])["expires"])  # type: ignore[index]
        if expires >= now:
            continue  # a burst still running
        full = os.path.join(path, name)
        try:
            size = os.lstat(full).st_size
            os.unlink(full)
        except FileNotFoundError:
            continue
        except OSError as exc:
            found.append({"path": full, "bytes": 0, "removed": False, "why": str(exc)})
            continue
        stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires))
        found.append({"path": full, "bytes": size, "removed": True,
                      "why": f"its checkpoint burst ended by {stamp}; the run was cut off "
                             "before removing it"})
    return found


def _wait(start_at: float) -> float:
    """Sleep until `start_at` (at most MOST_WAIT_S); how late this rank is after it (0:
    no start time given)."""
    if start_at <= 0:
        return 0.0
    ahead = start_at - time.time()
    if 0 < ahead <= MOST_WAIT_S:
        time.sleep(ahead)
    return max(0.0, time.time() - start_at)


def write(path: str, token: str, rank: int, size: int, block_size: int,
          start_at: float) -> dict[str, Any]:
    target = file_of(path, token, rank)
    base = base_block(token, rank, block_size)
    leftovers = sweep(path, time.time()) if rank == 0 else []

    def stop(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):
            os.unlink(target)
        os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    late = _wait(start_at)
    cpu0, spent, written = time.process_time(), 0.0, 0
    started = time.time()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        for index in range((size + block_size - 1) // block_size):
            data = block(base, rank, index)[:size - written]
            t0 = time.perf_counter()
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            spent += time.perf_counter() - t0
            written += len(data)
        t0 = time.perf_counter()
        os.fsync(fd)
        spent += time.perf_counter() - t0
    except OSError:
        os.close(fd)
        os.unlink(target)
        raise
    os.close(fd)
    found = {"bytes": written, "seconds": spent, "started_at": started,
             "ended_at": time.time(), "late_s": late, "cpu_s": time.process_time() - cpu0,
             "leftovers": leftovers}
    if rank == 0:  # the filesystem's size, for references given per TiB
        with contextlib.suppress(OSError):
            st = os.statvfs(path)
            found["capacity_bytes"] = st.f_blocks * st.f_frsize
    return found


def read(path: str, token: str, rank: int, writer: int, block_size: int,
         start_at: float) -> dict[str, Any]:
    source = file_of(path, token, writer)
    base = base_block(token, writer, block_size)
    late = _wait(start_at)
    cpu0, spent, done, bad, first_bad = time.process_time(), 0.0, 0, 0, None
    buffer = bytearray(block_size)
    started = time.time()
    fd = os.open(source, os.O_RDONLY)
    try:
        total = os.fstat(fd).st_size
        if hasattr(os, "posix_fadvise"):  # what this node cached of it (its own file)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        for index in range((total + block_size - 1) // block_size):
            want = min(block_size, total - done)
            view, got = memoryview(buffer)[:want], 0
            t0 = time.perf_counter()
            while got < want:
                count = os.readv(fd, [view[got:]])
                if count == 0:
                    break
                got += count
            spent += time.perf_counter() - t0
            done += got
            if got < want or buffer[:want] != block(base, writer, index)[:want]:
                bad += 1
                first_bad = index if first_bad is None else first_bad
            if got < want:
                break
    finally:
        os.close(fd)
    os.unlink(source)
    return {"bytes": done, "seconds": spent, "started_at": started, "ended_at": time.time(),
            "late_s": late, "cpu_s": time.process_time() - cpu0, "writer": writer,
            "file_bytes": total, "bad_blocks": bad, "first_bad_block": first_bad}


def remove(path: str, token: str) -> dict[str, Any]:
    removed = []
    for name in sorted(os.listdir(path)):
        match = NAME.match(name[len(PREFIX):]) if name.startswith(PREFIX) else None
        if match is not None and match["token"] == token:
            try:
                os.unlink(os.path.join(path, name))
                removed.append(name)
            except FileNotFoundError:
                pass
    return {"removed": len(removed)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--phase", choices=("write", "read", "remove"), required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--size", type=int, default=2**30)
    parser.add_argument("--block", type=int, default=16 * 2**20)
    parser.add_argument("--start-at", type=float, default=0.0)
    parser.add_argument("--ranks-per-node", type=int, default=1)
    args = parser.parse_args(argv)
    if TOKEN.match(args.token) is None or args.block % PAGE or args.block <= 0 \
            or args.size <= 0:
        sys.exit(f"bad arguments: token {args.token[:40]!r}, block {args.block}, "
                 f"size {args.size}")
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    info: dict[str, Any] = {"rank": rank, "world": world, "host": socket.gethostname(),
                            "phase": args.phase, "block": args.block}
    try:
        if args.phase == "write":
            info.update(write(args.path, args.token, rank, args.size, args.block,
                              args.start_at))
        elif args.phase == "read":
            writer = (rank + args.ranks_per_node) % world
            info.update(read(args.path, args.token, rank, writer, args.block, args.start_at))
        else:
            info.update(remove(args.path, args.token))
    except OSError as exc:
        info["error"] = f"{args.phase} on {args.path}: {exc.strerror or exc}"
    print(json.dumps(info, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
