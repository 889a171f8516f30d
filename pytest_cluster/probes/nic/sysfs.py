"""Reading a sysfs tree that is not trusted: what is read of it (Reader), how much (the
limits, the ports' Budget), and how a number or a name found in it is taken."""

from __future__ import annotations

import errno
import heapq
import os
import re
import stat

from .ethtool import drvinfo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


#: A number sysfs writes: decimal (a counter is a u64: 20 digits) or hex (0x1a).
DECIMAL = re.compile(r"-?[0-9]{1,20}")
HEX = re.compile(r"0[xX][0-9a-fA-F]{1,16}")
LOWEST, HIGHEST = -(2**63), 2**64 - 1  # an s64's least, a u64's most
MAX_ENTRIES = 4096  # names read of one directory
MAX_PORTS = 1024  # RDMA ports and interfaces read of one node: the rest are counted
MAX_FILE_BYTES = 4096  # a sysfs attribute is at most a page
MAX_TEXT = 256  # characters of a value kept (a GID is 39, an IPoIB address 59)
MAX_NAME = 64  # characters of a device's name (IB_DEVICE_NAME_MAX; an interface's: 15)
MAX_SKIPPED = 32  # entries named that are no device or port; the rest counted
#: Open a file without blocking on a fifo, without following a last link (checked first),
#: without taking a terminal.
OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC


class Refused(Exception):
    """A file the probe will not read, and why (not a regular file, a link out of the
    tree, larger than a sysfs attribute)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    for test, word in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a fifo"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a link")):
        if test(mode):
            return word
    return "not a file"


def shown(name: str) -> str:
    """A name found in the tree as it can be printed: itself when it is a plain name,
    else its escaped first MAX_NAME characters."""
    return name if valid_name(name) else ascii(name[:MAX_NAME])


def valid_name(name: str) -> bool:
    """A device's or interface's name as the kernel allows one (dev_valid_name): at most
    MAX_NAME printable characters, no space, no '/', not '.' or '..'."""
    return (0 < len(name) <= MAX_NAME and name.isprintable() and name not in (".", "..")
            and not any(char.isspace() or char == "/" for char in name))


def whole_number(raw: str) -> int | None:
    """The number sysfs wrote (decimal or 0x hex, within a u64 or an s64), else None."""
    if DECIMAL.fullmatch(raw):
        value = int(raw)
    elif HEX.fullmatch(raw):
        value = int(raw, 16)
    else:
        return None
    return value if LOWEST <= value <= HIGHEST else None


class Reader:
    """Reads files of one tree; what it cannot read is kept, by path, with why. A file is
    read only when it is a regular file whose real path is inside the tree (sysfs's own
    links, /sys/class/net/eth0 -> ../../devices/..., stay inside), opened without blocking,
    at most MAX_FILE_BYTES of it."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self._folders: dict[str, str | Refused] = {}
        #: Entries of the tree that are no device or port, with why (at most MAX_SKIPPED)
        self.skipped: dict[str, str] = {}
        self.skipped_more = 0

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def inside(self, path: str) -> str:
        """The real path of `path`, which must be inside the tree; Refused if a link
        leads out of it."""
        real = os.path.realpath(path)
        top = self.real_root.rstrip("/") + "/"
        if real != self.real_root and not real.startswith(top):
            raise Refused(f"a link out of {self.root}: not followed")
        return real

    def folder(self, path: str) -> str:
        """The real path of directory `path` (each resolved once)."""
        found = self._folders.get(path)
        if found is None:
            try:
                found = self.inside(path)
            except Refused as exc:
                found = exc
            self._folders[path] = found
        if isinstance(found, Refused):
            raise found
        return found

    def raw(self, path: str) -> bytes:
        """The bytes of file `path`; Refused or OSError when it is not read."""
        real = os.path.join(self.folder(os.path.dirname(path)), os.path.basename(path))
        try:
            fd = os.open(real, OPEN_FLAGS)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            fd = os.open(self.inside(real), OPEN_FLAGS)  # a link: where it leads
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise Refused(f"{kind_of(mode)}, not a regular file: not read")
            data = b""
            while len(data) <= MAX_FILE_BYTES:
                chunk = os.read(fd, MAX_FILE_BYTES + 1 - len(data))
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
        if len(data) > MAX_FILE_BYTES:
            raise Refused(f"more than {MAX_FILE_BYTES} bytes (a sysfs attribute is at most "
                          "a page): not read")
        return data

    def text(self, path: str, missing: dict[str, str]) -> str | None:
        try:
            value = self.raw(path).decode("utf-8", errors="replace").strip()
        except Refused as exc:
            missing[path] = exc.why
            return None
        except FileNotFoundError:
            missing[path] = "not present"
            return None
        except PermissionError:
            missing[path] = "permission denied (readable by root only)"
            return None
        except OSError as exc:
            # EINVAL: speed of a link that is down, or of a virtual interface
            missing[path] = exc.strerror or str(exc)
            return None
        if len(value) > MAX_TEXT:
            missing[path] = f"{len(value)} characters: longer than any value of the sysfs " \
                            f"ABI (at most {MAX_TEXT} read)"
            return None
        return value

    def number(self, path: str, missing: dict[str, str]) -> int | None:
        raw = self.text(path, missing)
        if raw is None:
            return None
        value = whole_number(raw)
        if value is None:
            missing[path] = f"not a number: {raw[:40]!r} (expected a whole number of at " \
                            "most 20 digits, or 0x and 16)"
        return value

    def listing(self, path: str, limit: int = MAX_ENTRIES) -> tuple[list[str], int]:
        """The first `limit` names of directory `path` in order, and how many it has in
        all; none when it cannot be listed or is out of the tree."""
        total = 0

        def counted(entries: Iterator[os.DirEntry[str]]) -> Iterator[str]:
            nonlocal total
            for entry in entries:
                total += 1
                yield entry.name

        try:
            with os.scandir(self.folder(path)) as entries:
                return heapq.nsmallest(limit, counted(entries)), total
        except (OSError, Refused):
            return [], 0

    def names(self, path: str) -> list[str]:
        return self.listing(path)[0]

    def skip(self, path: str, why: str) -> None:
        """An entry of the tree that is no device or port, kept with why."""
        if len(self.skipped) < MAX_SKIPPED:
            self.skipped[path] = why
        else:
            self.skipped_more += 1

    def exists(self, path: str) -> bool:
        """Whether `path` is there, inside the tree."""
        try:
            return os.path.lexists(path) and bool(self.inside(path))
        except Refused:
            return False

    def directories(self, path: str) -> list[str]:
        """The names in `path` that are directories (an interface of class/net, not a
        file such as bonding_masters)."""
        return [name for name in self.names(path) if os.path.isdir(os.path.join(path, name))]

    def drvinfo(self, name: str) -> dict[str, str]:
        """Driver, its version, firmware and bus of interface `name` (`ethtool -i`)."""
        return drvinfo(name)

    def target(self, path: str) -> str | None:
        """The name a link points at (a device's PCI address), None if it is no link or
        leads out of the tree."""
        if not os.path.islink(path):
            return None
        try:
            name = os.path.basename(self.inside(path))
        except Refused:
            return None
        return name if valid_name(name) else None

    def counters(self, directory: str, names: tuple[str, ...],
                 missing: dict[str, str]) -> dict[str, int]:
        """The counters of `names` the directory has (a driver need not have them all)."""
        present = set(self.names(directory))
        found = {}
        for name in names:
            if name in present:
                value = self.number(os.path.join(directory, name), missing)
                if value is not None:
                    found[name] = value
        return found


class Budget:
    """How many more ports a reading may hold (MAX_PORTS), and how many it left out."""

    def __init__(self, limit: int = MAX_PORTS) -> None:
        self.left = limit
        self.left_out = 0

    def take(self) -> bool:
        """Whether one more port is read; if not, it is counted as left out."""
        if self.left > 0:
            self.left -= 1
            return True
        self.left_out += 1
        return False
