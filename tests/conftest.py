"""Shared helpers for the plugin's own tests."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Generator
from pathlib import Path

import pytest


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
