"""Nothing a storage or shared probe writes survives it, however it ends (issue 11), and
what an earlier killed run left is found, removed when its owner is gone, and reported."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.launchers.local import LocalLauncher
from pytest_cluster.launchers.result import ProbeResult
from pytest_cluster.measure import storage as measured_storage
from pytest_cluster.measure.cluster import Cluster
from pytest_cluster.probes import ProbeCall, probe_source
from pytest_cluster.probes import storage as probe
from tests.conftest import planned
from tests.netns_cluster import NetnsCluster
from tests.shipped_probe import run_probe
from tests.test_plugin import jsonl

MiB = 2**20


def start_probe(name: str, *args: str) -> subprocess.Popen[str]:
    """A probe as a node runs it (`python -I -`, source on stdin), left running."""
    process = subprocess.Popen([sys.executable, "-I", "-", *args], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd="/")
    assert process.stdin is not None
    process.stdin.write(probe_source(name))
    process.stdin.close()
    process.stdin = None  # communicate() would flush it
    return process


def wait_for(what: str, ready: Any, process: subprocess.Popen[str],
             seconds: float = 60.0) -> None:
    """Poll `ready()` until true; fail if the probe ends or `seconds` pass first."""
    deadline = time.monotonic() + seconds
    while not ready():
        if process.poll() is not None:
            pytest.fail(f"the probe ended before {what}: {process.communicate()}")
        if time.monotonic() > deadline:
            process.kill()
            process.wait()
            pytest.fail(f"no {what} within {seconds:g} s")
        time.sleep(0.02)


def open_file_size(pid: int, under: Path) -> int:
    """The largest file under `under` that process `pid` holds open (named or not)."""
    biggest = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith(str(under) + "/"):
                biggest = max(biggest, os.stat(f"/proc/{pid}/fd/{fd}").st_size)
        except OSError:
            continue
    return biggest


def mdtest_files(path: Path) -> int:
    """How many files the metadata test has made under `path` so far."""
    count = 0
    for entry in path.glob(".pytest-cluster-*/mdtest"):
        try:
            count += len(os.listdir(entry))
        except OSError:
            continue
    return count


def ours(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def dead_pid() -> int:
    """The PID of a process that has ended (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def leftover_name(pid: int, host: str | None = None, suffix: str = "0badc0de") -> str:
    return f".pytest-cluster-{host or probe.host_tag()}-{probe.pid_namespace()}-{pid}-{suffix}"


# -- the probe ends: SIGKILL, SIGTERM, SIGHUP -------------------------------------------------

def test_a_probe_killed_mid_write_leaves_no_file(scratch: Path) -> None:
    """SIGKILL cannot be caught: the test file must have no name to leave behind."""
    process = start_probe("storage", "--path", str(scratch), "--io-size", str(4 * 2**30),
                          "--skip", "metadata")
    wait_for("32 MiB written", lambda: open_file_size(process.pid, scratch) >= 32 * MiB,
             process)
    process.kill()
    process.communicate()
    assert ours(scratch) == []


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_probe_stopped_mid_metadata_removes_its_files(scratch: Path,
                                                         stop: signal.Signals) -> None:
    """SIGTERM is what the node runner sends at the timeout or when the connection drops;
    SIGHUP what a closed terminal sends."""
    process = start_probe("storage", "--path", str(scratch), "--files", "1000000",
                          "--skip", "write", "--skip", "read")
    wait_for("100 metadata files", lambda: mdtest_files(scratch) >= 100, process)
    process.send_signal(stop)
    _, stderr = process.communicate(timeout=60)
    assert ours(scratch) == []
    assert process.returncode == 128 + stop
    assert stderr == f"storage probe: stopped by {stop.name}; removed what it wrote\n"


@pytest.mark.slow
def test_a_killed_runs_directory_is_removed_and_reported_by_the_next(scratch: Path) -> None:
    process = start_probe("storage", "--path", str(scratch), "--files", "1000000",
                          "--skip", "write", "--skip", "read")
    wait_for("100 metadata files", lambda: mdtest_files(scratch) >= 100, process)
    process.kill()
    process.communicate()
    [left] = ours(scratch)  # SIGKILL leaves the metadata test's directory
    assert re.fullmatch(rf"{re.escape(leftover_name(process.pid))[:-8]}[0-9a-f]{{8}}", left)

    data = run_probe("storage", "--path", str(scratch), "--skip", "write", "--skip", "read",
                     "--skip", "metadata")
    [found] = data["leftovers"]
    assert re.fullmatch(
        re.escape(f"its probe (pid {process.pid} on {probe.host_tag()}) ended without "
                  "removing it (killed by SIGKILL, or its node went down); made ")
        + r"\d+ s ago", found.pop("why"))
    assert found == {"path": str(scratch / left), "bytes": 0, "removed": True}
    assert ours(scratch) == []


@pytest.mark.slow
def test_a_running_probes_directory_is_left_alone_and_not_reported(scratch: Path) -> None:
    """On a shared filesystem every node of a run works under the same path at once."""
    running = start_probe("storage", "--path", str(scratch), "--files", "1000000",
                          "--skip", "write", "--skip", "read")
    try:
        wait_for("100 metadata files", lambda: mdtest_files(scratch) >= 100, running)
        [theirs] = ours(scratch)
        data = run_probe("storage", "--path", str(scratch), "--skip", "write", "--skip",
                         "read", "--skip", "metadata")
        assert data["leftovers"] == []
        assert ours(scratch) == [theirs]
    finally:
        running.terminate()
        running.communicate(timeout=60)
    assert ours(scratch) == []


# -- what a killed probe leaves (the sweep's tests: storage/test_sweep.py) ------------------

def plant(directory: Path, size: int = 0, age_s: float = 0.0, lock: bool = True) -> Path:
    """A directory as a killed probe leaves it: owner lock, a metadata file of `size`."""
    directory.mkdir()
    if lock:
        (directory / probe.LOCK_NAME).touch()
    (directory / "mdtest").mkdir()
    (directory / "mdtest" / "f0000000").write_bytes(b"x" * size)
    if age_s:
        then = time.time() - age_s
        os.utime(directory, (then, then))
    return directory


class Interrupted(LocalLauncher):
    """This machine as every node; Ctrl-C arrives once a write has run."""

    calls: list[tuple[str, ...]]

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        self.calls.append((*call.args, *nodes))
        results = super().run(call, nodes, timeout_s)
        if call.args[-1] == "write":
            raise KeyboardInterrupt
        return results


def shared_cluster(scratch: Path, tmp_path: Path) -> Cluster:
    spec = parse_spec(f"cluster: {{name: t, nodes: 'n[1-2]', launcher: local, "
                      f"python: {sys.executable}, probe_timeout: 30 s}}\n"
                      f"storage:\n  - path: {scratch}\n    shared: true\n", "t.yaml")
    launcher = Interrupted(spec.cluster)
    launcher.calls = []
    return Cluster(spec, tmp_path / "cache", launcher=launcher)


def test_a_shared_check_cut_short_during_its_write_removes_the_file(scratch: Path,
                                                                    tmp_path: Path) -> None:
    cluster = shared_cluster(scratch, tmp_path)
    before = time.time()
    with pytest.raises(KeyboardInterrupt):
        measured_storage.shared_check(cluster, cluster.spec.storage[0])
    assert ours(scratch) == []
    calls = cluster.launcher.calls  # type: ignore[attr-defined]
    [write, remove] = calls
    token = write[3]
    assert write == ("--path", str(scratch), "--token", token, "write", "n1")
    assert remove == ("--path", str(scratch), "--token", token, "remove", "n1")
    # expires after a write and a read (30 s each) and 10 minutes for clocks
    expires = int(token.split("-")[0])
    assert before + 660 - 1 <= expires <= time.time() + 660


# -- the acceptance side reports it -----------------------------------------------------------

def on_this_machine(pytester: pytest.Pytester, fs: Path, storage: str,
                    cluster: str = "") -> pytest.RunResult:
    """The suite on one node, this machine, with the filesystem `fs` (`storage`: its
    settings and clauses; `cluster`: more of the cluster section)."""
    pytester.makefile(".yaml", trial=(
        f"cluster:\n  name: t\n  nodes: nodeA\n  launcher: local\n  python: {sys.executable}\n"
        f"{cluster}storage:\n  - path: {fs}\n{storage}"))
    return pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")


def test_a_leftover_is_a_note_in_the_evidence_not_a_failure(pytester: pytest.Pytester) -> None:
    fs = pytester.mkdir("fs")
    pid = dead_pid()
    left = plant(fs / leftover_name(pid), size=3 * MiB, age_s=600)  # an age that reads the same
    result = on_this_machine(pytester, fs, "    io_size: 4 MiB\n    metadata_files: 50\n"
                             "    write: '>= 1 MB/s'\n    metadata: '>= 10 ops/s'\n")
    result.assert_outcomes(passed=len(planned(pytester, (pytester.path / "trial.yaml")
                                              .read_text())))
    why = (f"its probe (pid {pid} on {probe.host_tag()}) ended without removing it (killed by "
           "SIGKILL, or its node went down); made 10 min ago")
    result.stdout.fnmatch_lines(["*warnings summary*", "*::test_storage_write[[]nodeA-*",
                                 "*::test_storage_metadata[[]nodeA-*",
                                 f"*LeftoverWarning: nodeA: removed {left} (3 MiB), left by an "
                                 f"earlier pytest-cluster run: {why}"])
    records = [r for r in jsonl(pytester) if r.get("type") == "result"]
    assert [r["leftovers"] for r in records] == [[{
        "path": str(left), "bytes": 3 * MiB, "removed": True, "why": why}]] * 2
    assert ours(fs) == []


@pytest.mark.slow
def test_a_probe_timeout_during_the_write_leaves_nothing(pytester: pytest.Pytester) -> None:
    """The launcher kills the probe at its timeout, half-way through an 8 GiB write."""
    fs = pytester.mkdir("fs")
    result = on_this_machine(pytester, fs, "    io_size: 8 GiB\n    write: '>= 1 MB/s'\n",
                             cluster="  probe_timeout: 2 s\n")
    every = planned(pytester, (pytester.path / "trial.yaml").read_text())
    result.assert_outcomes(failed=len(every))
    [record] = [r for r in jsonl(pytester) if r.get("type") == "result"]
    assert record["error_kind"] == "timeout"
    assert ours(fs) == []


# -- the real thing: over ssh on the namespace cluster ------------------------------------

def netns_spec(netns: NetnsCluster, fs: Path) -> str:
    return (f"cluster:\n  name: netns\n  nodes: node[1-2]\n  launcher: ssh\n"
            f"  python: {sys.executable}\n  probe_timeout: 3 s\n"
            f"{netns.launcher_section('ssh')}\n"
            f"storage:\n  - path: {fs}\n    io_size: 8 GiB\n    write: '>= 1 MB/s'\n"
            "    read: '>= 1 MB/s'\n")


def ssh_clients() -> list[int]:
    """Our ssh client processes (children of this process)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:]
        if comm == "ssh" and int(rest.split()[1]) == os.getpid():
            found.append(int(entry))
    return found
