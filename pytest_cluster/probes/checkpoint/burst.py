"""A rank's write and read: the I/O in one thread, the data made or checked in another,
a block or two apart."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import threading
import time
from types import FrameType

from .blocks import PAGE, base_block, block, sample_digest, samples
from .files import file_of, sweep

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import RankData, Timing


#: How long a rank waits for --start-at at most (a clock far off is not waited for).
MOST_WAIT_S = 300.0
#: Blocks made (or read) ahead of the thread that writes (or checks) them.
AHEAD = 2


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
