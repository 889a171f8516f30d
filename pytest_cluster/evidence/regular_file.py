"""A file handed over by another process (a run's verdict.json and log, a baseline's
JSON), read as a regular file only: opened without waiting (O_NONBLOCK: a FIFO in its
place answers at once, where open() would block until a writer came, forever), checked on
the descriptor opened (fstat: a FIFO, a device, a socket or a directory is refused by
name, with no check-then-open race) and read to a bound.

Only the standard library and errors are imported (the gate runs in a prolog)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from pytest_cluster.errors import InputError
from pytest_cluster.evidence.bundle.tree import kind

#: Never waiting on a FIFO, never taking a terminal as this process's own.
OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def open_regular(path: Path, name: str = "") -> BinaryIO:
    """`path` opened for reading; InputError '{name}: a fifo, not a regular file' where it
    is none (`name`: how the message names it, the path by default). An OSError of
    opening (FileNotFoundError) is the caller's to say."""
    try:
        fd = os.open(path, OPEN_FLAGS)
    except OSError as exc:  # a socket cannot be opened (ENXIO): named as what it is
        if exc.errno == errno.ENXIO and stat.S_ISSOCK(os.stat(path).st_mode):
            raise InputError(f"{name or path}: a socket, not a regular file") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise InputError(f"{name or path}: a {kind(mode)}, not a regular file")
    return os.fdopen(fd, "rb")


def too_large(name: str, size: int, limit: int) -> InputError:
    return InputError(f"{name}: {size} bytes, larger than {limit} bytes (the most read "
                      "of it)")


def read_regular(path: Path, limit: int, name: str = "") -> bytes:
    """The bytes of a regular file (open_regular) of at most `limit` bytes; InputError
    naming it, before anything is read, where it is larger (or grew larger while read)."""
    name = name or str(path)
    with open_regular(path, name) as stream:
        size = os.fstat(stream.fileno()).st_size
        if size > limit:
            raise too_large(name, size, limit)
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise too_large(name, len(data), limit)
    return data


def read_tail(path: Path, limit: int, name: str = "") -> bytes:
    """The last `limit` bytes of a regular file (open_regular): a log of any size is read
    no further than that."""
    with open_regular(path, name) as stream:
        size = stream.seek(0, os.SEEK_END)
        stream.seek(max(0, size - limit))
        return stream.read(limit)
