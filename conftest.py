"""Project-wide test policy: under CI a skipped real-component test is a failure, and a
real-component test is slow (left out of `make test-fast`) whether or not it says so.

(The pytester plugin is enabled in pyproject.toml; a `pytest_plugins` here would leak into
pytester runs that collect the acceptance suite from this checkout.)
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

REQUIRE_REAL = "PYTEST_CLUSTER_REQUIRE_REAL"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[
        None, pytest.TestReport, None]:
    """Under CI (PYTEST_CLUSTER_REQUIRE_REAL=1) a skipped real-component test fails."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if (report.skipped and os.environ.get(REQUIRE_REAL) == "1"
            and item.get_closest_marker("realcomponents") is not None):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"real-component test skipped under {REQUIRE_REAL}=1: {reason}"




def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real components (namespace clusters, SLURM, shaped links) take seconds a case:
    every such test is `slow` too."""
    for item in items:
        if item.get_closest_marker("realcomponents") is not None:
            item.add_marker(pytest.mark.slow)
