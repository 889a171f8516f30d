"""The filesystem's type and capacity, its metadata rate, and a part that fails as its
error."""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from .payload import Capacity, Metadata, Transfer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import Failed


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


Part = TypeVar("Part", Capacity, Transfer, Metadata)


def capacity(path: str) -> Capacity:
    st = os.statvfs(path)
    return {
        "total_bytes": st.f_blocks * st.f_frsize,
        "free_bytes": st.f_bavail * st.f_frsize,
        "free_source": "statvfs f_bavail (space a non-root user can still write)",
    }


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
