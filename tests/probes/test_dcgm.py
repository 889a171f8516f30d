"""The DCGM probe as shipped, with a stand-in dcgmi on PATH: its command line, the document
it hands back, and what it says when dcgmi is absent, hangs or prints no JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.probes.dcgm import diag_command, parse_report
from tests.shipped_probe import run_probe

DOCUMENT = {"DCGM Diagnostic": {"test_categories": [{"category": "Deployment", "tests": [
    {"name": "software", "results": [{"entity_group": "GPU", "entity_id": 0,
                                      "status": "Pass"}]}]}]}}


def _dcgmi(folder: Path, script: str) -> None:
    """A stand-in dcgmi: it writes its arguments beside itself, then runs `script`."""
    path = folder / "dcgmi"
    path.write_text(f'#!/bin/sh\necho "$@" > "{folder}/argv"\n{script}\n')
    path.chmod(0o755)


def _run(folder: Path, *args: str) -> dict[str, Any]:
    env = {"PATH": f"{folder}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/")}
    return run_probe("dcgm", *args, env=env)


def test_the_command_line_is_a_list_for_levels_1_to_4() -> None:
    assert diag_command("/usr/bin/dcgmi", 3) == ["/usr/bin/dcgmi", "diag", "-r", "3", "-j"]
    with pytest.raises(ValueError, match="level 5"):
        diag_command("dcgmi", 5)


def test_its_document_comes_back_whatever_dcgmi_exits_with(tmp_path: Path) -> None:
    """dcgmi exits nonzero when a test fails; its document is its verdict."""
    _dcgmi(tmp_path, f"echo '{json.dumps(DOCUMENT)}'\nexit 226")
    data = _run(tmp_path, "--level", "2", "--timeout", "60")
    assert data["report"] == DOCUMENT and data["exit_code"] == 226
    assert "error" not in data and data["level"] == 2
    assert (tmp_path / "argv").read_text().split() == ["diag", "-r", "2", "-j"]


def test_no_dcgmi_is_said_missing(tmp_path: Path) -> None:
    data = _run(tmp_path, "--level", "1")
    assert data["missing"] == "dcgmi" and "not installed" in data["error"]
    assert "report" not in data


def test_output_that_is_no_json_names_the_exit_code(tmp_path: Path) -> None:
    _dcgmi(tmp_path, "echo 'Error: unable to connect to host engine' >&2\nexit 1")
    data = _run(tmp_path, "--level", "1")
    assert data["error"].startswith("dcgmi printed nothing (exit code 1: Error: unable to "
                                    "connect to host engine")
    assert "report" not in data


def test_a_dcgmi_past_the_levels_limit_is_stopped_and_said(tmp_path: Path) -> None:
    _dcgmi(tmp_path, "exec sleep 60")
    data = _run(tmp_path, "--level", "1", "--timeout", "0.5")
    assert data["exit_code"] == "timeout"
    assert data["error"] == ("dcgmi diag -r 1 did not finish within 0.5 s (the level's time "
                             "limit): stopped")


@pytest.mark.parametrize(("stdout", "said"), [
    ("", "dcgmi printed nothing"),
    ("Successfully ran diagnostic for group.\n", "dcgmi printed no JSON"),
    ('{"DCGM Diagnostic": ', "dcgmi's output is not JSON"),
    ("[" * 100000 + "]" * 100000, "dcgmi printed no JSON"),
    ('{"a": ' * 100000 + "1" + "}" * 100000, "nested too deeply"),
])
def test_what_is_not_a_json_document_is_said(stdout: str, said: str) -> None:
    report, why = parse_report(stdout)
    assert report is None and said in why


def test_a_line_before_the_document_is_passed_over() -> None:
    assert parse_report("Running level 1\n" + json.dumps(DOCUMENT)) == (DOCUMENT, "")
