"""The probes run as one program on stdin, without this package, and never fake a number."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.shipped_probe import run_probe


def test_storage_probe_measures_and_cleans_up(scratch: Path) -> None:
    data = run_probe("storage", "--path", str(scratch), "--io-size", str(8 * 2**20),
                     "--files", "50")
    assert data["capacity"]["total_bytes"] > 0
    assert data["write"]["bytes"] == 8 * 2**20
    assert data["write"]["bytes_per_s"] > 0
    assert data["read"]["bytes"] == 8 * 2**20
    assert "O_DIRECT" in data["read"]["method"] or "DONTNEED" in data["read"]["method"]
    assert data["metadata"]["files"] == 50
    assert data["metadata"]["ops_per_s"] > 0
    assert data["cleaned_up"] is True
    assert list(scratch.iterdir()) == []


def test_storage_probe_skips_parts_not_in_contract(scratch: Path) -> None:
    data = run_probe("storage", "--path", str(scratch), "--io-size", str(2**20),
                     "--skip", "write", "--skip", "metadata")
    assert data["write"] == {"skipped": "not in contract"}
    assert data["metadata"] == {"skipped": "not in contract"}
    assert data["read"]["bytes"] == 2**20


def test_storage_probe_missing_path_is_an_error(tmp_path: Path) -> None:
    data = run_probe("storage", "--path", str(tmp_path / "absent"))
    assert data["error"] == f"{tmp_path / 'absent'} does not exist or is not a directory on " \
                            "this node"
    assert "write" not in data


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_storage_probe_read_only_path(scratch: Path) -> None:  # pragma: no cover - root here
    scratch.chmod(0o500)
    data = run_probe("storage", "--path", str(scratch))
    assert data["write"]["error"].startswith("cannot create a file in")
    assert data["metadata"]["error"].startswith("cannot create a directory in")


def test_storage_probe_not_enough_space(scratch: Path) -> None:
    data = run_probe("storage", "--path", str(scratch), "--io-size", str(2**62))
    assert data["write"]["error"].startswith(f"not enough free space for a {2**62} byte")
    assert data["read"]["error"].startswith("no test file to read: not enough free space")


# -- helpers copied between a program on a node and the controller -----------------------

#: A program run on a node and a module of the controller cannot share a helper (probes
#: share theirs through probes/_lib, carried with them), so one the two need is written in
#: each: these copies must stay the same (docstrings and comments aside).
COPIED_BETWEEN = {
    ("probes/job_node.py", "launchers/node_runner.py"): ("die_with_parent", "PR_SET_PDEATHSIG"),
    ("probes/jobs/collective.py", "measure/nccl_log.py"): ("KEEP", "MAX_LINES", "MAX_LINE", "kept"),
    ("probes/job_node.py", "launchers/jobs.py"): ("JOB_ENV", "ENV_VALUE"),
}
COPIED = {name: files for files, names in COPIED_BETWEEN.items() for name in names}


def _top_level(path: Path, name: str) -> str:
    """The source of a top-level function or assignment, as `ast` reads it, without its
    docstring or its annotations (one file may spell a type as a string)."""
    import ast

    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            return ast.dump(ast.Module(body=body, type_ignores=[]))
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.dump(node.value)
    raise AssertionError(f"{path}: no top-level {name}")


@pytest.mark.parametrize("name", sorted(COPIED))
def test_a_helper_copied_into_single_file_programs_is_the_same_in_each(name: str) -> None:
    package = Path(__file__).resolve().parents[2] / "pytest_cluster"
    copies = {where: _top_level(package / where, name) for where in COPIED[name]}
    assert len(set(copies.values())) == 1, f"{name} differs between {', '.join(copies)}"
