"""probes/storage/sweep.py: what earlier runs left, judged by its owner lock, its PID and
its age."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from pytest_cluster.probes import storage as probe
from tests.probes.test_storage import MiB, dead_pid, leftover_name, ours, plant

#: The module (the package's `sweep` is its function).
sweep_module = importlib.import_module("pytest_cluster.probes.storage.sweep")


def test_directories_of_older_versions_are_reported_then_removed_after_a_day(
        scratch: Path) -> None:
    young = plant(scratch / ".pytest-cluster-abc_1234", size=MiB, lock=False, age_s=600)
    old = plant(scratch / ".pytest-cluster-0ld12345", lock=False)
    (old / "seq.bin").write_bytes(b"s" * 2 * MiB)
    then = time.time() - 25 * 3600
    os.utime(old, (then, then))
    found = probe.sweep(str(scratch))
    assert found == [
        {"path": str(old), "bytes": 2 * MiB, "removed": True,
         "why": "made 25 h ago by a pytest-cluster older than its leftover sweep, which "
                "records no owner; older than 24 h"},
        {"path": str(young), "bytes": MiB, "removed": False,
         "why": "made 10 min ago by a pytest-cluster older than its leftover sweep, which "
                "records no owner: left in place; remove it by hand if no pytest-cluster run "
                "is using it (the sweep removes it once it is 24 h old)"}]
    assert ours(scratch) == [young.name]


def test_where_locks_fail_the_pid_on_this_host_and_the_age_decide(scratch: Path) -> None:
    """An owner lock that cannot be opened (here: a directory in its place) leaves the
    PID (this host, this PID namespace) and the age to decide."""
    pid = dead_pid()
    gone = plant(scratch / leftover_name(pid), lock=False)
    (gone / probe.LOCK_NAME).mkdir()
    elsewhere = plant(scratch / leftover_name(pid, host="other-host"), lock=False)
    (elsewhere / probe.LOCK_NAME).mkdir()
    then = time.time() - 600  # an age that reads the same during the test
    os.utime(elsewhere, (then, then))
    alive = plant(scratch / leftover_name(os.getpid(), suffix="a11ce000"), lock=False)
    (alive / probe.LOCK_NAME).mkdir()
    found = probe.sweep(str(scratch))
    assert found == [
        {"path": str(elsewhere), "bytes": 0, "removed": False,
         "why": f"made by pid {pid} on other-host 10 min ago, and whether it still runs cannot "
                "be told (cannot open its owner lock (Is a directory)): left in place; remove "
                "it by hand if no pytest-cluster run is using it (the sweep removes it once "
                "it is 24 h old)"},
        {"path": str(gone), "bytes": 0, "removed": True,
         "why": f"its probe (pid {pid} on {probe.host_tag()}) is no longer running"}]
    assert ours(scratch) == sorted([elsewhere.name, alive.name])


def test_unowned_entries_go_once_no_probe_can_be_making_them(scratch: Path) -> None:
    """A directory without its lock, or a named test file, exists for microseconds in a
    live probe; one older than ten minutes is a killed probe's."""
    pid = dead_pid()
    fresh = plant(scratch / leftover_name(pid, host="other-host"), lock=False)
    stale = plant(scratch / leftover_name(pid, host="other-host", suffix="57a1e000"),
                  lock=False, age_s=601)
    data = scratch / (leftover_name(pid) + ".data")
    data.write_bytes(b"y" * 100)
    found = probe.sweep(str(scratch))
    assert found == [
        {"path": str(stale), "bytes": 0, "removed": True,
         "why": f"its probe (pid {pid} on other-host) was killed before it locked it"},
        {"path": str(data), "bytes": 100, "removed": True,
         "why": f"a test file its probe (pid {pid} on {probe.host_tag()}) names only until it "
                "is open; the probe was killed in between"}]
    assert ours(scratch) == [fresh.name]


def test_the_sweep_leaves_other_files_and_the_shared_checks_alone(scratch: Path) -> None:
    for name in (".pytest-cluster-shared-1-0123456789ab", ".pytest-cluster-notes",
                 "data.bin", ".pytest-cluster", ".pytest-cluster-settings"):
        (scratch / name).write_text("x")
    users = scratch / ".pytest-cluster-mine_123"  # named like an old run's, holding more
    users.mkdir()
    (users / "seq.bin").write_text("x")
    (users / "notes.txt").write_text("x")
    then = time.time() - 48 * 3600
    os.utime(users, (then, then))
    assert probe.sweep(str(scratch)) == []
    assert len(ours(scratch)) == 6


def test_an_entrys_size_is_its_files_bytes(tmp_path: Path) -> None:
    directory = plant(tmp_path / "d", size=3 * MiB)
    (directory / "mdtest" / "f0000001").write_bytes(b"z" * 5)
    (directory / "link").symlink_to("/etc/passwd")  # a link counts as itself
    assert sweep_module._size(str(directory)) == 3 * MiB + 5 + len("/etc/passwd")
    assert sweep_module._size(str(directory / "mdtest" / "f0000001")) == 5
    assert sweep_module._size(str(tmp_path / "gone")) == 0


def test_a_directory_whose_lock_another_process_holds_is_left_alone(tmp_path: Path) -> None:
    directory = plant(tmp_path / leftover_name(dead_pid()), age_s=48 * 3600)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "fcntl.lockf(fd, fcntl.LOCK_EX)\n"
        "print('locked', flush=True)\n"
        "sys.stdin.read()\n"), str(directory / probe.LOCK_NAME)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        action, why, lock = sweep_module.judge(str(directory), directory.name, time.time())
        assert (action, lock) == (sweep_module.SKIP, None)
        assert why.startswith("locked by its probe (pid ")
        assert probe.sweep(str(tmp_path)) == []
        assert ours(tmp_path) == [directory.name]
    finally:
        holder.communicate("")
    assert probe.sweep(str(tmp_path))[0]["removed"] is True  # its lock free now


def test_a_pid_is_judged_only_on_its_own_host_and_namespace() -> None:
    def match(pid: int, host: str | None = None) -> re.Match[str]:
        found: re.Match[str] | None = sweep_module.OURS.match(leftover_name(pid, host))
        assert found is not None
        return found

    assert sweep_module._pid_gone(match(dead_pid())) is True
    assert sweep_module._pid_gone(match(os.getpid())) is False
    assert sweep_module._pid_gone(match(dead_pid(), host="other-host")) is None
