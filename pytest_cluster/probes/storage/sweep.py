"""What earlier runs left under the tested path: judged by its owner lock, its PID and its
age, and removed when no live probe owns it."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import time

from .._lib.age import ago
from .workspace import LOCK_NAME, PREFIX, host_tag, pid_namespace, remove_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import Leftover


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
        why = (f"made {ago(age)} ago by a pytest-cluster older than its leftover sweep, "
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
                            f"SIGKILL, or its node went down); made {ago(age)} ago"), fd
    if gone:
        return REMOVE, f"its probe ({owner}) is no longer running", None
    if gone is False:
        return SKIP, f"{owner} still runs", None
    if age > SAFE_AGE_S:
        return REMOVE, f"made by {owner} {ago(age)} ago; older than 24 h", None
    return KEEP, (f"made by {owner} {ago(age)} ago, and whether it still runs cannot be told "
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
