"""The burst's files: whose file a rank reads, and an earlier burst's files swept after its
expiry (a running one's said and left alone)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pytest_cluster.measure.storage.at_once import token
from pytest_cluster.probes.jobs.checkpoint import files as probe
from tests.probes.jobs.checkpoint.test___main__ import run_rank


@pytest.mark.parametrize(("rank", "world", "per_node", "write_nodes", "writer"), [
    (0, 4, 1, None, 1), (3, 4, 1, None, 0),  # the next node, round
    (5, 8, 2, None, 7), (7, 8, 2, None, 1),  # the same GPU of the next node
    (1, 3, 1, [0, 1, 3], 3),  # the write job's node 2 did not write: the next that did
    (2, 3, 1, [0, 1, 3], 0),
    (3, 6, 2, [0, 2, 3], 7),  # node 1's GPU 1 reads the write job's node 3's GPU 1
    (0, 1, 1, None, 0),  # one node: its own
])
def test_a_reader_reads_the_same_writer_of_the_next_node_that_wrote(
        rank: int, world: int, per_node: int, write_nodes: list[int] | None,
        writer: int) -> None:
    assert probe.writer_of(rank, world, per_node, write_nodes) == writer


def test_a_stale_files_expiry_is_swept_and_a_running_bursts_is_said_not_swept(
        tmp_path: Path) -> None:
    old = tmp_path / f"{probe.PREFIX}{int(time.time()) - 5}-0123456789ab-3"
    running = tmp_path / f"{probe.PREFIX}{int(time.time()) + 600}-0123456789ab-3"
    other = tmp_path / "data.bin"
    for path in (old, running, other):
        path.write_bytes(b"x" * 10)
    wrote = run_rank("write", tmp_path, token(60), 0, 1)
    assert [(item["path"], item["bytes"], item["removed"]) for item in wrote["leftovers"]] \
        == [(str(old), 10, True), (str(running), 10, False)]
    assert "may still be running until" in wrote["leftovers"][1]["why"]
    assert running.exists() and other.exists() and not old.exists()
    run_rank("remove", tmp_path, wrote_token(tmp_path), 0, 1)


def wrote_token(folder: Path) -> str:
    name = next(p.name for p in folder.iterdir() if p.name.startswith(probe.PREFIX)
                and "0123456789ab" not in p.name)
    return name[len(probe.PREFIX):].rsplit("-", 1)[0]

