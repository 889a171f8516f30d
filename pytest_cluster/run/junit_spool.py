"""JUnit without holding every testcase: pytest's JUnit writer keeps each finished
testcase as an XML element (its properties, its failure text) until the end of the run,
then writes the file. At 157,000 cases that is more memory than the rest of the run.

`JunitSpool` writes each testcase to a temporary file as soon as pytest's writer has
finished it, leaves a small placeholder in its place (one for a run of testcases that
follow each other), and once pytest's writer has written junit.xml, puts each testcase
back where its placeholder is. The file is the one pytest would have written, byte for
byte; the memory is a placeholder per run of cases, and 16 bytes per case.
"""

from __future__ import annotations

import re
import tempfile
import xml.etree.ElementTree as ET
from array import array
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

import pytest

from pytest_cluster import internals
from pytest_cluster.report.splice import splice

PLACEHOLDER = "pytest-cluster-spooled"
#: pytest's testsuite timestamp: local time with its offset.
TIMESTAMP = re.compile(rb'(<testsuite [^>]*?timestamp=")([^"]+)(")')
_PLACEHOLDER = re.compile(rf'<{PLACEHOLDER} i="(\d+)" n="(\d+)" />'.encode())


class _Spooled:
    """Spooled testcases that follow each other, where pytest's writer keeps them: their
    placeholder element, made only when junit.xml is written."""

    __slots__ = ("count", "first")

    def __init__(self, first: int) -> None:
        self.first = first
        self.count = 1

    def to_xml(self) -> ET.Element:
        return ET.Element(PLACEHOLDER, i=str(self.first), n=str(self.count))

    __call__ = to_xml


class JunitSpool:
    """Bound to pytest's LogXML (`config.stash[junitxml.xml_key]`)."""

    def __init__(self, xml: Any) -> None:
        self.xml = xml
        # removed by the system when closed (restore, close) or when this process ends
        self._file: IO[bytes] = tempfile.TemporaryFile(  # noqa: SIM115
            prefix="pytest-cluster-junit-")
        self._offsets = array("q")
        self._lengths = array("q")

    def open_reporter(self, report: Any) -> Any:
        """The testcase a report belongs to, if pytest's writer has opened it (ask before
        the writer reads the report: it lets go of it when it finishes it)."""
        return internals.open_junit_reporter(self.xml, report)

    def spool(self, reporter: Any) -> None:
        """Write a finished testcase out; its place keeps a placeholder."""
        if reporter is None or set(vars(reporter)) != {"to_xml"}:  # not finished
            return
        data = ET.tostring(reporter.to_xml(), encoding="unicode").encode("utf-8")
        index = len(self._offsets)
        self._offsets.append(self._file.tell())
        self._lengths.append(len(data))
        self._file.write(data)
        ordered = internals.junit_reporters_in_order(self.xml)
        for back in range(1, min(len(ordered), 8) + 1):  # it is among the last opened
            if ordered[-back] is reporter:  # the reporter itself goes
                before = ordered[-back - 1] if back < len(ordered) else None
                if isinstance(before, _Spooled) and before.first + before.count == index:
                    before.count += 1  # the testcase right before it was spooled just before
                    del ordered[-back]
                else:
                    ordered[-back] = _Spooled(index)
                return
        reporter.to_xml = _Spooled(index)

    def restore(self, path: Path | None) -> None:
        """After pytest's writer wrote `path`: each placeholder replaced by its testcases."""
        if self._offsets and path is not None:
            self._file.flush()
            splice(path, _PLACEHOLDER, self._testcases)
        self.close()

    def _testcases(self, placeholder: re.Match[bytes]) -> Iterator[bytes]:
        """The testcases a placeholder stands for, one after another in the file."""
        first, count = int(placeholder.group(1)), int(placeholder.group(2))
        self._file.seek(self._offsets[first])
        for index in range(first, first + count):
            yield self._file.read(self._lengths[index])

    def close(self) -> None:
        self._file.close()


#: A report's attribute that says which pytest-xdist worker it came from (xdist's).
_WORKER = "node"


def closing(begun: Any, user_properties: list[tuple[str, object]]) -> pytest.TestReport:
    """The teardown that closes the testcase of a case begun (its report `begun`) that
    the run left before its own teardown (interrupted there): the testcase gets its
    properties (`user_properties`, as the case recorded them), as every finished one."""
    made = pytest.TestReport(
        nodeid=begun.nodeid, location=begun.location, keywords={}, outcome="passed",
        longrepr=None, when="teardown", sections=[], duration=0.0,
        user_properties=list(user_properties))
    if getattr(begun, "node", None) is not None:
        setattr(made, _WORKER, begun.node)
    return made


def timestamp_in_utc(match: re.Match[bytes]) -> Iterator[bytes]:
    """pytest's testsuite timestamp ('2026-11-27T00:10:52.619352-05:00', local) in UTC,
    as every other view says times ('2026-11-27T05:10:52.619352+00:00'); as it was when
    it cannot be read."""
    try:
        when = datetime.fromisoformat(match.group(2).decode("ascii"))
    except ValueError:
        yield match.group(0)
        return
    if when.tzinfo is None:
        when = when.astimezone()  # pytest's older form: local time without its offset
    yield match.group(1) + when.astimezone(timezone.utc).isoformat().encode() \
        + match.group(3)


def junit_in_utc(path: Path | None) -> None:
    """junit.xml's testsuite timestamp rewritten in UTC (timestamp_in_utc)."""
    if path is not None:
        splice(path, TIMESTAMP, timestamp_in_utc, count=1)
