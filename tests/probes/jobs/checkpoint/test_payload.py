"""What a checkpoint rank prints is what its types say: each phase's line has only the keys
RankData declares, a leftover only Leftover's."""

from __future__ import annotations

import time
from pathlib import Path

from pytest_cluster.measure.storage.at_once import token
from pytest_cluster.probes.jobs.checkpoint import PREFIX
from pytest_cluster.probes.jobs.checkpoint.payload import Leftover, RankData
from tests.probes.jobs.checkpoint.test___main__ import run_rank

DECLARED = RankData.__required_keys__ | RankData.__optional_keys__


def test_every_phases_line_has_only_the_keys_its_type_declares(tmp_path: Path) -> None:
    old = tmp_path / f"{PREFIX}{int(time.time()) - 5}-0123456789ab-0"
    old.write_bytes(b"x")
    tag = token(60)
    lines = [run_rank("write", tmp_path, tag, 0, 2), run_rank("write", tmp_path, tag, 1, 2),
             run_rank("read", tmp_path, tag, 0, 2, "--challenge", "ab" * 16),
             run_rank("remove", tmp_path, tag, 0, 2),
             run_rank("read", tmp_path, tag, 1, 2)]  # its file removed: the error
    for line in lines:
        assert set(line) <= DECLARED, set(line) - DECLARED
    assert {"bytes", "seconds", "leftovers"} <= set(lines[0])
    assert {"writer", "bad_blocks", "digest"} <= set(lines[2])
    assert {"error", "errno"} <= set(lines[4])
    (leftover,) = lines[0]["leftovers"]
    assert set(leftover) == Leftover.__required_keys__
