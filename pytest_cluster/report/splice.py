"""A report's bulk written into a file another writer made, a piece at a time: the file
is read, the pieces go where its mark is, and the whole replaces it at once (a temporary
file beside it), so that neither the bulk nor a second copy of the file is held."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def splice(path: Path, mark: str, pieces: Iterable[str]) -> bool:
    """Put `pieces` (UTF-8) where the file's first `mark` is; the mark goes. False, and
    the file left as it is, when there is no file or no mark in it."""
    try:
        text = path.read_bytes()
    except OSError:
        return False
    at = text.find(mark.encode("utf-8"))
    if at < 0:
        return False
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(text[:at])
            for piece in pieces:
                out.write(piece.encode("utf-8"))
            out.write(text[at + len(mark):])
        os.chmod(name, path.stat().st_mode & 0o777)
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    return True
