"""Nothing is left on the nodes or on this machine after a run over ssh: no sshd session
on any node (only its listening sshd), no ssh ControlMaster here, no temporary directory
of ours, after a run that ends, after SIGTERM to a run mid-way, and after a soak whose
last round SIGTERM stops. The runs are `pytest --cluster=...` in a subprocess against the
namespace cluster (tests/netns_cluster.py), started as a script's background job is, with
SIGINT ignored, and with a TMPDIR of their own to count what they leave there."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.netns_cluster import NetnsCluster
from tests.run.test_interrupts import alive, descendants, wait_for

#: How long the nodes' sshd sessions may take to end once the run has exited.
GONE_WITHIN_S = 10.0
WAIT_S = 120.0  # for a run to get to where it is held
HOLD = """\
import os, pathlib, time
from pytest_cluster.sim import round as rounds


def test_probe(cluster):
    assert all(result.ok for result in cluster.host_all().values())


def test_hold():
    if os.environ.get("HOLD_ROUND") == str(rounds.current()):
        pathlib.Path("holding").write_text("")
        time.sleep(600)
"""


def _spec(netns: NetnsCluster) -> str:
    return (f"cluster:\n  name: left\n  nodes: node[1-4]\n  launcher: ssh\n"
            f"  python: {sys.executable}\n  probe_timeout: 1 min\n"
            f"{netns.launcher_section('ssh')}\nhost:\n  cpu_cores: '>= 1'\n")


@pytest.fixture
def private_tmp() -> Iterator[Path]:
    """A short TMPDIR (ssh's control sockets need short paths) for the run alone."""
    path = Path(tempfile.mkdtemp(prefix="pcleft-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The runs a test started; a failed test's are killed, soak rounds (sessions of
    their own) included, by their ids."""
    runs: list[subprocess.Popen[bytes]] = []
    yield runs
    for process in runs:
        if process.poll() is None:
            below = descendants(process.pid)
            process.kill()
            process.wait()
            for pid in below:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)


def _start(started: list[subprocess.Popen[bytes]], directory: Path, tmp: Path,
           netns: NetnsCluster, *args: str,
           hold_round: int | None = None) -> subprocess.Popen[bytes]:
    (directory / "t.yaml").write_text(_spec(netns))
    (directory / "test_hold.py").write_text(HOLD)
    env = {**os.environ, "TMPDIR": str(tmp)}
    if hold_round is not None:
        env["HOLD_ROUND"] = str(hold_round)
    log = (directory / "pytest.log").open("wb")
    # `trap '' INT`: SIGINT ignored, as in a script's background job
    process = subprocess.Popen(
        ["sh", "-c", 'trap "" INT; exec "$@"', "sh", sys.executable, "-m", "pytest",
         "--cluster=t.yaml", "-p", "no:cacheprovider", "-q", *args, "test_hold.py"],
        cwd=directory, env=env, stdin=subprocess.DEVNULL, stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True)
    started.append(process)
    return process


def _finish(process: subprocess.Popen[bytes], directory: Path,
            sig: signal.Signals | None = None) -> int:
    if sig is not None:
        process.send_signal(sig)
    try:
        return process.wait(WAIT_S)
    except subprocess.TimeoutExpired:
        log = (directory / "pytest.log").read_text(errors="replace")[-3000:]
        pytest.fail(f"pytest still ran {WAIT_S:g} s later: {log}")


def _left(netns: NetnsCluster, tmp: Path) -> dict[str, Any]:
    found: dict[str, Any] = {node: netns.left_on_node(node) for node in netns.nodes}
    found["masters here"] = netns.ssh_masters()
    found["in TMPDIR"] = sorted(p.name for p in tmp.iterdir())
    return {where: what for where, what in found.items() if what}


def _assert_nothing_left(netns: NetnsCluster, tmp: Path) -> None:
    wait_for("the nodes' sessions end", lambda: not _left(netns, tmp), GONE_WITHIN_S)
    assert _left(netns, tmp) == {}


def _end(path: Path) -> dict[str, Any]:
    end: dict[str, Any] = json.loads(path.read_text().splitlines()[-1])
    return end


@pytest.mark.realcomponents
def test_a_run_leaves_nothing(netns: NetnsCluster, tmp_path: Path, private_tmp: Path,
                              started: list[subprocess.Popen[bytes]]) -> None:
    process = _start(started, tmp_path, private_tmp, netns)
    code = _finish(process, tmp_path)
    assert code == pytest.ExitCode.OK, (tmp_path / "pytest.log").read_text()[-3000:]
    inventory = json.loads((tmp_path / "reports" / "latest" / "inventory.json").read_text())
    assert inventory["complete"] is True  # the inventory probed the nodes too
    _assert_nothing_left(netns, private_tmp)


@pytest.mark.realcomponents
def test_sigterm_mid_run_leaves_nothing(netns: NetnsCluster, tmp_path: Path,
                                        private_tmp: Path,
                                        started: list[subprocess.Popen[bytes]]) -> None:
    process = _start(started, tmp_path, private_tmp, netns, hold_round=1)
    wait_for("the run is held after probing", (tmp_path / "holding").exists, WAIT_S)
    assert len(netns.ssh_masters()) == len(netns.nodes)  # one connection per node
    assert _finish(process, tmp_path, signal.SIGTERM) == pytest.ExitCode.INTERRUPTED
    run_dir = (tmp_path / "reports" / "latest").resolve()
    assert _end(run_dir / "results.jsonl")["status"] == "interrupted"
    assert (run_dir / "manifest.intoto.json").is_file()
    _assert_nothing_left(netns, private_tmp)


@pytest.mark.realcomponents
def test_a_soak_stopped_by_sigterm_mid_round_leaves_nothing(
        netns: NetnsCluster, tmp_path: Path, private_tmp: Path,
        started: list[subprocess.Popen[bytes]]) -> None:
    """Rounds 1 and 2 end by themselves; SIGTERM in round 3 stops that round as Ctrl-C
    does (it writes and seals what it has) and the soak ends over the 3 rounds."""
    process = _start(started, tmp_path, private_tmp, netns, "--cluster-soak-rounds=3",
                     hold_round=3)
    wait_for("round 3 is held after probing", (tmp_path / "holding").exists, 3 * WAIT_S)
    # rounds 1 and 2 closed theirs; the soak itself holds none
    assert len(netns.ssh_masters()) == len(netns.nodes)
    assert _finish(process, tmp_path, signal.SIGTERM) == pytest.ExitCode.INTERRUPTED
    soak_dir = (tmp_path / "reports" / "latest").resolve()
    third = soak_dir / "rounds" / "round-0003"
    assert _end(third / "results.jsonl")["status"] == "interrupted"
    assert (third / "manifest.intoto.json").is_file()
    end = _end(soak_dir / "results.jsonl")
    assert (end["status"], end["soak"]["rounds"]) == ("interrupted", 3)
    _assert_nothing_left(netns, private_tmp)


# -- a job's part on each node: its progress files go however it ends ----------------------

#: A rank that keeps its progress file beating (as train.py does) until it is killed, in a
#: "collective" when it has no progress file.
RANK = """\
import json, os, time
path = os.environ.get("PYTEST_CLUSTER_PROGRESS")
while True:
    if path and os.environ.get("BEAT", "1") == "1":
        with open(path + ".tmp", "w") as f:
            json.dump({"step": 3, "phase": "forward", "since": time.time(),
                       "beat": time.time()}, f)
        os.replace(path + ".tmp", path)
    time.sleep(0.1)
"""


def _job_parts(netns: NetnsCluster, tmp: Path, stall_s: float,
               beat: bool = True) -> list[subprocess.Popen[bytes]]:
    """job_node on every namespace node (two ranks each, TMPDIR its own folder of `tmp`)."""
    source = Path(__file__).parents[2] / "pytest_cluster" / "probes" / "job_node.py"
    parts = []
    for index, node in enumerate(netns.nodes):
        (tmp / node).mkdir()
        parts.append(subprocess.Popen(
            ["ip", "netns", "exec", netns.netns(node), sys.executable, str(source),
             "--node-rank", str(index), "--nnodes", str(len(netns.nodes)),
             "--ranks-per-node", "2", "--wall-timeout", "120",
             "--stall-timeout", f"{stall_s:g}",
             "--program", base64.b64encode(RANK.encode()).decode()],
            env={**os.environ, "TMPDIR": str(tmp / node), "BEAT": "1" if beat else "0"},
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, start_new_session=True))
    return parts


def _ours(tmp: Path, node: str) -> list[str]:
    return sorted(p.name for p in (tmp / node).glob("pc-*"))


@pytest.mark.realcomponents
@pytest.mark.parametrize("stall_s", [30.0, 0.0], ids=["mid-training", "mid-collective"])
def test_sigterm_to_a_job_leaves_no_progress_file_on_any_node(
        netns: NetnsCluster, private_tmp: Path, stall_s: float) -> None:
    """SIGTERM to each node's part while its ranks run (mid-training: progress files
    beating; mid-collective: none asked for): 0 pc-* files and folders left on each node."""
    parts = _job_parts(netns, private_tmp, stall_s)
    try:
        wait_for("every node's ranks running", lambda: all(
            len([c for c in netns.python_processes(n) if b"-c" in c]) >= 2
            and _ours(private_tmp, n) for n in netns.nodes), 60)
        if stall_s:
            assert all(len(list((private_tmp / n).glob("pc-progress-*/rank*.json"))) == 2
                       for n in netns.nodes)
        for part in parts:
            part.send_signal(signal.SIGTERM)
        assert [part.wait(30) for part in parts] == [128 + signal.SIGTERM] * len(parts)
    finally:
        for part in parts:
            if part.poll() is None:
                os.killpg(part.pid, signal.SIGKILL)
    assert {n: _ours(private_tmp, n) for n in netns.nodes} == {n: [] for n in netns.nodes}


@pytest.mark.realcomponents
def test_a_rank_killed_by_the_watchdog_leaves_no_progress_file(
        netns: NetnsCluster, private_tmp: Path) -> None:
    """A rank that never beats (frozen from its start) is killed by its node's watchdog at
    the stall timeout; the part ends, naming it, and leaves 0 pc-* behind."""
    parts = _job_parts(netns, private_tmp, 1.0, beat=False)
    try:
        outputs = [part.communicate(timeout=60)[0] for part in parts]
    finally:
        for part in parts:
            if part.poll() is None:
                os.killpg(part.pid, signal.SIGKILL)
    for output in outputs:
        data = json.loads(output.decode().strip().splitlines()[-1])["data"]
        assert data["killed_because"].startswith("rank ") \
            and " gave no sign of life for " in data["killed_because"], data
        assert "stalled" in {r["exit_code"] for r in data["ranks"]}
        assert all(r["progress"]["phase"] == "start" for r in data["ranks"])
    assert {n: _ours(private_tmp, n) for n in netns.nodes} == {n: [] for n in netns.nodes}
