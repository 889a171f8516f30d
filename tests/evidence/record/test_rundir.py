"""rundir.py: one directory per run, never reused, `latest` moved only where it is ours,
an empty one removed, and the line that says where the evidence is."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_cluster.evidence.record.rundir import (
    create_run_dir,
    point_latest,
    remove_if_empty,
    run_dir_name,
)


def test_run_directories_never_collide_and_latest_follows(tmp_path: Path) -> None:
    started = 1795395060.0  # 2026-11-23 00:51:00 UTC
    assert run_dir_name("gpu cluster/../x", started) == "20261123T005100Z-gpu_cluster_.._x"
    first = create_run_dir(tmp_path, "c", started)
    second = create_run_dir(tmp_path, "c", started)
    assert (first.name, second.name) == ("20261123T005100Z-c", "20261123T005100Z-c-2")
    point_latest(first)
    point_latest(second)
    assert os.readlink(tmp_path / "latest") == second.name
    (tmp_path / "latest").unlink()
    (tmp_path / "latest").mkdir()  # not ours: left alone
    point_latest(first)
    assert (tmp_path / "latest").is_dir() and not (tmp_path / "latest").is_symlink()


def test_the_evidence_line_names_the_files_the_link_and_what_is_elsewhere(
        tmp_path: Path) -> None:
    from pytest_cluster.evidence.record.rundir import evidence_line, outside

    run = tmp_path / "reports" / "20261125T000000Z-c"
    (run / "probes").mkdir(parents=True)
    (run / "results.jsonl").write_text("", encoding="utf-8")
    away = str(tmp_path / "junit.xml")
    assert outside(run, (str(run / "junit.xml"), None, away, "")) == [away]
    assert evidence_line(run, True, [away]) == (
        f"evidence: {run}/ (probes/, results.jsonl, manifest.intoto.json); "
        f"{tmp_path / 'reports' / 'latest'} -> 20261125T000000Z-c; also {away}")
    assert evidence_line(run, False, []).endswith(
        "latest left as it is (not a link pytest-cluster made)")


def test_a_name_of_nothing_safe_is_cluster_and_a_long_one_is_cut() -> None:
    started = 1795395060.0
    assert run_dir_name("../..", started) == "20261123T005100Z-cluster"
    assert run_dir_name("c" * 200, started) == "20261123T005100Z-" + "c" * 80


def test_a_run_that_wrote_nothing_leaves_no_directory(tmp_path: Path) -> None:
    empty = create_run_dir(tmp_path, "c", 0.0)
    (empty / "probes" / "n1").mkdir(parents=True)
    remove_if_empty(empty)
    assert not empty.exists()
    kept = create_run_dir(tmp_path, "c", 0.0)
    (kept / "probes").mkdir()
    (kept / "probes" / "plan.json").write_text("{}")
    (kept / "empty").mkdir()
    remove_if_empty(kept)
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*")) == [
        "probes", "probes/plan.json"]
