"""Every time report.html shows is UTC with its zone ("2026-11-27T05:06:56Z"), pytest-html's
"Report generated on" line too, whatever the controller's local zone."""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Iterator
from datetime import datetime

import pytest

from pytest_cluster.run.junit_spool import timestamp_in_utc
from tests.evidence.bundle.test_bundle import SIM_SPEC

#: A date and time written without a zone after it (pytest-html's "27-Nov-2026", or ISO).
_ZONELESS = re.compile(r"\d{2}-[A-Z][a-z]{2}-\d{4}|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}"
                       r"(?::\d{2}(?:\.\d+)?)?(?![\d.:]|Z| UTC|[+-]\d{2}:?\d{2})")


@pytest.fixture
def new_york() -> Iterator[None]:
    """This process (and pytester's in-process run) in America/New_York's local time."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TZ", "America/New_York")
        time.tzset()
        if time.localtime().tm_gmtoff == 0:
            pytest.skip("no America/New_York zone on this machine (tzdata)")
        yield
    time.tzset()


@pytest.mark.usefixtures("new_york")
def test_the_report_shows_utc_times_only(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SIM_SPEC)
    before = int(time.time())
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    after = time.time()
    assert result.ret == pytest.ExitCode.OK
    text = (pytester.path / "reports" / "latest" / "report.html").read_text(encoding="utf-8")
    [stamp] = re.findall(r"Report generated on (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z) by",
                         text)
    generated = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    assert before <= generated <= after  # UTC: New York's clock is 4 or 5 hours off
    local = time.strftime("%H:%M:%S", time.localtime(generated))
    assert f"at {local}" not in text and "Report generated on " + stamp in text
    assert _ZONELESS.findall(text) == []


@pytest.mark.usefixtures("new_york")
def test_junit_says_its_timestamp_in_utc(pytester: pytest.Pytester) -> None:
    """pytest writes the testsuite's timestamp in local time with its offset; the run's
    junit.xml says it in UTC, as every other view (one instant, one way of writing it)."""
    (pytester.path / "trial.yaml").write_text(SIM_SPEC)
    before = time.time()
    pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    junit = (pytester.path / "reports" / "latest" / "junit.xml").read_text(encoding="utf-8")
    [stamp] = re.findall(r'<testsuite [^>]*timestamp="([^"]+)"', junit)
    assert stamp.endswith("+00:00"), stamp
    when = datetime.fromisoformat(stamp).timestamp()
    assert before - 1 <= when <= time.time()
    unreadable = re.match(rb'(<testsuite timestamp=")([^"]+)(")',
                          b'<testsuite timestamp="nonsense"')
    assert unreadable is not None
    assert b"".join(timestamp_in_utc(unreadable)) == unreadable.group(0)  # left as it was
