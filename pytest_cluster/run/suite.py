"""Where the packaged contract suite lives."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def acceptance_dir() -> Path:
    """Where the packaged contract suite lives (pytest_cluster.acceptance); in a source
    checkout whose pytest_cluster/ comes first on sys.path (`python -m pytest` in the
    repository), the acceptance/ folder beside it."""
    spec = importlib.util.find_spec("pytest_cluster.acceptance")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    beside = Path(__file__).resolve().parents[2] / "acceptance"  # pytest_cluster/run/..
    if (beside / "test_gpus.py").is_file():
        return beside
    raise pytest.UsageError(  # pragma: no cover - packaging bug
        f"pytest-cluster is installed without its acceptance suite (looked for the "
        f"package pytest_cluster.acceptance and for {beside})")
