"""The files a run writes where the user said (--junitxml, --html), checked at configure
time as --cluster-metrics' FILE is (metrics_sink.metrics_path): one that cannot be written
is a usage error naming the option and why, before the first check runs, never a
traceback after the last one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import pytest

#: (pytest's dest, the option as the user types it) of the reports we check.
REPORT_OPTIONS = (("xmlpath", "--junitxml", "junit.xml"), ("htmlpath", "--html", "report.html"))


def nearest_folder(path: Path) -> Path:
    """The nearest existing entry above `path` (what its folders would be made in)."""
    for folder in path.parents:
        if folder.exists():
            return folder
    return Path(path.anchor or ".")


def _writable_folder(folder: Path) -> None:
    """ValueError unless a file can be made in `folder` (tried, and removed at once)."""
    if not folder.is_dir():
        raise ValueError(f"cannot be made: {folder} is not a directory")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".pytest-cluster-check."):
            pass
    except OSError as exc:
        raise ValueError(f"its directory {folder} cannot be written: "
                         f"{exc.strerror or exc}") from None


def _writable_file(path: Path) -> None:
    """ValueError unless the existing file `path` opens for writing (opened to append,
    not blocking, nothing written: its content is left as it is)."""
    if not path.is_file():
        raise ValueError("is not a regular file (expected a file to write the report to)")
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
    except OSError as exc:
        raise ValueError(f"cannot be written: {exc.strerror or exc}") from None
    with contextlib.suppress(OSError):
        os.close(descriptor)


def report_path(given: str, example: str = "report") -> Path:
    """A report's FILE (--junitxml, --html), checked before any test runs: a file that can
    be written, in a directory that exists or can be made; ValueError says what is
    wrong."""
    path = Path(given)
    if path.is_dir():
        raise ValueError(f"is a directory: expected a file in it (e.g. {path / example})")
    if path.exists() or path.is_symlink():
        _writable_file(path)
        return path
    _writable_folder(nearest_folder(path))
    return path


def check_reports(config: pytest.Config) -> None:
    """--junitxml and --html as the user gave them: a usage error for one that cannot be
    written (the run's own, in its directory, are made by us and need no check)."""
    for dest, option, example in REPORT_OPTIONS:
        given = getattr(config.option, dest, None)
        if not given:
            continue
        try:
            report_path(str(given), example)
        except ValueError as exc:
            raise pytest.UsageError(f"{option}={shown_path(str(given))} {exc}") from None


def shown_path(text: str, limit: int = 200) -> str:
    """A path as an error echoes it: at most `limit` characters."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
