"""probes/storage/__main__.py: the parts run in order, what each says when it cannot run,
the one document printed, and a stop by signal that removes what it wrote. Run here, in
this process (its signal handlers put back after each test)."""

from __future__ import annotations

import errno
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.probes.storage import __main__ as probe
from pytest_cluster.probes.storage.parts import fs_type
from pytest_cluster.probes.storage.workspace import Workspace

MiB = 2**20
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@pytest.fixture(autouse=True)
def handlers() -> Iterator[None]:
    """The probe sets its own handlers: pytest's come back afterwards."""
    saved = {signum: signal.getsignal(signum) for signum in SIGNALS}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def printed(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert probe.main(list(argv)) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["probe"], document["schema"]) == ("storage", 1)
    data: dict[str, Any] = document["data"]
    return data


def test_every_part_is_measured_and_nothing_is_left(
        scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = 10
    data = printed(capsys, "--path", str(scratch), "--io-size", str(MiB), "--files",
                   str(files))
    assert (data["path"], data["leftovers"], data["cleaned_up"]) == (str(scratch), [], True)
    assert data["fs_type"] == fs_type(str(scratch))
    assert data["capacity"]["total_bytes"] > 0
    assert (data["write"]["bytes"], data["read"]["bytes"]) == (MiB, MiB)
    assert data["metadata"]["files"] == files
    assert os.listdir(scratch) == []
    assert all(signal.getsignal(signum) not in (signal.SIG_DFL, signal.default_int_handler)
               for signum in SIGNALS)  # its own, while it ran


def test_a_path_that_is_no_directory_is_the_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "file"
    path.write_text("")
    data = printed(capsys, "--path", str(path))
    assert data == {"path": str(path), "fs_type": fs_type(str(path)),
                    "error": f"{path} does not exist or is not a directory on this node"}


def test_the_parts_skipped_are_said_not_measured(
        scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = printed(capsys, "--path", str(scratch), "--skip", "write", "--skip", "read",
                   "--skip", "metadata")
    skipped = {"skipped": "not in contract"}
    assert (data["write"], data["read"], data["metadata"]) == (skipped, skipped, skipped)


def test_too_little_free_space_writes_nothing(
        scratch: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    free = MiB
    monkeypatch.setattr(probe, "capacity", lambda path: {"total_bytes": 2 * free,
                                                         "free_bytes": free})
    data = printed(capsys, "--path", str(scratch), "--io-size", str(free), "--skip",
                   "metadata")
    error = f"not enough free space for a {free} byte test file ({free} bytes free)"
    assert (data["write"], data["read"]) == (
        {"error": error}, {"error": f"no test file to read: {error}"})


def test_a_sweep_or_a_directory_that_fails_is_said(
        scratch: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(path: str) -> list[Any]:
        raise PermissionError(errno.EACCES, "Permission denied", path)

    def read_only(self: Workspace) -> str:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(probe, "sweep", denied)
    monkeypatch.setattr(Workspace, "make_directory", read_only)
    data = printed(capsys, "--path", str(scratch), "--skip", "write", "--skip", "read")
    assert (data["leftovers"], data["leftovers_error"]) == (
        [], f"Permission denied (EACCES): {scratch}")
    assert data["metadata"] == {
        "error": f"cannot create a directory in {scratch}: Read-only file system"}
    assert data["cleaned_up"] is True


def test_a_stop_by_signal_removes_what_it_wrote_then_exits(
        scratch: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = Workspace(str(scratch))
    workspace.make_directory()
    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    probe._stop(workspace)(signal.SIGTERM, None)
    assert exits == [128 + signal.SIGTERM]
    assert os.listdir(scratch) == []
    assert capsys.readouterr().err == "storage probe: stopped by SIGTERM; removed what it wrote\n"
