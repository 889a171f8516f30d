"""probes/storage/transfer.py: the write and the uncached read through a file no name keeps
alive."""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_cluster.probes import storage as probe
from pytest_cluster.probes.storage import transfer
from pytest_cluster.probes.storage.payload import Transfer
from tests.probes.test_storage import MiB, ours


def resident_pages(fd: int, size: int) -> int:
    """Pages of the file behind `fd` in the page cache (mincore over a mapping of it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    assert address not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
    try:
        pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        vector = (ctypes.c_ubyte * pages)()
        assert libc.mincore(address, size, vector) == 0, os.strerror(ctypes.get_errno())
        return sum(v & 1 for v in vector)
    finally:
        libc.munmap(address, size)


@pytest.fixture
def unlinked(scratch: Path) -> Iterator[tuple[int, str]]:
    fd, how = probe.open_unlinked(probe.Workspace(str(scratch)))
    try:
        yield fd, how
    finally:
        os.close(fd)


def test_the_test_file_has_no_name_and_its_pages_can_be_evicted(
        scratch: Path, unlinked: tuple[int, str]) -> None:
    """The uncached read's fallback (fadvise DONTNEED) works through the descriptor of a
    file without a name: after it, none of the file is in the page cache."""
    fd, how = unlinked
    assert how == "O_TMPFILE: the file never had a name"
    assert ours(scratch) == []
    assert probe.write_file(fd, 32 * MiB)["bytes"] == 32 * MiB
    assert resident_pages(fd, 32 * MiB) > 0  # just written: cached
    method = probe.evict(fd, probe.fs_type(str(scratch)))
    assert method == "posix_fadvise(DONTNEED) evicted the file from the page cache first"
    assert resident_pages(fd, 32 * MiB) == 0
    read = probe.read_file(fd, 32 * MiB, probe.fs_type(str(scratch)))
    assert read["bytes"] == 32 * MiB
    assert read["method"] == ("sequential 16 MiB reads; O_DIRECT; every block's stamp "
                              "checked")


def test_without_o_tmpfile_the_file_is_unlinked_at_once(scratch: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "O_TMPFILE")
    workspace = probe.Workspace(str(scratch))
    fd, how = probe.open_unlinked(workspace)
    try:
        assert how == "created and unlinked at once (O_TMPFILE refused: not on this platform)"
        assert ours(scratch) == []
        assert os.fstat(fd).st_nlink == 0
        assert Path(workspace.named_data).name.endswith(".data")
    finally:
        os.close(fd)


def test_a_block_read_back_with_other_bytes_is_an_error(unlinked: tuple[int, str]) -> None:
    fd, _ = unlinked
    probe.write_file(fd, 2 * probe.BLOCK)
    os.pwrite(fd, b"\xff" * 8, probe.BLOCK)  # the second block's stamp
    os.fsync(fd)
    assert probe.read_file(fd, 2 * probe.BLOCK, "ext4") == {
        "error": "read back other bytes than were written (the block at offset 16777216): "
                 "the filesystem returned stale or wrong data"}


def test_a_size_that_is_no_whole_number_of_blocks_is_written_and_read_exactly(
        unlinked: tuple[int, str]) -> None:
    fd, _ = unlinked
    size = probe.BLOCK + 5
    assert probe.write_file(fd, size)["bytes"] == size
    assert os.fstat(fd).st_size == size
    assert probe.read_file(fd, size, "ext4")["bytes"] == size


def test_a_file_shorter_than_written_is_an_error_never_a_rate(
        unlinked: tuple[int, str]) -> None:
    fd, _ = unlinked
    probe.write_file(fd, MiB)
    os.ftruncate(fd, MiB // 2)
    assert probe.read_file(fd, MiB, "ext4") == {
        "error": f"read back {MiB // 2} of the {MiB} bytes written"}


def test_memory_is_no_cache_to_evict() -> None:
    for filesystem in ("tmpfs", "ramfs"):
        assert probe.evict(-1, filesystem) == (
            f"{filesystem} is memory-backed: RAM is the storage itself")


def test_a_read_skipped_or_a_write_failed_reads_nothing(
        scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = probe.Workspace(str(scratch))
    written, read = transfer.write_and_read(workspace, MiB, ["read"], "ext4")
    assert written["bytes"] == MiB and written["method"].endswith(
        "; test file O_TMPFILE: the file never had a name")
    assert read == {"skipped": "not in contract"}

    def full(fd: int, size: int) -> Transfer:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(transfer, "write_file", full)
    assert transfer.write_and_read(workspace, MiB, [], "ext4") == (
        {"error": "No space left on device (ENOSPC)"},
        {"error": "no test file to read: No space left on device (ENOSPC)"})
    assert ours(scratch) == []


def test_no_file_that_can_be_made_is_both_parts_error(tmp_path: Path) -> None:
    workspace = probe.Workspace(str(tmp_path / "gone"))
    assert transfer.write_and_read(workspace, MiB, [], None) == (
        {"error": f"cannot create a file in {tmp_path / 'gone'}: No such file or directory"},
        {"error": f"no test file to read: cannot create a file in {tmp_path / 'gone'}: No "
                  "such file or directory"})
