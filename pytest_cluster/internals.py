"""Everything a contract run reaches for inside pytest, pytest-html and pytest-xdist that
is not their documented API, in one place, each with why. tests/test_internals.py runs the
installed versions through every one of these, so that an upgrade that moves one fails
there, by name, not somewhere in a run; pyproject.toml pins the versions so tested.

- pytest's JUnit writer (`_pytest.junitxml`): its stash key is the one way to add
  `<testsuite>` properties and a testcase's classname; its reporters are spooled to disk
  as each testcase finishes (run/junit_spool.py), so 100,000s of them are not held.
  A testcase the writer opened for a case that was then interrupted, never judged, is
  taken back out of its lists (no testcase for a case that did not run).
- The terminal reporter's `stats` lists: a passed case's reports are dropped or replaced
  by a token once it is counted (it holds every report until the end otherwise);
  `reportchars` says whether it will list the passed ones (-rp, -rP, -rA), and
  `_show_progress_info` whether its "times" progress reads them all.
- pytest-html's report object: it holds every report and every row until it writes; a
  passed check's (listed in the scorecard instead) is let go of, and counted. Where it
  writes (the scorecard's passed lists go into that file afterwards). The line its
  template writes above the environment, "Report generated on 27-Nov-2026 at 00:06:56",
  is the local time of its `datetime.now()` without a zone, and no hook sets it: it is
  written again in UTC once the report is written (run/html_hooks.py).
- The terminal's progress percentage and its writer: cases derived from the whole run are
  reported after the collected ones, without a percentage, on a line of their own.
- An item's cached `location`: dropped when the item has finished.
- pytest's warning filters (`apply_warning_filters`): a warning at configure time that
  points at a place in another file (the spec's line), as `Config.issue_config_time_warning`
  issues one at a place in Python code.
- pytest-xdist's `workerinput`: what the controller hands its workers (documented, but an
  attribute that exists only on workers).
"""

from __future__ import annotations

import contextlib
import linecache
import re
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest import junitxml
from _pytest.config import apply_warning_filters

# -- pytest's JUnit writer ----------------------------------------------------------------------

def junit_writer(config: pytest.Config) -> Any | None:
    """pytest's LogXML when --junitxml is given, else None."""
    return config.stash.get(junitxml.xml_key, None)


def drop_junit_writer(config: pytest.Config) -> None:
    """No junit.xml for this run (nothing was collected)."""
    xml = junit_writer(config)
    if xml is not None:
        config.pluginmanager.unregister(xml)
        del config.stash[junitxml.xml_key]


def junit_reporter(xml: Any, report: pytest.TestReport) -> Any:
    """The testcase a report belongs to (opened if it is not yet)."""
    return xml.node_reporter(report)


def open_junit_reporter(xml: Any, report: Any) -> Any | None:
    """The testcase a report belongs to, if the writer has opened it, else None."""
    return xml.node_reporters.get((report.id, getattr(report, "node", None)))


def junit_log(xml: Any, report: pytest.TestReport) -> None:
    """pytest's JUnit writer takes `report` as its hook would (a testcase opened, its
    outcome added, closed at teardown), and no other plugin hears of it."""
    xml.pytest_runtest_logreport(report)


def junit_forget(xml: Any, report: Any) -> None:
    """The testcase a report opened, taken back before it is written (a case begun, then
    interrupted: it never ran to a verdict); nothing was counted for it yet."""
    reporter = xml.node_reporters.pop((report.id, getattr(report, "node", None)), None)
    if reporter is not None:
        xml.node_reporters_ordered.remove(reporter)


def junit_reporters_in_order(xml: Any) -> list[Any]:
    """The writer's testcases in the order they will be written (replaced in place)."""
    ordered: list[Any] = xml.node_reporters_ordered
    return ordered


# -- the terminal -------------------------------------------------------------------------------

def terminal_reports(terminal: Any, key: str) -> list[Any]:
    """The terminal's list of reports under `key` ('' for setup and teardown, 'passed'),
    to be trimmed in place; an empty list when there is none."""
    found = getattr(terminal, "stats", {}).get(key)
    return found if isinstance(found, list) else []


def terminal_reads_every_report(terminal: Any) -> bool:
    """Whether the terminal reads the passed reports again: it lists them (-rp, -rP, -rA),
    or its "times" progress (console_output_style) sums each file's durations from every
    report. Then it keeps them all."""
    chars = str(getattr(terminal, "reportchars", "p"))
    return ("p" in chars or "P" in chars
            or getattr(terminal, "_show_progress_info", None) == "times")


@contextlib.contextmanager
def no_progress(terminal: Any) -> Iterator[None]:
    """The terminal prints no progress percentage meanwhile (its `_show_progress_info`):
    cases reported after the run's own (derived ones) are not among those it counts."""
    shown = getattr(terminal, "_show_progress_info", None)
    if shown is not None:
        terminal._show_progress_info = False
    try:
        yield
    finally:
        if shown is not None:
            terminal._show_progress_info = shown


def end_line(terminal: Any) -> None:
    """End the line the terminal's writer (its `_tw`) is in the middle of, if any."""
    writer = getattr(terminal, "_tw", None)
    if writer is not None and writer.width_of_current_line:
        writer.line()


# -- pytest's items ------------------------------------------------------------------------------

def forget_location(item: pytest.Item) -> None:
    """Drop an item's cached `location` (a cached property of pytest's: made again if
    asked for), so a finished item holds less."""
    item.__dict__.pop("location", None)


# -- pytest-html --------------------------------------------------------------------------------

def html_plugin(config: pytest.Config) -> Any | None:
    """pytest-html's report object (registered under no fixed name), or None."""
    return next((plugin for plugin in config.pluginmanager.get_plugins()
                 if type(plugin).__module__.startswith("pytest_html")
                 and hasattr(plugin, "_report")), None)


def html_forget(html: Any, nodeid: str) -> None:
    """pytest-html lets go of a case's reports, and of its rows when it has none (a passed
    check, listed in the scorecard instead)."""
    held = getattr(html, "_reports", None)
    if isinstance(held, dict):
        held.pop(nodeid, None)
    rows = getattr(getattr(html, "_report", None), "_data", {}).get("tests")
    if isinstance(rows, dict) and rows.get(nodeid) == []:
        del rows[nodeid]


def html_path(html: Any) -> Path | None:
    """Where pytest-html writes its report (its `_report_path`), or None."""
    found = getattr(html, "_report_path", None)
    return found if isinstance(found, Path) else None


#: pytest-html's "Report generated on 27-Nov-2026 at 00:06:56 by" (its index.jinja2: the
#: date as "%d-%b-%Y", the local time as "%H:%M:%S").
HTML_GENERATED = re.compile(rb"Report generated on ([^<>\n]{1,40}?) at (\d\d:\d\d:\d\d) by")


def html_generated_at(match: re.Match[bytes]) -> float | None:
    """The time since the epoch of HTML_GENERATED's local date and time (this process's
    zone, as pytest-html's `datetime.now()`); None when its date is not as pytest-html
    writes it."""
    date, clock = (part.decode("utf-8", "replace") for part in match.groups())
    try:
        return time.mktime(time.strptime(f"{date} {clock}", "%d-%b-%Y %H:%M:%S"))
    except (ValueError, OverflowError):
        return None


def html_count_passed(html: Any) -> None:
    """pytest-html counts only the rows it shows: count a passed row left out."""
    data: Any = getattr(html, "_report", None)
    if data is not None and hasattr(data, "outcomes"):
        data.outcomes = "passed"


# -- pytest-xdist -------------------------------------------------------------------------------

def worker_input(config: pytest.Config) -> dict[str, Any] | None:
    """What the controller handed this xdist worker; None on the controller."""
    found: dict[str, Any] | None = getattr(config, "workerinput", None)
    return found


# -- pytest's warning filters -----------------------------------------------------------------

def warn_at(config: pytest.Config, warning: Warning, filename: str, line: int) -> None:
    """`Config.issue_config_time_warning` for a place in a file that is not Python (the
    spec's line): the run's filters (-W, filterwarnings) apply, so that an `error` filter
    raises the warning here, and pytest's summary shows it at that place."""
    if config.pluginmanager.is_blocked("warnings"):
        return
    linecache.checkcache(filename)  # the line quoted is this file's, not a stale copy's
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always", type(warning))
        apply_warning_filters(config.getini("filterwarnings"),
                              config.known_args_namespace.pythonwarnings or [])
        warnings.warn_explicit(warning, type(warning), filename, line, module="spec")
    if records:
        config.hook.pytest_warning_recorded.call_historic(kwargs={
            "warning_message": records[0], "when": "config", "nodeid": "",
            "location": (filename, line, "spec")})
