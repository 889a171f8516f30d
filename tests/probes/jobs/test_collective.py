"""What a collective rank keeps of NCCL's log: the lines measure/network/nccl_log.py reads, bounded,
the file removed; and the log it asks NCCL for, unless the environment already directs it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_cluster.probes.jobs import collective
from pytest_cluster.probes.jobs.collective import nccl_lines
from tests.measure.network.test_nccl_log import IB_GDR, IB_NO_GDR


def test_only_the_lines_read_are_kept_and_bounded(tmp_path: Path) -> None:
    """What a rank keeps of NCCL's log file (the collective probe's nccl_lines): the lines
    this module reads, at most 400, the file removed."""
    log = tmp_path / "nccl.log"
    log.write_text(IB_GDR)
    assert nccl_lines(str(log)) == [line.strip() for line in IB_GDR.splitlines()
                                    if "ignored" not in line]
    assert not log.exists()
    log.write_text(IB_NO_GDR * 1000)
    lines = nccl_lines(str(log))
    assert lines is not None and len(lines) == 400
    assert nccl_lines(None) is None and nccl_lines(str(log)) is None  # none, or gone


def test_a_line_is_kept_only_after_nccl_info_and_a_channel_only_with_its_transport() -> None:
    assert collective.kept("h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0")
    assert not collective.kept("NET/IB : Using [0]mlx5_0:1/IB")  # no NCCL INFO
    assert collective.kept("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC")
    assert not collective.kept("h:1:1 [0] NCCL INFO Channel 00/32 :    0   1   2")
    assert not collective.kept(" " * collective.MAX_LINE + "NCCL INFO Using network IB")


def test_nccl_is_asked_for_its_log_unless_the_environment_directs_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NCCL_DEBUG", "WARN")
    assert collective.nccl_debug() is None
    for name in ("NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS"):
        monkeypatch.setenv(name, "")  # restored afterwards, whatever nccl_debug sets
        monkeypatch.delenv(name)
    path = collective.nccl_debug()
    assert path is not None and Path(path).exists()
    assert (os.environ["NCCL_DEBUG"], os.environ["NCCL_DEBUG_SUBSYS"],
            os.environ["NCCL_DEBUG_FILE"]) == ("INFO", "INIT,NET", path)
    assert nccl_lines(path) == [] and not Path(path).exists()


def test_a_rank_hung_in_a_sweep_says_the_sweep_s_payload_not_the_case_s() -> None:
    """A job of the 4 GiB case sweeps from 1 MiB: a rank hung there says so."""
    sweep_phase = collective.sweep_phase
    assert sweep_phase("all_reduce", 2**20, 0, 7) == \
        "the sweep's 1 MiB all_reduce (payload 1 of 7)"
    assert sweep_phase("all_gather", 4 * 2**30, 6, 7) == \
        "the sweep's 4 GiB all_gather (payload 7 of 7)"
    assert sweep_phase("all_reduce", 1536, 0, 1).startswith("the sweep's 1536 B all_reduce")
