"""What a checkpoint burst's rank may claim (measure/storage/checkpoint_claims.py): each number of
its report checked; the claims against what was asked are tested through whole bursts in
test_checkpoint.py."""

from __future__ import annotations

from typing import Any, cast

import pytest

from pytest_cluster.measure.storage.checkpoint_claims import figures as rank_figures
from pytest_cluster.probes.jobs.checkpoint import RankData


@pytest.mark.parametrize("data", [
    {"bytes": float("nan"), "seconds": 1.0},
    {"bytes": True, "seconds": 1.0},
    {"bytes": 10**400, "seconds": 1.0},
    {"bytes": -5, "seconds": 1.0},
    {"bytes": "10", "seconds": 1.0},
])
def test_a_ranks_hostile_numbers_are_its_error_never_a_figure(data: dict[str, Any]) -> None:
    report = {"started_at": 0, "ended_at": 1, "late_s": 0, "cpu_s": 0, **data}
    found = rank_figures("n1", 0, cast("RankData", report), "write", "")
    assert found.error.startswith("bad checkpoint output: bytes is")


def test_the_time_a_rank_waited_for_its_data_is_kept_and_checked() -> None:
    report: RankData = {"bytes": 10, "seconds": 1.0, "started_at": 0, "ended_at": 1,
                        "late_s": 0, "cpu_s": 0}
    assert rank_figures("n1", 0, {**report, "wait_s": 0.25}, "write", "").wait_s == 0.25
    assert rank_figures("n1", 0, report, "write", "").wait_s == 0.0  # an older probe's
    assert rank_figures("n1", 0, cast("RankData", {**report, "wait_s": "x"}), "write",
                    "").error == \
        "bad checkpoint output: wait_s is 'x'"
