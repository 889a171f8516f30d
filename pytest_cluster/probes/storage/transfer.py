"""The write and the uncached read of the test file, through one descriptor on a file no
name keeps alive."""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
import time

from .parts import _part

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import Transfer
    from .workspace import Workspace


BLOCK = 16 * 2**20
MEMORY_FILESYSTEMS = {"tmpfs", "ramfs", "devtmpfs", "hugetlbfs"}


# -- the measurements ---------------------------------------------------------------------

def open_unlinked(workspace: Workspace) -> tuple[int, str]:
    """A read-write descriptor on a new file in the tested directory that no name keeps
    alive, and how it was made."""
    tmpfile = getattr(os, "O_TMPFILE", 0)
    reason = "not on this platform"
    if tmpfile:
        try:
            return os.open(workspace.path, os.O_RDWR | tmpfile, 0o600), \
                "O_TMPFILE: the file never had a name"
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                raise
            reason = exc.strerror or str(exc)
    fd = os.open(workspace.named_data, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                 0o600)
    try:
        os.unlink(workspace.named_data)
    except OSError:
        os.close(fd)
        raise
    return fd, f"created and unlinked at once (O_TMPFILE refused: {reason})"


def _block_source() -> bytes:
    # Random data so that compressing or deduplicating filesystems cannot cheat.
    return os.urandom(BLOCK)


def write_file(fd: int, size: int) -> Transfer:
    block = bytearray(_block_source())
    written = 0
    start = time.perf_counter()
    while written < size:
        block[:8] = written.to_bytes(8, "little")  # no two blocks alike; checked on read
        chunk = memoryview(block)[: min(BLOCK, size - written)]
        while chunk:
            done = os.write(fd, chunk)
            chunk = chunk[done:]
            written += done
    os.fsync(fd)
    seconds = time.perf_counter() - start
    return {"bytes": written, "seconds": seconds, "bytes_per_s": written / seconds,
            "method": f"sequential {BLOCK // 2**20} MiB writes, fsync before the clock stops"}


def _read_all(fd: int, buffer: mmap.mmap) -> tuple[int, int | None]:
    """Bytes read to the end, and the offset of the first block whose stamp is wrong."""
    total, wrong = 0, None
    while True:
        count = os.readv(fd, [buffer])
        if count <= 0:
            return total, wrong
        if total % BLOCK == 0 and count >= 8 and wrong is None \
                and buffer[:8] != total.to_bytes(8, "little"):
            wrong = total
        total += count


def evict(fd: int, filesystem: str | None) -> str | None:
    """Drop the file's pages from the page cache: how, or None if it cannot be done."""
    if filesystem in MEMORY_FILESYSTEMS:
        return f"{filesystem} is memory-backed: RAM is the storage itself"
    if not hasattr(os, "posix_fadvise"):
        return None
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    return "posix_fadvise(DONTNEED) evicted the file from the page cache first"


def _direct(fd: int, on: bool) -> None:
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    direct = getattr(os, "O_DIRECT", 0)
    if not direct:
        raise OSError(errno.EINVAL, "no O_DIRECT on this platform")
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | direct if on else flags & ~direct)


def read_file(fd: int, size: int, filesystem: str | None) -> Transfer:
    """Read the written file back through `fd` without the page cache: O_DIRECT, else
    after evicting its pages."""
    buffer = mmap.mmap(-1, BLOCK)  # page aligned, as O_DIRECT needs
    try:
        method: str | None = "O_DIRECT"
        try:
            _direct(fd, True)
        except OSError:
            method = evict(fd, filesystem)
        if method is None:
            return {"error": "cannot bypass the page cache here (no O_DIRECT, no fadvise)"}
        os.lseek(fd, 0, os.SEEK_SET)
        start = time.perf_counter()
        try:
            total, wrong = _read_all(fd, buffer)
        except OSError as exc:
            if method != "O_DIRECT" or exc.errno != errno.EINVAL:
                raise
            _direct(fd, False)
            method = evict(fd, filesystem)
            if method is None:
                return {"error": "O_DIRECT reads refused and no fadvise to evict the file"}
            os.lseek(fd, 0, os.SEEK_SET)
            start = time.perf_counter()
            total, wrong = _read_all(fd, buffer)
        seconds = time.perf_counter() - start
    finally:
        buffer.close()
    if total != size:
        return {"error": f"read back {total} of the {size} bytes written"}
    if wrong is not None:
        return {"error": f"read back other bytes than were written (the block at offset "
                         f"{wrong}): the filesystem returned stale or wrong data"}
    return {"bytes": total, "seconds": seconds, "bytes_per_s": total / seconds,
            "method": f"sequential {BLOCK // 2**20} MiB reads; {method}; every block's "
                      "stamp checked"}


def write_and_read(workspace: Workspace, size: int, skip: list[str],
                   filesystem: str | None) -> tuple[Transfer, Transfer]:
    """The write and read parts, through one descriptor on an unlinked file."""
    try:
        fd, made = open_unlinked(workspace)
    except OSError as exc:
        reason: Transfer = {"error": f"cannot create a file in {workspace.path}: {exc.strerror}"}
        return reason, {"error": f"no test file to read: {reason['error']}"}
    try:
        written = _part(write_file, fd, size)
        if "error" not in written:
            written["method"] += f"; test file {made}"
        if "read" in skip:
            read: Transfer = {"skipped": "not in contract"}
        elif "error" in written:
            read = {"error": f"no test file to read: {written['error']}"}
        else:
            read = _part(read_file, fd, size, filesystem)
    finally:
        os.close(fd)
    return written, read
