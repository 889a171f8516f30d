"""Storage probe: capacity, fsync'ed write, uncached read and metadata rate of one path.

Runs ON a node with only the standard library; shipped as a single file. Each part
reports either its numbers or {"error": reason}; nothing is made up.

Nothing it writes survives it, however it ends (issue 11):

* The write/read test file never has a name that outlives the probe: it is opened with
  O_TMPFILE on the tested directory (a file with no name at all), or, where the
  filesystem refuses O_TMPFILE (NFS, Lustre, old kernels), created as
  PATH/.pytest-cluster-<host>-<pidns>-<pid>-<random>.data and unlinked right after the
  open. The write, its fsync and the read all go through that one descriptor, so when the
  probe ends, even by SIGKILL, the kernel closes it and frees the blocks. On NFS the client
  turns an unlinked open file into a `.nfsXXXX` silly-rename and removes it when the
  file is closed, which the kernel also does for a killed process (a client that crashes
  leaves the `.nfsXXXX` to the server's usual cleanup). The read stays uncached as before:
  O_DIRECT is switched on for the descriptor (fcntl F_SETFL), else posix_fadvise
  DONTNEED drops the file's clean pages after the fsync; and every 16 MiB block read back
  must carry the stamp it was written with (the same bytes, not a stale copy).
* The metadata test needs names: it works in PATH/.pytest-cluster-<host>-<pidns>-<pid>-
  <random>/ (made only for that test), whose `owner.lock` the probe holds under an fcntl
  lock from just after the mkdir until it has emptied the directory. SIGTERM, SIGINT and
  SIGHUP (the node runner stops a probe at its timeout or at a hang-up with SIGTERM, and
  SIGKILL after a grace; Ctrl-C) remove it before the probe exits; SIGKILL cannot be
  caught, so a metadata test killed that way leaves the directory (empty files) to the
  next run's sweep.
* At start the probe sweeps PATH for entries earlier runs left (`leftovers` in its JSON:
  path, bytes, removed, why). An entry whose `owner.lock` can be locked has no live owner
  (the kernel drops a dead process's locks, and an NFS server drops a crashed client's
  when its lease ends): it is removed. One whose lock is held belongs to a probe still
  running (another node of this run on a shared filesystem) and is left alone, unreported.
  Where the filesystem has no locks, an entry of this host and PID namespace whose PID is
  gone is removed, and any other is removed when older than 24 hours, else reported and
  left in place. A directory has no `owner.lock`, and a `.data` file a name, for
  microseconds: older than ten minutes, its probe is gone. Directories of pytest-cluster
  versions before the sweep (`.pytest-cluster-XXXXXXXX` holding only `seq.bin`, the
  test file of up to io_size, and `mdtest`) record no owner: removed after 24 hours,
  reported before.
  Files of the shared-filesystem check (`.pytest-cluster-shared-*`) are the shared probe's
  to sweep.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import json
import mmap
import os
import re
import secrets
import shutil
import signal
import socket
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Any, TypedDict, TypeVar, cast

BLOCK = 16 * 2**20
MEMORY_FILESYSTEMS = {"tmpfs", "ramfs", "devtmpfs", "hugetlbfs"}
PREFIX = ".pytest-cluster-"
LOCK_NAME = "owner.lock"
#: An entry older than this has no live owner: a probe lives for its probe_timeout, and
#: an orphaned one (its node runner killed) for the length of its work.
SAFE_AGE_S = 24 * 3600
#: A directory is without its owner lock (just made, or nearly removed), and a `.data`
#: file has its name, for microseconds; older than this (generous for NFS's attribute
#: cache and clocks), its probe is gone.
UNOWNED_AGE_S = 600
OURS = re.compile(r"^\.pytest-cluster-(?P<host>[A-Za-z0-9._-]+)-(?P<ns>\d+)-(?P<pid>\d+)-"
                  r"(?P<token>[0-9a-f]{8})(?P<data>\.data)?$")
LEGACY = re.compile(r"^\.pytest-cluster-[a-z0-9_]{8}$")
LEGACY_CONTENT = {"seq.bin", "mdtest"}
SHARED = ".pytest-cluster-shared-"


def fs_type(path: str) -> str | None:
    """The type of the filesystem holding `path` (longest mount point prefix)."""
    best, best_type = "", None
    real = os.path.realpath(path)
    try:
        with open("/proc/mounts", encoding="utf-8") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) < 3:
                    continue
                mount = fields[1].replace("\\040", " ")
                inside = real == mount or real.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, best_type = mount, fields[2]
    except OSError:
        return None
    return best_type


# -- the payload: what this probe prints as its `data` -----------------------------------
# A part is its figures, {"error": reason} or {"skipped": "not in contract"}.

class Capacity(TypedDict, total=False):
    total_bytes: int
    free_bytes: int
    free_source: str
    error: str


class Leftover(TypedDict):
    """What an earlier run left, and what the sweep did with it."""

    path: str
    bytes: int
    removed: bool
    why: str


class Transfer(TypedDict, total=False):
    """The write or the read of the test file."""

    bytes: int
    seconds: float
    bytes_per_s: float
    method: str
    error: str
    skipped: str


class Metadata(TypedDict, total=False):
    files: int
    ops_per_s: float
    phase_ops_per_s: dict[str, float | None]  # create, stat, remove
    phase_seconds: dict[str, float]
    method: str
    error: str
    skipped: str


class StorageData(TypedDict, total=False):
    """The probe's payload."""

    path: str
    fs_type: str | None
    error: str
    leftovers: list[Leftover]
    leftovers_error: str
    capacity: Capacity
    write: Transfer
    read: Transfer
    metadata: Metadata
    cleaned_up: bool


class Failed(TypedDict):
    error: str


Part = TypeVar("Part", Capacity, Transfer, Metadata)


def capacity(path: str) -> Capacity:
    st = os.statvfs(path)
    return {
        "total_bytes": st.f_blocks * st.f_frsize,
        "free_bytes": st.f_bavail * st.f_frsize,
        "free_source": "statvfs f_bavail (space a non-root user can still write)",
    }


# -- what this run may leave, and how a later run tells ----------------------------------

def host_tag() -> str:
    """This host's name as it appears in our entries' names."""
    return re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname()) or "unknown"


def pid_namespace() -> int:
    """The inode of this process's PID namespace (0 if unknown): a PID means the same
    process only on the same host in the same namespace."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


class Workspace:
    """The names this probe may create under `path`, decided before anything is made, so
    that a signal handler (or a later run) can remove whatever exists of them."""

    def __init__(self, path: str) -> None:
        name = f"{PREFIX}{host_tag()}-{pid_namespace()}-{os.getpid()}-{secrets.token_hex(4)}"
        self.path = path
        self.directory = os.path.join(path, name)
        self.named_data = self.directory + ".data"
        self._lock: int | None = None

    def make_directory(self) -> str:
        """Create the directory and hold its owner lock (see the module docstring)."""
        os.mkdir(self.directory, 0o700)
        self._lock = os.open(os.path.join(self.directory, LOCK_NAME),
                             os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        with contextlib.suppress(OSError):  # no locks here: the sweep goes by PID and age
            fcntl.lockf(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return self.directory

    def remove(self) -> bool:
        """Remove everything of ours (see remove_tree). True if nothing is left."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.named_data)
        remove_tree(self.directory)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
        return not (os.path.lexists(self.directory) or os.path.lexists(self.named_data))


def remove_tree(path: str) -> bool:
    """Remove a file, or a directory with its owner lock last, so that no sweep sees the
    directory unowned while it is being emptied. True if this call removed `path`."""
    try:
        if not os.path.isdir(path) or os.path.islink(path):
            os.unlink(path)
            return True
        entries = sorted(os.listdir(path), key=lambda entry: entry == LOCK_NAME)
        for entry in entries:
            inner = os.path.join(path, entry)
            if os.path.isdir(inner) and not os.path.islink(inner):
                shutil.rmtree(inner, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(inner)
        os.rmdir(path)
    except OSError:  # gone meanwhile (another sweep), or not ours to remove
        return False
    return True


def _size(path: str) -> int:
    """Bytes in the files under `path` (the entry itself if a file)."""
    try:
        if not os.path.isdir(path) or os.path.islink(path):
            return os.lstat(path).st_size
    except OSError:
        return 0
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _ago(seconds: float) -> str:
    if seconds >= 7200:
        return f"{seconds / 3600:.0f} h"
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{max(seconds, 0):.0f} s"


def _pid_gone(match: re.Match[str]) -> bool | None:
    """Whether the owner's PID is gone: None when it is another host's or namespace's."""
    if match["host"] != host_tag() or int(match["ns"]) != pid_namespace() or \
            pid_namespace() == 0:
        return None
    try:
        os.kill(int(match["pid"]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process: alive
        return False
    return False


REMOVE, KEEP, SKIP = "remove", "keep", "skip"


def judge(path: str, name: str, now: float) -> tuple[str, str, int | None]:
    """What to do with an entry named like ours: (REMOVE | KEEP (report it) | SKIP (not a
    leftover: its probe still runs, or it is not ours), why, an open lock descriptor to
    close after removing it)."""
    age = now - os.lstat(path).st_mtime
    if LEGACY.match(name):
        if not os.path.isdir(path) or not set(os.listdir(path)) <= LEGACY_CONTENT:
            return SKIP, "not ours", None
        why = (f"made {_ago(age)} ago by a pytest-cluster older than its leftover sweep, "
               "which records no owner")
        if age > SAFE_AGE_S:
            return REMOVE, f"{why}; older than 24 h", None
        return KEEP, (f"{why}: left in place; remove it by hand if no pytest-cluster run is "
                      "using it (the sweep removes it once it is 24 h old)"), None
    match = OURS.match(name)
    if match is None:
        return SKIP, "not ours", None
    owner = f"pid {match['pid']} on {match['host']}"
    gone = _pid_gone(match)
    if match["data"]:
        if gone or age > UNOWNED_AGE_S:
            return REMOVE, (f"a test file its probe ({owner}) names only until it is open; "
                            "the probe was killed in between"), None
        return SKIP, "being opened", None
    try:
        fd = os.open(os.path.join(path, LOCK_NAME), os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        if age > UNOWNED_AGE_S:
            return REMOVE, f"its probe ({owner}) was killed before it locked it", None
        return SKIP, "being made or removed", None
    except OSError as exc:
        no_lock = f"cannot open its owner lock ({exc.strerror})"
    else:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return SKIP, f"locked by its probe ({owner})", None
            no_lock = f"no file locks on this filesystem ({exc.strerror})"
        else:
            return REMOVE, (f"its probe ({owner}) ended without removing it (killed by "
                            f"SIGKILL, or its node went down); made {_ago(age)} ago"), fd
    if gone:
        return REMOVE, f"its probe ({owner}) is no longer running", None
    if gone is False:
        return SKIP, f"{owner} still runs", None
    if age > SAFE_AGE_S:
        return REMOVE, f"made by {owner} {_ago(age)} ago; older than 24 h", None
    return KEEP, (f"made by {owner} {_ago(age)} ago, and whether it still runs cannot be told "
                  f"({no_lock}): left in place; remove it by hand if no pytest-cluster run is "
                  "using it (the sweep removes it once it is 24 h old)"), None


def sweep(path: str, now: float | None = None) -> list[Leftover]:
    """Find what earlier runs left under `path` and remove what has no live owner; each
    as {path, bytes, removed, why}. What another sweep removes meanwhile is not listed."""
    now = time.time() if now is None else now
    found: list[Leftover] = []
    for name in sorted(os.listdir(path)):
        if not name.startswith(PREFIX) or name.startswith(SHARED):
            continue
        full = os.path.join(path, name)
        try:
            action, why, lock = judge(full, name, now)
        except FileNotFoundError:  # its owner removed it meanwhile
            continue
        if action == SKIP:
            continue
        size = _size(full)
        removed = False
        if action == REMOVE:
            try:
                removed = remove_tree(full)
            finally:
                if lock is not None:
                    os.close(lock)
            if not removed:
                if not os.path.lexists(full):
                    continue  # another node's sweep took it
                why += "; could not be removed (not ours to delete? check its owner and mode)"
        found.append({"path": full, "bytes": size, "removed": removed, "why": why})
    return found


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


def metadata(workdir: str, files: int) -> Metadata:
    """mdtest-like: create, stat, remove `files` empty files in a unique directory."""
    directory = os.path.join(workdir, "mdtest")
    os.mkdir(directory)
    names = [os.path.join(directory, f"f{i:07d}") for i in range(files)]
    phases: dict[str, float] = {}
    start = time.perf_counter()
    for name in names:
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    phases["create"] = time.perf_counter() - start
    start = time.perf_counter()
    for name in names:
        os.stat(name)
    phases["stat"] = time.perf_counter() - start
    start = time.perf_counter()
    for name in names:
        os.unlink(name)
    phases["remove"] = time.perf_counter() - start
    total = sum(phases.values())
    return {
        "files": files,
        "ops_per_s": 3 * files / total,
        "phase_ops_per_s": {k: files / v if v > 0 else None for k, v in phases.items()},
        "phase_seconds": phases,
        "method": "one process: create, stat, remove each file; ops/s = 3 x files / total time",
    }


def _error(exc: OSError) -> Failed:
    return {"error": f"{exc.strerror or exc} ({errno.errorcode.get(exc.errno or 0, '?')})"
                     + (f": {exc.filename}" if exc.filename else "")}


def _part(fn: Callable[..., Part], *args: Any) -> Part:
    try:
        return fn(*args)
    except OSError as exc:
        return cast("Part", _error(exc))


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


def _stop(workspace: Workspace) -> Any:
    """A handler for SIGTERM, SIGINT, SIGHUP: remove what we wrote, then exit."""
    def handler(signum: int, _frame: FrameType | None) -> None:
        clean = workspace.remove()
        sys.stderr.write(f"storage probe: stopped by {signal.Signals(signum).name}; "
                         + ("removed what it wrote\n" if clean else
                            f"could not remove {workspace.directory}\n"))
        sys.stderr.flush()
        os._exit(128 + signum)
    return handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", required=True)
    parser.add_argument("--io-size", type=int, default=2**30)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--skip", action="append", default=[],
                        choices=["write", "read", "metadata"])
    args = parser.parse_args(argv)
    data: StorageData = {"path": args.path, "fs_type": fs_type(args.path)}
    if not os.path.isdir(args.path):
        data["error"] = f"{args.path} does not exist or is not a directory on this node"
        print(json.dumps({"probe": "storage", "schema": 1, "data": data}))
        return 0
    workspace = Workspace(args.path)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _stop(workspace))
    try:
        data["leftovers"] = sweep(args.path)
    except OSError as exc:
        data["leftovers"] = []
        data["leftovers_error"] = _error(exc)["error"]
    data["capacity"] = space = _part(capacity, args.path)
    try:
        written: Transfer = {"skipped": "not in contract"}
        read: Transfer = {"skipped": "not in contract"}
        if "write" not in args.skip or "read" not in args.skip:
            free = space.get("free_bytes")
            if free is not None and free < args.io_size * 1.05:
                written = {"error": f"not enough free space for a {args.io_size} byte test "
                                    f"file ({free} bytes free)"}
                read = {"error": f"no test file to read: {written['error']}"}
            else:
                written, read = write_and_read(workspace, args.io_size, args.skip,
                                               data["fs_type"])
        data["write"] = {"skipped": "not in contract"} if "write" in args.skip else written
        data["read"] = {"skipped": "not in contract"} if "read" in args.skip else read
        if "metadata" in args.skip:
            data["metadata"] = {"skipped": "not in contract"}
        else:
            try:
                workdir = workspace.make_directory()
            except OSError as exc:
                data["metadata"] = {"error": f"cannot create a directory in {args.path}: "
                                             f"{exc.strerror}"}
            else:
                data["metadata"] = _part(metadata, workdir, args.files)
    finally:
        data["cleaned_up"] = workspace.remove()
    print(json.dumps({"probe": "storage", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
