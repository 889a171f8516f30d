"""probes/storage/workspace.py: what this run may leave under the tested path, named before
anything is made, and removed however the probe ends."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.probes.storage import workspace
from pytest_cluster.probes.storage.sweep import OURS
from pytest_cluster.probes.storage.workspace import LOCK_NAME, Workspace


@pytest.mark.parametrize(("hostname", "tag"), [
    ("node-1.cluster", "node-1.cluster"), ("gpu 7/x", "gpu_7_x"), ("nœud", "n_ud"),
    ("", "unknown")])
def test_the_host_tag_is_the_hostname_made_safe_for_a_file_name(
        monkeypatch: pytest.MonkeyPatch, hostname: str, tag: str) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: hostname)
    assert workspace.host_tag() == tag


def test_the_pid_namespace_is_its_inode_or_0_when_unknown(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert workspace.pid_namespace() == os.stat("/proc/self/ns/pid").st_ino
    real_stat = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if path == "/proc/self/ns/pid":
            raise PermissionError(13, "Permission denied", path)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    assert workspace.pid_namespace() == 0


def test_its_names_are_the_ones_a_later_sweep_knows_as_ours(tmp_path: Path) -> None:
    place = Workspace(str(tmp_path))
    name = Path(place.directory).name
    match = OURS.match(name)
    assert match is not None and not match["data"]
    assert (match["host"], int(match["ns"]), int(match["pid"])) == (
        workspace.host_tag(), workspace.pid_namespace(), os.getpid())
    data = OURS.match(Path(place.named_data).name)
    assert data is not None and data["data"] == ".data"
    assert Workspace(str(tmp_path)).directory != place.directory
    assert os.listdir(tmp_path) == []  # named, nothing made


def test_its_directory_is_made_private_and_locked(tmp_path: Path) -> None:
    place = Workspace(str(tmp_path))
    made = place.make_directory()
    assert made == place.directory
    assert os.stat(made).st_mode & 0o777 == 0o700
    assert os.listdir(made) == [LOCK_NAME]
    other = subprocess.run([sys.executable, "-c", (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "except OSError:\n    print('held')\nelse:\n    print('free')\n"),
        os.path.join(made, LOCK_NAME)], capture_output=True, text=True, check=True)
    assert other.stdout == "held\n"
    assert place.remove() is True
    assert os.listdir(tmp_path) == []


def test_removing_it_removes_whatever_of_it_exists(tmp_path: Path) -> None:
    place = Workspace(str(tmp_path))
    assert place.remove() is True  # nothing made: nothing left
    Path(place.named_data).write_bytes(b"x")
    (Path(place.make_directory()) / "mdtest" / "deep").mkdir(parents=True)
    (Path(place.directory) / "mdtest" / "f0000001").write_bytes(b"y")
    assert place.remove() is True
    assert os.listdir(tmp_path) == []
    assert place.remove() is True


def test_a_directory_is_emptied_with_its_owner_lock_last(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "d"
    directory.mkdir()
    for name in ("a", LOCK_NAME, "z"):
        (directory / name).write_text("")
    removed: list[str] = []
    real_unlink = os.unlink

    def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        removed.append(os.path.basename(path))
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    assert workspace.remove_tree(str(directory)) is True
    assert removed[-1] == LOCK_NAME and sorted(removed) == sorted(["a", LOCK_NAME, "z"])
    assert not directory.exists()


def test_what_is_not_there_is_not_removed_by_this_call(tmp_path: Path) -> None:
    assert workspace.remove_tree(str(tmp_path / "gone")) is False
    link = tmp_path / "link"
    link.symlink_to(tmp_path)  # a link is removed, never followed
    assert workspace.remove_tree(str(link)) is True
    assert tmp_path.is_dir() and not link.exists()
