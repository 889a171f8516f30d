"""Shared helpers for the plugin's own tests."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Generator
from pathlib import Path

import pytest

REQUIRE_REAL = "PYTEST_CLUSTER_REQUIRE_REAL"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[
        None, pytest.TestReport, None]:
    """Under CI (PYTEST_CLUSTER_REQUIRE_REAL=1) a skipped real-component test fails."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if (report.skipped and os.environ.get(REQUIRE_REAL) == "1"
            and item.get_closest_marker("realcomponents") is not None):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"real-component test skipped under {REQUIRE_REAL}=1: {reason}"


def has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


PYTHON = sys.executable


def write_spec(directory: Path, text: str, name: str = "trial.yaml") -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def scratch(tmp_path: Path) -> Generator[Path, None, None]:
    """A directory for storage probes, removed afterwards."""
    target = tmp_path / "fs"
    target.mkdir()
    yield target
    shutil.rmtree(target, ignore_errors=True)
