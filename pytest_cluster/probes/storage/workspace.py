"""What this run may leave under the tested path, named before anything is made, and
removed however the probe ends."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import shutil
import socket

PREFIX = ".pytest-cluster-"
LOCK_NAME = "owner.lock"


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
