"""probes/nic/sysfs.py: a sysfs tree read as untrusted (Reader), how a number or a name
found in it is taken, and the ports' Budget."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_cluster.probes.nic import sysfs
from pytest_cluster.probes.nic.sysfs import Budget, Reader, whole_number


def reader_of(root: Path, files: dict[str, str]) -> Reader:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return Reader(str(root))


@pytest.mark.parametrize(("raw", "value"), [
    ("0", 0), ("42", 42), ("-1", -1), ("0x1a", 26), ("0XFF", 255),
    (str(sysfs.HIGHEST), sysfs.HIGHEST), (str(sysfs.LOWEST), sysfs.LOWEST),
    ("0x" + "f" * 16, 2**64 - 1)])
def test_a_number_sysfs_writes_is_taken_as_written(raw: str, value: int) -> None:
    assert whole_number(raw) == value


@pytest.mark.parametrize("raw", [
    str(2**70), str(2**64), str(sysfs.LOWEST - 1), "9" * 21, "0x" + "1" * 17, "", "+5",
    "1.5", "1e3", "0x", "0x1_0", "١٢", "twelve", " 7", "7\n"])
def test_anything_else_is_no_number(raw: str) -> None:
    assert whole_number(raw) is None


def test_a_name_is_a_name_as_the_kernel_allows_one() -> None:
    for good in ("eth0", "mlx5_0", "ib0.8001", "x" * sysfs.MAX_NAME):
        assert sysfs.valid_name(good) and sysfs.shown(good) == good
    for bad in ("", ".", "..", "a b", "a/b", "tab\there", "x" * (sysfs.MAX_NAME + 1), "\x1b["):
        assert not sysfs.valid_name(bad), bad
    assert sysfs.shown("bad name") == "'bad name'"
    assert sysfs.shown("x" * 200) == repr("x" * sysfs.MAX_NAME)
    assert sysfs.shown("é\n") == "'\\xe9\\n'"


def test_what_a_file_that_is_no_regular_file_is_is_said_in_words() -> None:
    assert sysfs.kind_of(stat.S_IFDIR) == "a directory"
    assert sysfs.kind_of(stat.S_IFIFO) == "a fifo"
    assert sysfs.kind_of(stat.S_IFSOCK) == "a socket"
    assert sysfs.kind_of(stat.S_IFCHR) == "a character device"
    assert sysfs.kind_of(stat.S_IFBLK) == "a block device"
    assert sysfs.kind_of(stat.S_IFLNK) == "a link"
    assert sysfs.kind_of(0) == "not a file"


def test_a_file_read_is_its_text_and_one_not_read_is_named_with_why(tmp_path: Path) -> None:
    reader = reader_of(tmp_path, {"a/state": "  up \n", "a/mtu": "9000\n",
                                  "a/big": str(2**70), "a/word": "fast\n",
                                  "a/long": "x" * (sysfs.MAX_TEXT + 1)})
    os.mkfifo(tmp_path / "a/fifo")
    missing: dict[str, str] = {}
    assert reader.text(reader.path("a", "state"), missing) == "up"
    assert reader.number(reader.path("a", "mtu"), missing) == 9000
    assert missing == {}
    assert reader.number(reader.path("a", "gone"), missing) is None
    assert reader.number(reader.path("a", "big"), missing) is None
    assert reader.number(reader.path("a", "word"), missing) is None
    assert reader.text(reader.path("a", "long"), missing) is None
    assert reader.text(reader.path("a", "fifo"), missing) is None
    assert reader.text(reader.path("a"), missing) is None
    assert missing == {
        str(tmp_path / "a/gone"): "not present",
        str(tmp_path / "a/big"): f"not a number: {str(2**70)!r} (expected a whole number of "
                                 "at most 20 digits, or 0x and 16)",
        str(tmp_path / "a/word"): "not a number: 'fast' (expected a whole number of at most "
                                  "20 digits, or 0x and 16)",
        str(tmp_path / "a/long"): f"{sysfs.MAX_TEXT + 1} characters: longer than any value "
                                  f"of the sysfs ABI (at most {sysfs.MAX_TEXT} read)",
        str(tmp_path / "a/fifo"): "a fifo, not a regular file: not read",
        str(tmp_path / "a"): "a directory, not a regular file: not read"}


def test_a_file_larger_than_a_page_is_refused(tmp_path: Path) -> None:
    reader = reader_of(tmp_path, {"page": "1" * sysfs.MAX_FILE_BYTES,
                                  "more": "1" * (sysfs.MAX_FILE_BYTES + 1)})
    assert reader.raw(reader.path("page")) == b"1" * sysfs.MAX_FILE_BYTES
    with pytest.raises(sysfs.Refused) as refused:
        reader.raw(reader.path("more"))
    assert refused.value.why == (f"more than {sysfs.MAX_FILE_BYTES} bytes (a sysfs attribute "
                                 "is at most a page): not read")


def test_a_link_inside_the_tree_is_followed_one_out_of_it_is_not(tmp_path: Path) -> None:
    root, outside = tmp_path / "sys", tmp_path / "outside"
    reader = reader_of(root, {"devices/pci/0000:3a:00.0/mtu": "1500"})
    (outside / "dev").mkdir(parents=True)
    (outside / "secret").write_text("42")
    (root / "class").mkdir()
    (root / "class/in").symlink_to("../devices/pci/0000:3a:00.0")
    (root / "class/out").symlink_to(outside / "dev")
    (root / "class/secret").symlink_to(outside / "secret")
    missing: dict[str, str] = {}
    assert reader.number(reader.path("class", "in", "mtu"), missing) == 1500
    assert reader.number(reader.path("class", "secret"), missing) is None
    assert missing == {str(root / "class/secret"): f"a link out of {root}: not followed"}
    assert reader.target(reader.path("class", "in")) == "0000:3a:00.0"
    assert reader.target(reader.path("class", "out")) is None
    assert reader.target(reader.path("devices")) is None  # no link
    assert (reader.exists(reader.path("class", "in")),
            reader.exists(reader.path("class", "out")),
            reader.exists(reader.path("class", "none"))) == (True, False, False)
    assert reader.names(reader.path("class", "out")) == []


def test_a_listing_is_its_first_names_in_order_and_how_many_in_all(tmp_path: Path) -> None:
    names = [f"p{i:02d}" for i in range(12)]
    reader = reader_of(tmp_path, {f"d/{name}/x": "" for name in reversed(names)})
    (tmp_path / "d/zfile").write_text("")  # a file, not a directory
    assert reader.listing(reader.path("d"), 5) == (names[:5], len(names) + 1)
    assert reader.directories(reader.path("d")) == names
    assert reader.listing(reader.path("nothing")) == ([], 0)


def test_entries_skipped_are_named_up_to_a_limit_then_counted(tmp_path: Path) -> None:
    reader = Reader(str(tmp_path))
    extra = 3
    for i in range(sysfs.MAX_SKIPPED + extra):
        reader.skip(f"/x/{i}", "not a port")
    assert len(reader.skipped) == sysfs.MAX_SKIPPED and reader.skipped["/x/0"] == "not a port"
    assert reader.skipped_more == extra


def test_counters_are_those_asked_for_that_the_directory_has(tmp_path: Path) -> None:
    reader = reader_of(tmp_path, {"c/rx_errors": "3", "c/tx_errors": "junk",
                                  "c/rx_bytes": "99", "c/collisions": str(2**64 - 1)})
    missing: dict[str, str] = {}
    found = reader.counters(reader.path("c"), ("rx_errors", "tx_errors", "collisions",
                                               "rx_dropped"), missing)
    assert found == {"rx_errors": 3, "collisions": 2**64 - 1}
    assert list(missing) == [str(tmp_path / "c/tx_errors")]


def test_a_budget_takes_up_to_its_limit_and_counts_the_rest() -> None:
    budget = Budget(2)
    assert [budget.take() for _ in range(5)] == [True, True, False, False, False]
    assert (budget.left, budget.left_out) == (0, 3)
    assert Budget().left == sysfs.MAX_PORTS
