"""regular_file.py: a file handed over by another process read as a regular file only: a
FIFO, a socket or a directory refused by name at once (never waited on), a file larger
than asked for refused before it is read, a log read only at its tail."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_cluster.errors import InputError
from pytest_cluster.evidence.regular_file import open_regular, read_regular, read_tail


def test_a_regular_file_is_read_whole_within_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "verdict.json"
    path.write_bytes(b"{}\n")
    assert read_regular(path, 3) == b"{}\n"
    with open_regular(path) as stream:
        assert stream.read() == b"{}\n"


def test_a_file_over_its_limit_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "verdict.json"
    path.write_bytes(b"x" * 10)
    with pytest.raises(InputError) as caught:
        read_regular(path, 9, "verdict.json")
    assert str(caught.value) == ("verdict.json: 10 bytes, larger than 9 bytes (the most "
                                 "read of it)")
    with pytest.raises(InputError, match=rf"^{path}: 10 bytes, larger than 9 bytes"):
        read_regular(path, 9)  # named by its path unless told otherwise


def test_a_fifo_is_refused_at_once_never_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "verdict.json"
    os.mkfifo(fifo)
    # in a process of its own: a reader that waited for a writer would block forever
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; from pytest_cluster."
         "evidence.regular_file import read_regular; read_regular(Path(sys.argv[1]), 10, "
         "'verdict.json')", str(fifo)], capture_output=True, text=True, timeout=30,
        check=False)
    assert done.returncode == 1
    assert done.stderr.rstrip().endswith(
        "InputError: verdict.json: a fifo, not a regular file")


def test_a_directory_and_a_socket_are_named_as_what_they_are(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        open_regular(tmp_path, "the log")
    assert str(caught.value) == "the log: a directory, not a regular file"
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(tmp_path / "sock"))
        with pytest.raises(InputError) as caught:
            read_tail(tmp_path / "sock", 10, "the log")
        assert str(caught.value) == "the log: a socket, not a regular file"
    finally:
        listener.close()


def test_a_missing_file_is_the_callers_to_say(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "none", 10)


def test_the_tail_of_a_log_is_its_last_bytes(tmp_path: Path) -> None:
    log = tmp_path / "slurm.log"
    log.write_bytes(b"0123456789")
    assert read_tail(log, 4) == b"6789"
    assert read_tail(log, 100) == b"0123456789"
