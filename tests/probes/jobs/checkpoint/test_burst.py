"""A rank's write and read on real files (real fsync): every block read back checked, a
short file's missing blocks bad, a stopped write's partial file removed."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from pytest_cluster.measure.storage.at_once import token
from pytest_cluster.probes.jobs import checkpoint as probe
from tests.probes.jobs.checkpoint.test___main__ import A_RANK, run_rank


def test_each_rank_reads_back_the_next_nodes_file_every_block_checked(tmp_path: Path) -> None:
    tag = token(60)
    for rank in range(2):
        wrote = run_rank("write", tmp_path, tag, rank, 2)
        assert wrote["bytes"] == 3 * 2**20 + 5000 and wrote["seconds"] > 0
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [f"{probe.PREFIX}{tag}-0", f"{probe.PREFIX}{tag}-1"]
    read = run_rank("read", tmp_path, tag, 0, 2)
    assert (read["writer"], read["bytes"], read["bad_blocks"]) == (1, 3 * 2**20 + 5000, 0)
    assert not (tmp_path / f"{probe.PREFIX}{tag}-1").exists()  # the reader removes it
    # a byte changed in the other file: its block is named, the others are not
    other = tmp_path / f"{probe.PREFIX}{tag}-0"
    data = bytearray(other.read_bytes())
    data[2 * 2**20 + 77] ^= 0xFF
    other.write_bytes(bytes(data))
    read = run_rank("read", tmp_path, tag, 1, 2)
    assert (read["writer"], read["bad_blocks"], read["first_bad_block"]) == (0, 1, 2)
    assert list(tmp_path.iterdir()) == []


def test_a_short_file_is_read_to_its_end_and_its_missing_blocks_are_bad(
        tmp_path: Path) -> None:
    tag = token(60)
    run_rank("write", tmp_path, tag, 1, 2, size=4 * 2**20, block=2**20)
    written = tmp_path / f"{probe.PREFIX}{tag}-1"
    with written.open("r+b") as f:  # its writer cut off in its third block
        f.truncate(2 * 2**20 + 4096)
    read = run_rank("read", tmp_path, tag, 0, 2, size=4 * 2**20, block=2**20)
    assert (read["bytes"], read["file_bytes"]) == (2 * 2**20 + 4096, 2 * 2**20 + 4096)
    assert (read["bad_blocks"], read["first_bad_block"]) == (2, 2)  # blocks 2 and 3
    assert read["seconds"] > 0 and read["wait_s"] >= 0
    assert list(tmp_path.iterdir()) == []


def test_a_write_stopped_by_sigterm_removes_its_partial_file(tmp_path: Path) -> None:
    tag = token(60)
    process = subprocess.Popen(
        [*A_RANK, "--phase", "write", "--path", str(tmp_path), "--token",
         tag, "--size", str(2**40), "--block", str(2**20)],
        env={**os.environ, "RANK": "0", "WORLD_SIZE": "1"}, stdout=subprocess.PIPE)
    target = tmp_path / f"{probe.PREFIX}{tag}-0"
    deadline = time.monotonic() + 30
    while not (target.exists() and target.stat().st_size > 0):
        assert time.monotonic() < deadline, "the write did not start"
        time.sleep(0.01)
    process.terminate()
    assert process.wait(30) == 128 + 15
    assert list(tmp_path.iterdir()) == []

