"""Storage probe: capacity, fsync'ed write, uncached read and metadata rate of one path.

Runs ON a node with only the standard library; shipped as a single file. Every file it
writes lives in a fresh hidden directory under the path and is removed at the end.
Each part reports either its numbers or {"error": reason}; nothing is made up.
"""

from __future__ import annotations

import argparse
import errno
import json
import mmap
import os
import shutil
import sys
import tempfile
import time
from typing import Any

BLOCK = 16 * 2**20
MEMORY_FILESYSTEMS = {"tmpfs", "ramfs", "devtmpfs", "hugetlbfs"}


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


def capacity(path: str) -> dict[str, Any]:
    st = os.statvfs(path)
    return {
        "total_bytes": st.f_blocks * st.f_frsize,
        "free_bytes": st.f_bavail * st.f_frsize,
        "free_source": "statvfs f_bavail (space a non-root user can still write)",
    }


def _block_source() -> bytes:
    # Random data so that compressing or deduplicating filesystems cannot cheat.
    return os.urandom(BLOCK)


def write_file(target: str, size: int) -> dict[str, Any]:
    block = bytearray(_block_source())
    written = 0
    start = time.perf_counter()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while written < size:
            block[:8] = written.to_bytes(8, "little")  # no two blocks alike
            chunk = memoryview(block)[: min(BLOCK, size - written)]
            while chunk:
                done = os.write(fd, chunk)
                chunk = chunk[done:]
                written += done
        os.fsync(fd)
    finally:
        os.close(fd)
    seconds = time.perf_counter() - start
    return {"bytes": written, "seconds": seconds, "bytes_per_s": written / seconds,
            "method": f"sequential {BLOCK // 2**20} MiB writes, fsync before the clock stops"}


def _read_all(fd: int, buffer: mmap.mmap) -> int:
    total = 0
    while True:
        count = os.readv(fd, [buffer])
        if count <= 0:
            return total
        total += count


def read_file(target: str, filesystem: str | None) -> dict[str, Any]:
    """Read back without the page cache: O_DIRECT, else evict the file's pages first."""
    buffer = mmap.mmap(-1, BLOCK)  # page aligned, as O_DIRECT needs
    try:
        method = "O_DIRECT"
        try:
            fd = os.open(target, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
            if not hasattr(os, "O_DIRECT"):
                raise OSError(errno.EINVAL, "no O_DIRECT on this platform")
        except OSError:
            fd = -1
        if fd < 0:
            fd = os.open(target, os.O_RDONLY)
            if filesystem in MEMORY_FILESYSTEMS:
                method = f"{filesystem} is memory-backed: RAM is the storage itself"
            elif hasattr(os, "posix_fadvise"):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                method = "posix_fadvise(DONTNEED) evicted the file from the page cache first"
            else:
                os.close(fd)
                return {"error": "cannot bypass the page cache here (no O_DIRECT, no fadvise)"}
        start = time.perf_counter()
        try:
            try:
                total = _read_all(fd, buffer)
            except OSError as exc:
                if method != "O_DIRECT" or exc.errno != errno.EINVAL:
                    raise
                os.close(fd)
                fd = os.open(target, os.O_RDONLY)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                method = "posix_fadvise(DONTNEED) evicted the file from the page cache first"
                start = time.perf_counter()
                total = _read_all(fd, buffer)
        finally:
            os.close(fd)
        seconds = time.perf_counter() - start
    finally:
        buffer.close()
    return {"bytes": total, "seconds": seconds, "bytes_per_s": total / seconds,
            "method": f"sequential {BLOCK // 2**20} MiB reads; {method}"}


def metadata(workdir: str, files: int) -> dict[str, Any]:
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


def _part(fn: Any, *args: Any) -> dict[str, Any]:
    try:
        result: dict[str, Any] = fn(*args)
        return result
    except OSError as exc:
        return {"error": f"{exc.strerror or exc} ({errno.errorcode.get(exc.errno or 0, '?')})"
                         + (f": {exc.filename}" if exc.filename else "")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", required=True)
    parser.add_argument("--io-size", type=int, default=2**30)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--skip", action="append", default=[],
                        choices=["write", "read", "metadata"])
    args = parser.parse_args(argv)
    data: dict[str, Any] = {"path": args.path, "fs_type": fs_type(args.path)}
    if not os.path.isdir(args.path):
        data["error"] = f"{args.path} does not exist or is not a directory on this node"
        print(json.dumps({"probe": "storage", "schema": 1, "data": data}))
        return 0
    data["capacity"] = _part(capacity, args.path)
    try:
        workdir = tempfile.mkdtemp(prefix=".pytest-cluster-", dir=args.path)
    except OSError as exc:
        reason = {"error": f"cannot create a directory in {args.path}: {exc.strerror}"}
        data.update(write=reason, read=reason, metadata=reason)
        print(json.dumps({"probe": "storage", "schema": 1, "data": data}))
        return 0
    try:
        target = os.path.join(workdir, "seq.bin")
        free = data["capacity"].get("free_bytes")
        written: dict[str, Any] = {"skipped": "not in contract"}
        if "write" not in args.skip or "read" not in args.skip:
            if free is not None and free < args.io_size * 1.05:
                written = {"error": f"not enough free space for a {args.io_size} byte test "
                                    f"file ({free} bytes free)"}
            else:
                written = _part(write_file, target, args.io_size)
        data["write"] = {"skipped": "not in contract"} if "write" in args.skip else written
        if "read" in args.skip:
            data["read"] = {"skipped": "not in contract"}
        elif "error" in written:
            data["read"] = {"error": f"no test file to read: {written['error']}"}
        else:
            data["read"] = _part(read_file, target, data["fs_type"])
        if os.path.exists(target):
            os.unlink(target)
        if "metadata" in args.skip:
            data["metadata"] = {"skipped": "not in contract"}
        else:
            data["metadata"] = _part(metadata, workdir, args.files)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    data["cleaned_up"] = not os.path.exists(workdir)
    print(json.dumps({"probe": "storage", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
