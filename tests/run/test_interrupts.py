"""Ctrl-C (SIGINT, and SIGTERM) stops every rank and probe on every node within seconds,
over local, ssh and slurm, and pytest exits at once; a probe killed at its timeout leaves
no rank behind; a hung interpreter is killed on the node at its timeout over ssh, and the
message says the timeout that applied. The real tests drive `pytest --cluster=...` in a
subprocess against the namespace cluster (tests/netns_cluster.py) and send it SIGINT while
a collective benchmark's ranks run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_cluster.cli import main
from pytest_cluster.contract.model import ClusterSpec, SshSpec
from pytest_cluster.evidence.bundle.verify import verify
from pytest_cluster.evidence.record.plan import Plan
from pytest_cluster.launchers.process import (
    Finished,
    execute,
    probe_result,
    running_launches,
    stop_everything,
)
from pytest_cluster.launchers.result import ErrorKind, ProbeResult
from pytest_cluster.launchers.ssh import SshLauncher, backstop_message, classify
from pytest_cluster.run.session import FINISHING_EVIDENCE
from tests.conftest import has_torch
from tests.netns_cluster import NetnsCluster, shaped_interconnect_spec

#: text of the collective benchmark that only its ranks' command lines hold
RANK_MARKER = b"PYTEST_CLUSTER_INIT_TIMEOUT"
HANG_S = 60.0  # pytest ran the benchmark to its 5 min wall clock before; bench/faults.py times
#: the exit (about 1 s)
CLEAN_BOUND_S = 8.0
RANKS_RUN_S = 5.0  # once the ranks exist: past import torch, into the collectives


# -- helpers ----------------------------------------------------------------------------

def wait_for(what: str, check: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {seconds:g} s: {what}")
        time.sleep(0.2)


def alive(pid: int) -> bool:
    """Running (a zombie whose parent is gone counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def descendants(root: int) -> set[int]:
    """Every process below `root` now (children, their children, ...)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def start_pytest(directory: Path, spec: str) -> subprocess.Popen[bytes]:
    (directory / "t.yaml").write_text(spec)
    log = (directory / "pytest.log").open("wb")
    return subprocess.Popen([sys.executable, "-m", "pytest", "--cluster=t.yaml",
                             "-p", "no:cacheprovider", "-q"], cwd=directory,
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def interrupt(process: subprocess.Popen[bytes], directory: Path,
              sig: signal.Signals = signal.SIGINT) -> float:
    """Send `sig` once; pytest's exit code says interrupted; seconds until it exited."""
    log = directory / "pytest.log"
    assert process.poll() is None, f"pytest ended before the signal: {log.read_text()[-3000:]}"
    started = time.monotonic()
    process.send_signal(sig)
    try:
        code = process.wait(HANG_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        pytest.fail(f"pytest was still running {HANG_S:g} s after one Ctrl-C")
    elapsed = time.monotonic() - started
    text = log.read_text(errors="replace")[-3000:]
    assert code == pytest.ExitCode.INTERRUPTED, text
    return elapsed


def ranks_on(netns: NetnsCluster, node: str) -> list[bytes]:
    return [c for c in netns.python_processes(node) if RANK_MARKER in c]


def left_on_nodes(netns: NetnsCluster) -> dict[str, list[bytes]]:
    found = {node: netns.python_processes(node) for node in netns.nodes}
    return {node: [c[:80] for c in found[node]] for node in found if found[node]}


def interrupt_a_running_job(netns: NetnsCluster, kind: str, directory: Path) -> None:
    """The first job (node1 + node2) is started by the plugin; Ctrl-C once its ranks run:
    pytest exits within seconds and no probe or rank is left on any node."""
    spec = shaped_interconnect_spec(netns, kind, name="interrupted", warmup=1,
                                    iterations=100000, timeout="5 min")
    process = start_pytest(directory, spec)
    try:
        wait_for("the benchmark's ranks run on node1 and node2",
                 lambda: bool(ranks_on(netns, "node1") and ranks_on(netns, "node2")), 120)
        time.sleep(RANKS_RUN_S)
        elapsed = interrupt(process, directory)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    started = time.monotonic()
    wait_for(f"nothing of ours left on the nodes: {left_on_nodes(netns)}",
             lambda: not left_on_nodes(netns), CLEAN_BOUND_S)
    print(f"{kind}: pytest exited {elapsed:.1f} s after Ctrl-C, the nodes were clean "
          f"{time.monotonic() - started:.1f} s after that")


# -- the real thing: ssh and slurm over the namespace cluster -----------------------------







# -- local: the same without a cluster ---------------------------------------------------

LOCAL = """\
cluster: {{name: here, nodes: [a, b], launcher: local, python: {python}, probe_timeout: 5 min}}
interconnect:
  payloads: [16 MiB]
  node_counts: [2]
  ranks_per_node: 1
  busbw: ">= 1 MB/s"
  warmup: 1
  iterations: 100000
  timeout: 5 min
"""


@pytest.mark.realcomponents
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_with_the_local_launcher_leaves_no_child(tmp_path: Path,
                                                        sig: signal.Signals) -> None:
    if not has_torch():
        pytest.skip("needs torch")
    process = start_pytest(tmp_path, LOCAL.format(python=sys.executable))
    below: set[int] = set()
    try:
        def ranks() -> set[int]:
            return {p for p in descendants(process.pid) if RANK_MARKER in cmdline(p)}

        wait_for("both ranks run", lambda: len(ranks()) == 2, 120)
        time.sleep(RANKS_RUN_S)
        below = descendants(process.pid)
        elapsed = interrupt(process, tmp_path, sig)
        started = time.monotonic()
        wait_for("every process pytest started has ended",
                 lambda: not [p for p in below if alive(p)], CLEAN_BOUND_S)
        print(f"local, {sig.name}: pytest exited {elapsed:.1f} s after it, nothing left "
              f"{time.monotonic() - started:.1f} s after that")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for pid in below:  # left by a failure: ours, ended by their ids
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_simulated_probe_waiting_out_its_latency_stops_at_once(
        tmp_path: Path, sig: signal.Signals) -> None:
    """Every simulated probe waits a minute (sim.latency): the signal ends the wait, so
    pytest exits interrupted before the minute is out (it sat it out before: a prolog's
    time limit SIGKILLed it, and no evidence was kept), with its evidence sealed and the
    verdict INCOMPLETE."""
    process = start_pytest(tmp_path, "cluster: {name: slow, nodes: 'n[1-2]', launcher: sim, "
                                     "probe_timeout: 5 min}\nsim: {latency: 1 min}\n")
    try:
        time.sleep(RANKS_RUN_S)  # the host probes are waiting out their minute
        started = time.monotonic()
        interrupt(process, tmp_path, sig)
        assert time.monotonic() - started < 50, "the probes sat out their latency"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    verdict = json.loads((tmp_path / "reports" / "latest" / "verdict.json").read_text())
    assert verdict["verdict"] == "INCOMPLETE"
    assert (tmp_path / "reports" / "latest" / "manifest.intoto.json").is_file()


#: A sink that stops at the first not-reached line (the run writing its evidence after
#: Ctrl-C) until the test says go: the window for a second signal, made certain.
SLOW_SINK = """\
import time
from pathlib import Path

def pytest_collection_finish(session):
    Path("collected").touch()

def pytest_cluster_result_line(config, record):
    if record.get("outcome") == "not_run" and not Path("writing").exists():
        Path("writing").touch()
        deadline = time.monotonic() + 60
        while not Path("go").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
"""
EVIDENCE_FILES = ("inventory.json", "results.jsonl", "junit.xml", "verdict.json",
                  "report.html", "manifest.intoto.json")


@pytest.mark.slow
@pytest.mark.parametrize("again", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_while_the_evidence_is_written_does_not_cut_it_short(
        tmp_path: Path, again: signal.Signals) -> None:
    """Ctrl-C, then Ctrl-C again (or a CI cancel's SIGTERM), twice, while the run writes
    its evidence: said once, noted, and the writing goes on to the end: exit 2, every file
    there, every selected case with its line, the end line, and verify says the files
    match with no failure to record (a traceback, exit 130 and a directory sealed without
    junit.xml, verdict.json or report.html before)."""
    (tmp_path / "conftest.py").write_text(SLOW_SINK)
    process = start_pytest(tmp_path, "cluster: {name: slow, nodes: 'n[1-2]', launcher: sim, "
                                     "probe_timeout: 5 min}\nsim: {latency: 1 min}\n")
    log = tmp_path / "pytest.log"
    try:
        wait_for("the checks collected", (tmp_path / "collected").exists, 60)
        time.sleep(1)  # the first check's probes wait out their minute
        process.send_signal(signal.SIGINT)
        wait_for("the evidence is being written", (tmp_path / "writing").exists, 60)
        process.send_signal(again)
        process.send_signal(again)
        wait_for("the signal noted (or pytest gone)", lambda: process.poll() is not None
                 or FINISHING_EVIDENCE in log.read_text(), 30)
        (tmp_path / "go").touch()
        code = process.wait(HANG_S)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    text = log.read_text(errors="replace")
    assert code == pytest.ExitCode.INTERRUPTED, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    assert text.count(FINISHING_EVIDENCE) == 1
    run_dir = (tmp_path / "reports" / "latest").resolve()
    assert [f for f in EVIDENCE_FILES if not (run_dir / f).is_file()] == []
    lines = [json.loads(line) for line in
             (run_dir / "results.jsonl").read_text().splitlines()]
    end = lines[-1]
    assert end["type"] == "end" and end["status"] == "interrupted"
    cases = {line["case"] for line in lines if line["type"] == "result"}
    assert cases == set(Plan.read(run_dir / "probes").selected)
    assert {line["outcome"] for line in lines if line["type"] == "result"} >= {"not_run"}
    checked = verify(run_dir)
    assert checked.ok, checked.lines()
    assert "failures" not in checked.predicate
    assert main(["verify", str(run_dir)]) == 0


@pytest.mark.slow
def test_a_job_killed_at_its_timeout_leaves_no_rank(tmp_path: Path) -> None:
    """The local launcher kills job_node at the launcher's timeout: its ranks (each in a
    session of its own) die with it."""
    pids = tmp_path / "pids"
    pids.mkdir()
    program = (f"import os, time\nopen(os.path.join({str(pids)!r}, str(os.getpid())), "
               "'w').close()\ntime.sleep(600)\n")
    driver = textwrap.dedent(f"""
        import sys
        from pytest_cluster.launchers.jobs import JobSpec, node_call
        from pytest_cluster.launchers.local import LocalLauncher
        from pytest_cluster.contract.model import ClusterSpec
        job = JobSpec(("a",), {program!r}, ranks_per_node=2, wall_timeout_s=600)
        launcher = LocalLauncher(ClusterSpec("t", ("a",), "local", sys.executable, 4, 8))
        result = launcher.run(node_call(job, "127.0.0.1", 29999, 0), ["a"], 4)["a"]
        print(result.error.value, result.message)
    """)
    done = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True,
                          timeout=60, check=False)
    started = [int(p.name) for p in pids.iterdir()]
    assert len(started) == 2, done.stderr
    try:
        wait_for("both ranks ended", lambda: not [p for p in started if alive(p)], 5)
    finally:
        for pid in started:  # left by a failure: ours, ended by their ids
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert done.stdout.strip() == ("timeout no answer within 4 s (cluster.probe_timeout); "
                                   "killed"), done.stderr


# -- the registry of running launches ----------------------------------------------------

@pytest.mark.slow
def test_stop_everything_cancels_and_ends_each_launch(tmp_path: Path) -> None:
    """Each launch's own cancel action (scancel for a srun step) runs, and its process
    group ends: a SIGTERM first (a probe may clean up), SIGKILL for one that ignores it."""
    cancelled: list[str] = []
    marker = tmp_path / "cleaned"
    polite = (f"import signal, sys, time\n"
              f"def bye(*_):\n    open({str(marker)!r}, 'w').close()\n    sys.exit(1)\n"
              "signal.signal(signal.SIGTERM, bye)\nprint('up', flush=True)\ntime.sleep(600)\n")
    stubborn = ("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "print('up', flush=True)\ntime.sleep(600)\n")
    ended: dict[str, Finished] = {}

    def launch(name: str, source: str) -> None:
        ended[name] = execute([sys.executable, "-c", source], "", 600,
                              cancel=lambda: cancelled.append(name))

    threads = [threading.Thread(target=launch, args=(n, s))
               for n, s in (("polite", polite), ("stubborn", stubborn))]
    for thread in threads:
        thread.start()
    wait_for("both launches registered", lambda: len(running_launches()) == 2, 20)
    time.sleep(1)  # past the interpreters' start, into their sleep
    assert stop_everything() == 2
    for thread in threads:
        thread.join(60)
    assert not [t for t in threads if t.is_alive()], "a launch was still running"
    assert sorted(cancelled) == ["polite", "stubborn"]
    assert marker.exists()  # SIGTERM came first
    assert ended["polite"].returncode == 1
    assert ended["stubborn"].returncode == -signal.SIGKILL
    assert running_launches() == []


@pytest.mark.slow
def test_a_second_ctrl_c_during_the_grace_kills_at_once(tmp_path: Path) -> None:
    """Ctrl-C again while a probe that ignores SIGTERM has its 3 s: SIGKILL now, and the
    program exits (a probe left running would keep its waiting thread, and the program,
    alive)."""
    pid_file = tmp_path / "pid"
    stubborn = ("import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n")
    driver = textwrap.dedent(f"""
        import sys, threading
        from pytest_cluster.launchers.process import execute, stop_on_interrupt
        stop_on_interrupt()
        waiting = threading.Thread(target=execute,
                                   args=([sys.executable, "-c", {stubborn!r}], "", 600))
        waiting.start()
        waiting.join()
    """)
    process = subprocess.Popen([sys.executable, "-c", driver], stderr=subprocess.DEVNULL)
    probe = 0
    try:
        wait_for("the probe runs", lambda: pid_file.exists() and pid_file.read_text() != "",
                 30)
        probe = int(pid_file.read_text())
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)  # inside the grace
        process.send_signal(signal.SIGINT)
        assert process.wait(30) != 0
        wait_for("the probe gone", lambda: not alive(probe), 5)
    finally:  # what a failure left: ours, ended by their ids
        process.kill()
        if probe and alive(probe):
            os.kill(probe, signal.SIGKILL)


# -- the message names the timeout that applied -------------------------------------------

def test_timeout_messages_name_the_timeout_that_applied() -> None:
    """ssh's controller waits 15 s longer than the node (a backstop); the message says the
    spec's timeout, and which side ended the probe."""
    spec = ClusterSpec("t", ("n1",), "ssh", "python3", 10, 8)
    ssh = SshLauncher(spec, SshSpec())
    try:
        within = ssh.timeout_text(10)
        assert within == "10 s (cluster.probe_timeout)"
        assert ssh.timeout_text(42) == "42 s"
    finally:
        ssh.close()
    on_node = ProbeResult("n1", "host", None, ErrorKind.CRASHED, "", exit_code=124)
    killed = classify(on_node, "python3", within)
    assert (killed.error, killed.message) == (
        ErrorKind.TIMEOUT, "no answer within 10 s (cluster.probe_timeout); killed on the node")
    assert backstop_message(within, 25) == (
        "no answer within 10 s (cluster.probe_timeout); the node did not answer and the "
        "connection was cut after 25 s")
    local = probe_result("n1", "host", Finished(None, "", "", timed_out=True), 10, 0.0, 10.0,
                         within=within)
    assert local.message == "no answer within 10 s (cluster.probe_timeout); killed"
