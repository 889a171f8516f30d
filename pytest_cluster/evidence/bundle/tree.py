"""A run directory read as the other side may have left it: no symbolic link followed in
any component (every directory opened relative to its parent's descriptor with
O_NOFOLLOW), so nothing outside the directory is ever opened; a fifo or a device never
opened; the walk bounded in depth and in entries."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from pytest_cluster.errors import BundleError

#: The most entries (files, directories, anything) a run directory may hold.
MAX_ENTRIES = 1_000_000
#: The deepest directories are walked; deeper ones are reported, not entered.
MAX_LEVELS = 64

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Odd:
    """An entry that is no evidence: neither a regular file nor a directory of them."""

    name: str  # its path relative to the run directory, POSIX
    kind: str  # "symlink", "directory", "fifo", "socket", "device", "unreadable",
    # "too deep", "too large"
    detail: str = ""  # a link's target as read (never followed); why it could not be read


@dataclass(frozen=True)
class Hashed:
    sha256: str  # hex
    size: int  # bytes


def kind(mode: int) -> str:
    """What an lstat mode is, in a word."""
    for test, word in ((stat.S_ISLNK, "symlink"), (stat.S_ISDIR, "directory"),
                       (stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISREG, "file")):
        if test(mode):
            return word
    return "device"


class Tree:
    """An open directory and the files under it, read without following links."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path
        self._chain: list[tuple[str, int]] = []  # the directories last opened, in order

    @classmethod
    def open(cls, path: Path) -> Tree:
        """`path` itself may be a link (reports/latest is one); nothing under it is followed."""
        try:
            return cls(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), path)
        except OSError as exc:
            raise BundleError(f"{path}: not a directory ({exc.strerror}); expected a run's "
                              f"evidence directory, e.g. reports/latest") from None

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._enter(())
        os.close(self.fd)

    def identity(self) -> tuple[int, int]:
        info = os.fstat(self.fd)
        return info.st_dev, info.st_ino

    def lstat(self, name: str) -> os.stat_result | None:
        """An entry directly in the directory, not followed; None when there is none."""
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    # -- one file ------------------------------------------------------------------------

    def read(self, name: str, limit: int) -> bytes | Odd | None:
        """The regular file `name` directly in the directory, if at most `limit` bytes
        (a larger one is an Odd "too large", unread); None when there is none."""
        found = self._open(self.fd, name, name)
        if not isinstance(found, int):
            return found
        with os.fdopen(found, "rb") as handle:
            size = os.fstat(found).st_size
            data = handle.read(limit + 1) if size <= limit else b""
            if size > limit or len(data) > limit:
                return Odd(name, "too large", f"{max(size, len(data)):,} bytes")
            return data

    def hash(self, name: str) -> Hashed | Odd | None:
        """SHA-256 and size of the regular file at the relative POSIX path `name`: an Odd
        entry where a component of it is a link or a file is something else; None when
        there is none."""
        parts = name.split("/")
        where = self._enter(tuple(parts[:-1]))
        if isinstance(where, Odd) or where is None:
            return where
        found = self._open(where, parts[-1], name)
        if not isinstance(found, int):
            return found
        digest, size = hashlib.sha256(), 0
        with os.fdopen(found, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
        return Hashed(digest.hexdigest(), size)

    def _open(self, parent: int, entry: str, name: str) -> int | Odd | None:
        try:
            info = os.stat(entry, dir_fd=parent, follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode):
                return _odd(parent, entry, name, info.st_mode)
            fd = os.open(entry, _FILE, dir_fd=parent)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return self._why(parent, entry, name, exc)
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since the lstat
            os.close(fd)
            return Odd(name, "unreadable", "changed while it was read")
        return fd

    def _enter(self, parents: tuple[str, ...]) -> int | Odd | None:
        """A descriptor of the directory `parents` (components under the tree), each
        opened from the one before without following links; the chain is kept for the
        next file, usually a neighbour."""
        keep = 0
        while keep < min(len(parents), len(self._chain)) and \
                self._chain[keep][0] == parents[keep]:
            keep += 1
        for _, fd in reversed(self._chain[keep:]):
            os.close(fd)
        del self._chain[keep:]
        for index in range(keep, len(parents)):
            at = self._chain[-1][1] if self._chain else self.fd
            try:
                self._chain.append((parents[index], os.open(parents[index], _DIR, dir_fd=at)))
            except OSError as exc:
                return self._why(at, parents[index], "/".join(parents[:index + 1]), exc)
        return self._chain[-1][1] if self._chain else self.fd

    @staticmethod
    def _why(parent: int, entry: str, name: str, exc: OSError) -> Odd | None:
        """What an entry that could not be opened is."""
        try:
            info = os.stat(entry, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as again:
            return Odd(name, "unreadable", again.strerror or str(again))
        if stat.S_ISREG(info.st_mode):  # a file where a directory is expected
            return None
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            return _odd(parent, entry, name, info.st_mode)
        return Odd(name, "unreadable", exc.strerror or str(exc))

    # -- every entry -----------------------------------------------------------------------

    def walk(self) -> tuple[list[str], list[Odd]]:
        """(every regular file, every odd entry) under the directory, sorted by path,
        directories entered without following links, at most MAX_LEVELS deep."""
        files: list[str] = []
        odd: list[Odd] = []
        count = [0]
        # one level a directory: its descriptor, its path and '/', its subdirectories left
        stack: list[tuple[int, str, list[str]]] = [(os.dup(self.fd), "", [])]
        try:
            stack[0][2].extend(self._list(stack[0][0], "", files, odd, count))
            while stack:
                fd, prefix, left = stack[-1]
                if not left:
                    stack.pop()
                    os.close(fd)
                    continue
                entry = left.pop()
                name = prefix + entry
                if len(stack) > MAX_LEVELS:
                    odd.append(Odd(name, "too deep", f"more than {MAX_LEVELS} levels of "
                                   "directories; not walked"))
                    continue
                try:
                    child = os.open(entry, _DIR, dir_fd=fd)
                except OSError as exc:
                    why = self._why(fd, entry, name, exc)
                    if why is not None:
                        odd.append(why)
                    continue
                stack.append((child, name + "/", []))
                stack[-1][2].extend(self._list(child, name + "/", files, odd, count))
        finally:
            for fd, _, _ in stack:
                os.close(fd)
        files.sort()
        odd.sort(key=lambda o: o.name)
        return files, odd

    def _list(self, fd: int, prefix: str, files: list[str], odd: list[Odd],
              count: list[int]) -> list[str]:
        """The subdirectories of the directory `fd` (reverse sorted, the first last);
        its files and odd entries added to `files` and `odd`."""
        subdirs = []
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    count[0] += 1
                    if count[0] > MAX_ENTRIES:
                        raise BundleError(f"{self.path}: more than {MAX_ENTRIES:,} entries; "
                                          f"not a run's evidence directory")
                    mode = entry.stat(follow_symlinks=False).st_mode
                    if stat.S_ISREG(mode):
                        files.append(prefix + entry.name)
                    elif stat.S_ISDIR(mode):
                        subdirs.append(entry.name)
                    else:
                        odd.append(_odd(fd, entry.name, prefix + entry.name, mode))
        except OSError as exc:
            odd.append(Odd(prefix.rstrip("/") or ".", "unreadable", exc.strerror or str(exc)))
        return sorted(subdirs, reverse=True)


def _odd(parent: int, entry: str, name: str, mode: int) -> Odd:
    word = kind(mode)
    if word != "symlink":
        return Odd(name, word)
    try:
        return Odd(name, word, os.readlink(entry, dir_fd=parent))
    except OSError as exc:
        return Odd(name, word, f"(unreadable: {exc.strerror})")
