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
against what its writer wrote (`--size` bytes: a short file's missing blocks are bad
ones), then removes it. `--write-nodes 0,1,3`: the write job's node of each node of this
job, when some node's writers failed (its files are not read; the next node is the next
that wrote).

`--phase remove`: removes every file of the token (the controller's, however the burst
ended).

The data is made (written) or checked (read) in a thread beside the one that writes or
reads, a block or two apart, so that neither waits for the other while the filesystem is
the slower. `seconds` is the I/O's whole span: from the first write() to the end of the
fsync(), or from the first read to the last; never only the calls themselves, as the
kernel goes on reading ahead or writing back between them. `wait_s` is how long of it the
I/O waited for the data to be made or checked (the CPU, not the filesystem, was then the
limit: the rate is a lower bound). Each rank prints one JSON line: bytes, seconds,
started_at and ended_at (UNIX time of the span's start and end), late_s (how late after
--start-at it started), wait_s, cpu_s (this process's CPU time, user + system), and for a
read the blocks that were not as written.

Nothing is left behind: the token is `<expires>-<12 hex digits>`, the time after which no
phase of this burst can still run. A write stopped by SIGTERM, SIGINT or SIGHUP removes
its partial file (job_node gives a rank SIGTERM before SIGKILL); the reader removes what
it read; the controller removes the rest; what a SIGKILL leaves is removed by a later
burst's write after its expiry, and said before it (`leftovers`: path, bytes, removed,
why).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import queue
import re
import signal
import socket
import struct
import sys
import threading
import time
from types import FrameType
from typing import TypedDict


class Leftover(TypedDict):
    """A file of an earlier burst, and whether the sweep removed it."""

    path: str
    bytes: int
    removed: bool
    why: str


class RankData(TypedDict, total=False):
    """What a rank prints: who it is, then its phase's figures (write, read or remove), or
    the error that ended the phase."""

    rank: int
    world: int
    host: str
    phase: str
    block: int
    bytes: int  # written, or read back
    seconds: float
    started_at: float
    ended_at: float
    late_s: float
    wait_s: float
    cpu_s: float
    leftovers: list[Leftover]  # write, rank 0
    capacity_bytes: int  # write, rank 0
    writer: int  # read: whose file
    file_bytes: int
    bad_blocks: int
    first_bad_block: int | None
    digest: str  # read, with --challenge: sample_digest of what it read
    removed: int  # remove
    error: str
    errno: str  # the error's name, 'ENOENT' (a read's file not there: not written here)
    simulated: bool  # the sim's answer says so


class Timing(TypedDict, total=False):
    """The reading thread's span, and what it waited for a free buffer."""

    started_at: float
    ended_at: float
    seconds: float
    wait_s: float
    error: Exception

PREFIX = ".pytest-cluster-ckpt-"
TOKEN = re.compile(r"^(?P<expires>\d{1,12})-[0-9a-f]{12}$")
NAME = re.compile(r"^(?P<token>\d{1,12}-[0-9a-f]{12})-\d{1,7}$")
PAGE = 4096
MAGIC = b"PCKP"
#: How long a rank waits for --start-at at most (a clock far off is not waited for).
MOST_WAIT_S = 300.0
#: Blocks made (or read) ahead of the thread that writes (or checks) them.
AHEAD = 2
#: How many pages of a file its reader's digest covers (samples).
SAMPLES = 16
CHALLENGE = re.compile(r"^[0-9a-f]{16,64}$")


def file_of(path: str, token: str, rank: int) -> str:
    return os.path.join(path, f"{PREFIX}{token}-{rank}")


def base_block(token: str, rank: int, size: int) -> bytes:
    """The writer's random block, the same on the node that checks it."""
    import hashlib  # noqa: PLC0415
    return hashlib.shake_256(f"{token}/{rank}".encode()).digest(size)


def _turn(index: int, size: int) -> int:
    """How far block `index`'s data is turned in its writer's base of `size` bytes."""
    return (index * 7919 * 64 + 4099) % size if size > 1 else 0


def block(base: bytes, rank: int, index: int) -> bytearray:
    """Block `index` of writer `rank`: the base turned by an offset of its own, stamped
    at the start of every page."""
    size = len(base)
    turn = _turn(index, size)
    data = bytearray(base[turn:] + base[:turn])
    for page in range(0, size // PAGE):
        struct.pack_into("<4sIII", data, page * PAGE, MAGIC, rank, index, page)
    return data


def samples(challenge: str, writer: int, size: int, block_size: int) -> list[tuple[int, int]]:
    """The (block, page) pairs of `writer`'s file the read-back's digest covers: up to
    SAMPLES blocks the controller's `challenge` picks (chosen after the write: no writer
    knows them), in each the page whose data starts in the first page of the writer's
    base (so that the controller makes it from the base's first two pages alone); only
    pages the file holds whole."""
    import hashlib  # noqa: PLC0415
    blocks, pages = (size + block_size - 1) // block_size, block_size // PAGE
    found = set()
    for k in range(SAMPLES if blocks else 0):
        pick = hashlib.blake2b(f"{challenge}/{writer}/{k}".encode(), digest_size=8).digest()
        index = int.from_bytes(pick, "little") % blocks
        page = -(-(block_size - _turn(index, block_size)) // PAGE) % pages
        if index * block_size + (page + 1) * PAGE <= size:
            found.add((index, page))
    return sorted(found)


def page_of(head: bytes, block_size: int, writer: int, index: int, page: int) -> bytes:
    """Page `page` of block `index` of `writer`'s file, as written, from the first
    min(block_size, 2 pages) bytes of its base (`head`): the pages `samples` picks."""
    offset = (_turn(index, block_size) + page * PAGE) % block_size
    data = bytearray((head * 2 if len(head) == block_size else head)[offset:offset + PAGE])
    struct.pack_into("<4sIII", data, 0, MAGIC, writer, index, page)
    return bytes(data)


def sample_digest(challenge: str, size: int,
                  pages: list[tuple[int, int, bytes]]) -> str:
    """The read-back's digest: the bytes read, then each sampled (block, page) and its
    bytes as read, keyed by the controller's challenge (BLAKE2b, 128 bits, hex)."""
    import hashlib  # noqa: PLC0415
    digest = hashlib.blake2b(key=challenge.encode()[:64], digest_size=16)
    digest.update(size.to_bytes(8, "little"))
    for index, page, data in pages:
        digest.update(struct.pack("<QI", index, page))
        digest.update(data)
    return digest.hexdigest()


def expected_digest(token: str, challenge: str, writer: int, size: int,
                    block_size: int) -> str:
    """The digest an honest reader of `writer`'s whole file reports (the controller's
    side: two pages of the writer's base made, not its file)."""
    head = base_block(token, writer, min(block_size, 2 * PAGE))  # SHAKE: a prefix
    return sample_digest(challenge, size, [
        (index, page, page_of(head, block_size, writer, index, page))
        for index, page in samples(challenge, writer, size, block_size)])


def sweep(path: str, now: float, token: str = "") -> list[Leftover]:
    """Remove the files of bursts whose expiry has passed (a killed run's); those of
    another burst (not `token`'s) whose expiry is to come are said, left alone (a burst
    that may still be running, or one cut off before its end)."""
    found: list[Leftover] = []
    for name in sorted(os.listdir(path)):
        match = NAME.match(name[len(PREFIX):]) if name.startswith(PREFIX) else None
        if match is None or match["token"] == token:
            continue
        expires = int(TOKEN.match(match["token"])["expires"])  # type: ignore[index]
        full = os.path.join(path, name)
        if expires >= now:  # a burst that may still be running
            with contextlib.suppress(OSError):
                found.append({"path": full, "bytes": os.lstat(full).st_size,
                              "removed": False, "why": _running(expires)})
            continue
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


def _running(expires: float) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires))
    return (f"another burst's, which may still be running until {stamp}: left alone, "
            "removed by a later burst after that")


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
          start_at: float) -> RankData:
    target = file_of(path, token, rank)
    base = base_block(token, rank, block_size)
    leftovers = sweep(path, time.time(), token) if rank == 0 else []
    count = (size + block_size - 1) // block_size
    made: queue.Queue[bytearray | Exception] = queue.Queue(AHEAD)

    def make() -> None:  # the blocks, in a thread: never in the write's span
        try:
            for index in range(count):
                made.put(block(base, rank, index)[:size - index * block_size])
        except Exception as exc:  # the writer raises it
            made.put(exc)

    def next_block() -> bytearray:
        data = made.get()
        if isinstance(data, Exception):
            raise data
        return data

    def stop(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):
            os.unlink(target)
        os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    threading.Thread(target=make, daemon=True).start()
    late = _wait(start_at)
    cpu0, waited, written = time.process_time(), 0.0, 0
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        data = next_block()
        started, t0 = time.time(), time.perf_counter()
        for index in range(count):
            if index:
                w0 = time.perf_counter()
                data = next_block()
                waited += time.perf_counter() - w0
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            written += len(data)
        os.fsync(fd)
        spent = time.perf_counter() - t0
    except Exception:
        os.close(fd)
        os.unlink(target)
        raise
    os.close(fd)
    found: RankData = {"bytes": written, "seconds": spent, "started_at": started,
             "ended_at": time.time(), "late_s": late, "wait_s": waited,
             "cpu_s": time.process_time() - cpu0, "leftovers": leftovers}
    if rank == 0:  # the filesystem's size, for references given per TiB
        with contextlib.suppress(OSError):
            st = os.statvfs(path)
            found["capacity_bytes"] = st.f_blocks * st.f_frsize
    return found


def _read_ahead(fd: int, size: int, block_size: int, free: queue.Queue[bytearray],
                full: queue.Queue[tuple[int, bytearray, int] | None],
                timing: Timing) -> None:
    """The reading thread: every block into a free buffer, handed on full (None at the
    end or at a short block); its span, and how long of it it waited for a buffer to be
    checked, into `timing`."""
    timing["started_at"], t0 = time.time(), time.perf_counter()
    try:
        for index in range((size + block_size - 1) // block_size):
            w0 = time.perf_counter()
            buffer = free.get()
            timing["wait_s"] += time.perf_counter() - w0
            want = min(block_size, size - index * block_size)
            view, got = memoryview(buffer)[:want], 0
            while got < want:
                count = os.readv(fd, [view[got:]])
                if count == 0:
                    break
                got += count
            full.put((index, buffer, got))
            if got < want:
                break
    except Exception as exc:  # the checking thread raises it
        timing["error"] = exc
    finally:
        timing["seconds"], timing["ended_at"] = time.perf_counter() - t0, time.time()
        full.put(None)


def read(path: str, token: str, rank: int, writer: int, size: int, block_size: int,
         start_at: float, challenge: str = "") -> RankData:
    """Read `writer`'s file (`size` bytes as written) in a thread, each block checked here
    while the next ones are read; with the controller's `challenge`, the digest of the
    pages it picks, as read (sample_digest)."""
    source = file_of(path, token, writer)
    picked: dict[int, list[int]] = {}
    for index, page in samples(challenge, writer, size, block_size) if challenge else ():
        picked.setdefault(index, []).append(page)
    seen: dict[tuple[int, int], bytes] = {}
    base = base_block(token, writer, block_size)
    count = (size + block_size - 1) // block_size
    late = _wait(start_at)
    free: queue.Queue[bytearray] = queue.Queue()
    for _ in range(AHEAD + 1):
        free.put(bytearray(block_size))
    full: queue.Queue[tuple[int, bytearray, int] | None] = queue.Queue()
    timing: Timing = {"wait_s": 0.0}
    cpu0, done, checked, bad, first_bad = time.process_time(), 0, 0, 0, None
    fd = os.open(source, os.O_RDONLY)
    try:
        total = os.fstat(fd).st_size
        if hasattr(os, "posix_fadvise"):  # what this node cached of it (its own file)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        thread = threading.Thread(target=_read_ahead, daemon=True,
                                  args=(fd, size, block_size, free, full, timing))
        thread.start()
        while (item := full.get()) is not None:
            index, buffer, got = item
            want = min(block_size, size - index * block_size)
            done, checked = done + got, checked + 1
            for page in picked.get(index, ()):
                if got >= (page + 1) * PAGE:
                    seen[index, page] = bytes(buffer[page * PAGE:(page + 1) * PAGE])
            if got < want or buffer[:want] != block(base, writer, index)[:want]:
                bad += 1
                first_bad = index if first_bad is None else first_bad
            free.put(buffer)
        thread.join()
    finally:
        os.close(fd)
    if "error" in timing:
        raise timing["error"]
    if checked < count:  # a short file: the blocks never read are not as written
        bad, first_bad = bad + count - checked, checked if first_bad is None else first_bad
    os.unlink(source)
    found: RankData = {
        "bytes": done, "seconds": timing["seconds"], "started_at": timing["started_at"],
        "ended_at": timing["ended_at"], "late_s": late, "wait_s": timing["wait_s"],
        "cpu_s": time.process_time() - cpu0, "writer": writer, "file_bytes": total,
        "bad_blocks": bad, "first_bad_block": first_bad}
    if challenge:
        found["digest"] = sample_digest(challenge, done, [
            (index, page, seen.get((index, page), b""))
            for index in sorted(picked) for page in picked[index]])
    return found


def remove(path: str, token: str) -> RankData:
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


def writer_of(rank: int, world: int, per_node: int, write_nodes: list[int] | None) -> int:
    """Whose file `rank` reads: the same writer of the next node (of the write job's nodes
    that wrote, `write_nodes`: the write job's index of each node of this job)."""
    nodes = write_nodes or list(range(max(1, world // per_node)))
    here, local = divmod(rank, per_node)
    return nodes[(here + 1) % len(nodes)] * per_node + local


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--phase", choices=("write", "read", "remove"), required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--size", type=int, default=2**30)
    parser.add_argument("--block", type=int, default=16 * 2**20)
    parser.add_argument("--start-at", type=float, default=0.0)
    parser.add_argument("--ranks-per-node", type=int, default=1)
    parser.add_argument("--write-nodes", type=_indexes, default=None)
    parser.add_argument("--challenge", default="")
    args = parser.parse_args(argv)
    if TOKEN.match(args.token) is None or args.block % PAGE or args.block <= 0 \
            or args.size <= 0 or (args.challenge and not CHALLENGE.match(args.challenge)):
        sys.exit(f"bad arguments: token {args.token[:40]!r}, block {args.block}, "
                 f"size {args.size}")
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    info: RankData = {"rank": rank, "world": world, "host": socket.gethostname(),
                      "phase": args.phase, "block": args.block}
    try:
        if args.phase == "write":
            info.update(write(args.path, args.token, rank, args.size, args.block,
                              args.start_at))
        elif args.phase == "read":
            info["writer"] = writer_of(rank, world, args.ranks_per_node, args.write_nodes)
            info.update(read(args.path, args.token, rank, info["writer"], args.size,
                             args.block, args.start_at, args.challenge))
        else:
            info.update(remove(args.path, args.token))
    except OSError as exc:
        info["error"] = f"{args.phase} on {args.path}: {exc.strerror or exc}"
        info["errno"] = errno.errorcode.get(exc.errno or 0, "")
    print(json.dumps(info, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
