"""A report's bulk written into a file another writer made, a piece at a time: the file
is read, each mark in it is replaced by the pieces written for it, and the whole replaces
the file at once (a temporary file beside it, the file's mode kept), so that neither the
bulk nor a second copy of the file is held. The scorecard's passed lists go into
report.html so, and the spooled testcases into junit.xml."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path


def splice(path: Path, mark: re.Pattern[bytes],
           pieces: Callable[[re.Match[bytes]], Iterable[bytes]], count: int = 0) -> bool:
    """Each of the file's first `count` marks (0: all of them) replaced by what `pieces`
    gives for it. False, and the file left as it is, when there is no file or no mark in
    it."""
    try:
        text = path.read_bytes()
    except OSError:
        return False
    found = list(itertools.islice(mark.finditer(text), count or None))
    if not found:
        return False
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    view = memoryview(text)  # what lies between the marks is written, not copied first
    try:
        with os.fdopen(handle, "wb") as out:
            start = 0
            for match in found:
                out.write(view[start:match.start()])
                for piece in pieces(match):
                    out.write(piece)
                start = match.end()
            out.write(view[start:])
        os.chmod(name, path.stat().st_mode & 0o777)
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    return True
