"""tree.py: a run directory read without following a link in any component, a fifo never
opened, a file larger than asked for left unread, the walk bounded in depth and entries."""

from __future__ import annotations

import hashlib
import os
import socket
import stat
from pathlib import Path

import pytest

from pytest_cluster.errors import BundleError
from pytest_cluster.evidence.bundle import tree as tree_module
from pytest_cluster.evidence.bundle.tree import Hashed, Odd, Tree, kind


@pytest.fixture
def run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "probes").mkdir(parents=True)
    (run / "junit.xml").write_text("<testsuites/>\n")
    (run / "probes" / "gpu-1.json").write_text("{}\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("secret\n")
    return run


def test_kind_names_each_lstat_mode_in_a_word() -> None:
    assert [kind(mode) for mode in (stat.S_IFLNK, stat.S_IFDIR, stat.S_IFIFO, stat.S_IFSOCK,
                                    stat.S_IFREG, stat.S_IFCHR, stat.S_IFBLK)] == [
        "symlink", "directory", "fifo", "socket", "file", "device", "device"]


def test_what_is_no_directory_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for path in (tmp_path / "nowhere", tmp_path / "file"):
        with pytest.raises(BundleError, match=rf"^{path}: not a directory \(.*\); expected a "
                                              r"run's evidence directory, e\.g\. reports/latest$"):
            Tree.open(path)


def test_the_run_directory_itself_may_be_a_link(run: Path, tmp_path: Path) -> None:
    (tmp_path / "latest").symlink_to(run)
    with Tree.open(tmp_path / "latest") as opened:
        assert opened.walk() == (["junit.xml", "probes/gpu-1.json"], [])


def test_a_file_is_read_up_to_its_limit_and_a_larger_one_not_at_all(run: Path) -> None:
    with Tree.open(run) as opened:
        assert opened.read("junit.xml", 14) == b"<testsuites/>\n"
        assert opened.read("junit.xml", 13) == Odd("junit.xml", "too large", "14 bytes")
        assert opened.read("missing", 100) is None
        assert opened.read("probes", 100) == Odd("probes", "directory")


def test_a_link_is_named_with_its_target_and_never_followed(run: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (run / "linked").symlink_to(outside)
    (run / "probes" / "secret").symlink_to(outside / "secret")
    with Tree.open(run) as opened:
        assert opened.hash("probes/secret") == Odd("probes/secret", "symlink",
                                                   str(outside / "secret"))
        assert opened.hash("linked/secret") == Odd("linked", "symlink", str(outside))
        files, odd = opened.walk()
    assert files == ["junit.xml", "probes/gpu-1.json"]
    assert odd == [Odd("linked", "symlink", str(outside)),
                   Odd("probes/secret", "symlink", str(outside / "secret"))]


def test_a_file_is_hashed_through_its_directories(run: Path) -> None:
    data = (run / "probes" / "gpu-1.json").read_bytes()
    with Tree.open(run) as opened:
        assert opened.hash("probes/gpu-1.json") == Hashed(hashlib.sha256(data).hexdigest(),
                                                          len(data))
        assert opened.hash("junit.xml/inner") is None  # a file where a directory is named
        assert opened.hash("probes/none") is None
        assert opened.hash("none/none") is None


def test_a_fifo_and_a_socket_are_named_never_opened(run: Path) -> None:
    os.mkfifo(run / "probes" / "fifo")  # opened, it would wait for a writer
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(run / "sock"))
        with Tree.open(run) as opened:
            assert opened.hash("probes/fifo") == Odd("probes/fifo", "fifo")
            assert opened.read("sock", 100) == Odd("sock", "socket")
            assert opened.walk()[1] == [Odd("probes/fifo", "fifo"), Odd("sock", "socket")]
    finally:
        listener.close()


def test_directories_deeper_than_the_bound_are_named_not_entered(
        run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (run / "a" / "b" / "c").mkdir(parents=True)
    (run / "a" / "b" / "c" / "deep.json").write_text("{}")
    (run / "a" / "b" / "shallow.json").write_text("{}")
    monkeypatch.setattr(tree_module, "MAX_LEVELS", 2)
    with Tree.open(run) as opened:
        files, odd = opened.walk()
    assert files == ["a/b/shallow.json", "junit.xml", "probes/gpu-1.json"]
    assert odd == [Odd("a/b/c", "too deep", "more than 2 levels of directories; not walked")]


def test_a_directory_of_more_entries_than_the_bound_is_refused(
        run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree_module, "MAX_ENTRIES", 2)
    with Tree.open(run) as opened, pytest.raises(BundleError) as caught:
        opened.walk()
    assert str(caught.value) == f"{run}: more than 2 entries; not a run's evidence directory"
