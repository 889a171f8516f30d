"""The import latency probe as it is shipped: a fresh interpreter timed, a failure said."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.conftest import has_torch
from tests.shipped_probe import run_probe


def test_import_latency_probe_times_a_fresh_interpreter() -> None:
    data = run_probe("import_latency", "--python", sys.executable, "--module", "json",
                     "--repeats", "2")
    assert len(data["warm"]["runs_s"]) == 2
    assert 0 < data["warm"]["min_s"] <= data["warm"]["median_s"] <= data["warm"]["max_s"]
    assert data["command"] == [sys.executable, "-c", "import json"]
    assert "cold" not in data


def test_import_latency_failed_import_is_an_error() -> None:
    data = run_probe("import_latency", "--python", sys.executable, "--module",
                     "no_such_module_xyz", "--repeats", "1")
    assert "warm" not in data
    assert data["error"].endswith("ModuleNotFoundError: No module named 'no_such_module_xyz'")


def test_import_latency_missing_interpreter() -> None:
    data = run_probe("import_latency", "--python", "/nonexistent/python")
    assert data["error"] == "interpreter '/nonexistent/python' not found on this node"


def test_import_latency_failure_names_the_interpreter_path_resolved(tmp_path: Path) -> None:
    """A bare name (python3) is reported as the interpreter the node's PATH gave it."""
    (tmp_path / "python-x").symlink_to(sys.executable)
    data = run_probe("import_latency", "--python", "python-x", "--module", "no_such_module_xyz",
                     "--repeats", "1", env={**os.environ, "PATH": str(tmp_path)})
    assert data["python_resolved"] == f"{tmp_path}/python-x"
    assert data["error"] == (f"{tmp_path}/python-x -c 'import no_such_module_xyz' failed: "
                             "ModuleNotFoundError: No module named 'no_such_module_xyz'")


def test_import_latency_missing_bare_name_says_which_path(tmp_path: Path) -> None:
    data = run_probe("import_latency", "--python", "no-such-python",
                     env={**os.environ, "PATH": str(tmp_path)})
    assert data["error"] == (f"interpreter 'no-such-python' not found on this node "
                             f"(PATH={tmp_path})")


def test_import_latency_cold_run_is_marked() -> None:
    data = run_probe("import_latency", "--python", sys.executable, "--module", "json",
                     "--repeats", "1", "--cold")
    cold = data["cold"]
    if os.geteuid() != 0:
        assert cold == {"skipped": "not root: the page cache cannot be dropped, so no cold run"}
    elif "skipped" in cold:
        assert cold["skipped"].startswith("cannot drop the page cache")
    else:
        assert cold["seconds"] > 0
        assert cold["method"].startswith("page cache dropped")


@pytest.mark.realcomponents
@pytest.mark.skipif(not has_torch(), reason="torch is not installed")
def test_import_torch_for_real() -> None:
    data = run_probe("import_latency", "--python", sys.executable, "--repeats", "1")
    assert "error" not in data, data
    assert data["warm"]["runs_s"][0] > 0.05

