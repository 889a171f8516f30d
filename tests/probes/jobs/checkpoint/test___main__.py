"""A checkpoint rank as it is shipped (`python -c PROGRAM`, RANK and WORLD_SIZE set): its
arguments checked, one JSON line per phase, an error said with its errno."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.measure.storage.at_once import token
from pytest_cluster.probes.jobs import job_source
from pytest_cluster.probes.jobs.checkpoint.__main__ import _indexes

#: A rank as job_node starts one: the program as it is shipped, `python -c` it.
A_RANK = (sys.executable, "-c", job_source("checkpoint"))


def run_rank(phase: str, folder: Path, tag: str, rank: int, world: int, *extra: str,
             size: int = 3 * 2**20 + 5000, block: int = 2**20) -> dict[str, Any]:
    done = subprocess.run(
        [*A_RANK, "--phase", phase, "--path", str(folder), "--token", tag,
         "--size", str(size), "--block", str(block), *extra],
        env={**os.environ, "RANK": str(rank), "WORLD_SIZE": str(world)},
        capture_output=True, text=True, timeout=60, check=True)
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_the_write_nodes_are_node_indexes() -> None:
    assert _indexes("0,1,3") == [0, 1, 3]
    for bad in ("", "0,,1", "a", "1,-2"):
        with pytest.raises(argparse.ArgumentTypeError, match="not node indexes like 0,1,3"):
            _indexes(bad)


@pytest.mark.parametrize("extra", [("--token", "../etc"), ("--block", "5000"),
                                   ("--size", "0"), ("--challenge", "xyz")])
def test_bad_arguments_end_the_rank_before_it_touches_a_file(
        tmp_path: Path, extra: tuple[str, ...]) -> None:
    done = subprocess.run(
        [*A_RANK, "--phase", "write", "--path", str(tmp_path), "--token", token(60),
         "--size", str(2**20), "--block", str(2**20), *extra],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and "bad arguments: token" in done.stderr
    assert done.stdout == "" and list(tmp_path.iterdir()) == []


def test_a_phase_says_who_ran_it_and_a_remove_counts_the_tokens_files(tmp_path: Path) -> None:
    tag = token(60)
    (tmp_path / "data.bin").write_bytes(b"x")
    removed = run_rank("remove", tmp_path, tag, 3, 4)
    assert {key: removed[key] for key in ("rank", "world", "phase", "block", "removed")} == {
        "rank": 3, "world": 4, "phase": "remove", "block": 2**20, "removed": 0}
    run_rank("write", tmp_path, tag, 0, 1, size=2**20)
    assert run_rank("remove", tmp_path, tag, 0, 1)["removed"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["data.bin"]


def test_a_path_that_is_not_there_is_the_phases_error_with_its_errno(tmp_path: Path) -> None:
    absent = tmp_path / "absent"
    wrote = run_rank("write", absent, token(60), 0, 1)
    assert wrote["error"] == f"write on {absent}: No such file or directory"
    assert wrote["errno"] == "ENOENT" and "bytes" not in wrote
