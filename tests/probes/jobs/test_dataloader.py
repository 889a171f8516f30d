"""The data loader job program on real files, a rank at a time: it writes, reads other
nodes' files, makes small files, sweeps what an earlier run left and removes its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pytest_cluster.measure.storage.at_once import token
from pytest_cluster.probes.jobs import dataloader as probe

PROBE = Path(probe.__file__)


def rank(phase: str, folder: Path, tag: str, number: int, world: int,
         *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(PROBE), "--phase", phase, "--path", str(folder), "--token", tag,
         *extra], env={**os.environ, "RANK": str(number), "WORLD_SIZE": str(world)},
        capture_output=True, text=True, timeout=60, check=True)
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_workers_read_other_nodes_files_and_make_small_files_leaving_nothing(
        tmp_path: Path) -> None:
    tag = token(60)
    for number in range(4):  # 2 nodes of 2 workers
        wrote = rank("write", tmp_path, tag, number, 4, "--size", str(2**20))
        assert wrote["bytes"] == 2**20
    read = rank("read", tmp_path, tag, 0, 4, "--duration", "0.3", "--ranks-per-node", "2")
    assert read["files"] == 2 and read["ops"] > 0 and read["bytes"] == read["ops"] * 4096
    assert read["method"] in ("O_DIRECT",
                              "page cache dropped after each read (posix_fadvise DONTNEED)")
    meta = rank("metadata", tmp_path, tag, 1, 4, "--files", "20")
    assert (meta["ops"], meta["bytes"]) == (80, 20 * probe.METADATA_FILE_BYTES)
    assert rank("remove", tmp_path, tag, 0, 1)["removed"] == 4
    assert list(tmp_path.iterdir()) == []


def test_an_expired_runs_files_are_swept_and_a_running_ones_said(tmp_path: Path) -> None:
    old = tmp_path / f"{probe.PREFIX}{int(time.time()) - 5}-0123456789ab-md-2"
    old.mkdir()
    (old / "f1").write_bytes(b"x" * 3)
    running = tmp_path / f"{probe.PREFIX}{int(time.time()) + 3600}-abcdef012345-1"
    running.write_bytes(b"y" * 7)
    wrote = rank("write", tmp_path, token(60), 0, 1, "--size", str(2**20))
    assert [(item["path"], item["bytes"], item["removed"]) for item in wrote["leftovers"]] \
        == [(str(old), 3, True), (str(running), 7, False)]
    assert not old.exists() and running.exists()


def test_each_worker_reads_only_other_nodes_that_wrote() -> None:
    assert probe.files_to_read(0, 6, 2, None) == [2, 3, 4, 5]
    assert probe.files_to_read(2, 4, 2, [1, 2]) == [2, 3]  # job node 1 is write node 2
    assert probe.files_to_read(1, 2, 2, None) == [0, 1]  # one node: its own


def test_a_reader_reads_the_files_that_are_there_and_names_the_others(
        tmp_path: Path) -> None:
    """A file another node wrote that is not where this node looks (its mount, or the
    writer's, missing) is named, not read; none there at all is an ENOENT error (a
    missing file failed the whole reader)."""
    tag = token(60)
    for number in (0, 2):  # rank 1's file is not where this node looks
        rank("write", tmp_path, tag, number, 3, "--size", str(2**20))
    read = rank("read", tmp_path, tag, 0, 3, "--duration", "0.2")
    assert (read["files"], read["missing"]) == (1, [1]) and read["ops"] > 0
    other = token(60)
    rank("write", tmp_path, other, 0, 3, "--size", str(2**20))
    alone = rank("read", tmp_path, other, 0, 3, "--duration", "0.2")
    assert (alone["errno"], alone["missing"]) == ("ENOENT", [1, 2])
    assert "none of the 2 file(s) other nodes wrote is there" in alone["error"]
    for tag_ in (tag, other):
        rank("remove", tmp_path, tag_, 0, 1)
    assert list(tmp_path.iterdir()) == []
