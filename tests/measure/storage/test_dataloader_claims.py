"""What a data loader's worker may claim (measure/storage/dataloader_claims.py): each number of its
report checked; the claims against what was asked are tested through whole runs in
test_dataloader.py and test_storage_claims.py."""

from __future__ import annotations

from typing import cast

from pytest_cluster.measure.storage.dataloader_claims import worker_figures
from pytest_cluster.probes.jobs.dataloader import RankData


def test_a_workers_hostile_numbers_are_its_error() -> None:
    found = worker_figures("n1", 0, cast("RankData", {
        "ops": float("inf"), "bytes": 1, "seconds": 1, "cpu_s": 0, "late_s": 0}), "")
    assert found.error.startswith("bad data loader output: ops is")
