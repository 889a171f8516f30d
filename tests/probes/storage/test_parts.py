"""probes/storage/parts.py: the filesystem's type and capacity, its metadata rate, and a
part that fails as its error."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.probes.storage import parts

MOUNTS = """\
/dev/nvme0n1p2 / ext4 rw,relatime 0 0
proc /proc proc rw 0 0
server:/export /mnt/shared\\040data nfs4 rw 0 0
tmpfs /mnt/shared\\040data/tmp tmpfs rw 0 0
a line cut short
lustre@o2ib:/fs /lustre lustre rw 0 0
"""


def mounts(monkeypatch: pytest.MonkeyPatch, text: str | None) -> None:
    def fake_open(path: str, *args: Any, **kwargs: Any) -> io.StringIO:
        assert path == "/proc/mounts"
        if text is None:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return io.StringIO(text)

    monkeypatch.setattr(parts, "open", fake_open, raising=False)


@pytest.mark.parametrize(("path", "kind"), [
    ("/", "ext4"), ("/home/user", "ext4"), ("/lustre", "lustre"), ("/lustre/run/1", "lustre"),
    ("/lustrex", "ext4"), ("/mnt/shared data/x", "nfs4"), ("/mnt/shared data/tmp/y", "tmpfs"),
    ("/mnt/shared datax", "ext4")])
def test_the_type_is_the_longest_mount_holding_the_path(
        monkeypatch: pytest.MonkeyPatch, path: str, kind: str) -> None:
    mounts(monkeypatch, MOUNTS)
    assert parts.fs_type(path) == kind


def test_no_mount_table_is_no_type(monkeypatch: pytest.MonkeyPatch) -> None:
    mounts(monkeypatch, None)
    assert parts.fs_type("/") is None
    mounts(monkeypatch, "")
    assert parts.fs_type("/") is None


def test_this_machines_type_is_read(tmp_path: Path) -> None:
    assert parts.fs_type(str(tmp_path))


def test_capacity_is_what_a_non_root_user_can_still_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake = os.statvfs_result((4096, 1024, 1000, 300, 200, 0, 0, 0, 0, 255))
    monkeypatch.setattr(os, "statvfs", lambda path: fake)
    assert parts.capacity("/x") == {
        "total_bytes": 1000 * 1024, "free_bytes": 200 * 1024,
        "free_source": "statvfs f_bavail (space a non-root user can still write)"}


def test_a_part_that_fails_is_its_error_never_a_number(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    assert parts._part(parts.capacity, str(missing)) == {
        "error": f"No such file or directory (ENOENT): {missing}"}
    assert parts._error(OSError("no errno")) == {"error": "no errno (?)"}
    assert parts._error(OSError(errno.EIO, "Input/output error")) == {
        "error": "Input/output error (EIO)"}


def test_the_metadata_rate_is_three_operations_a_file_over_the_time_taken(
        tmp_path: Path) -> None:
    files = 25
    found = parts.metadata(str(tmp_path), files)
    assert found["files"] == files
    assert list(found["phase_seconds"]) == ["create", "stat", "remove"]
    assert found["ops_per_s"] == 3 * files / sum(found["phase_seconds"].values())
    assert found["phase_ops_per_s"] == {
        phase: files / seconds for phase, seconds in found["phase_seconds"].items()}
    assert os.listdir(tmp_path / "mdtest") == []  # every file removed


def test_a_metadata_directory_already_there_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "mdtest").mkdir()
    assert parts._part(parts.metadata, str(tmp_path), 3) == {
        "error": f"File exists (EEXIST): {tmp_path / 'mdtest'}"}
