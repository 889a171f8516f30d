"""Distributed jobs: ranks with the torch.distributed environment through the local
launcher here, and (marked realcomponents) a gloo all-reduce across 4 namespace nodes
through ssh and through srun."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.model import ClusterSpec
from pytest_cluster.launchers.base import Launcher
from pytest_cluster.launchers.jobs import JobFailed, JobSpec, node_call, run_job
from pytest_cluster.launchers.local import LocalLauncher
from pytest_cluster.launchers.result import ProbeResult
from pytest_cluster.measure.cluster import Cluster
from pytest_cluster.measure.network import collectives
from pytest_cluster.probes import ProbeCall
from tests.conftest import has_torch
from tests.run.test_interrupts import alive

ENV = """\
import json, os
print(json.dumps({k: os.environ[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK",
      "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
      "PYTEST_CLUSTER_INIT_TIMEOUT")}))
"""

ALL_REDUCE = """\
import datetime, json, os
import torch
import torch.distributed as dist
timeout = datetime.timedelta(seconds=float(os.environ["PYTEST_CLUSTER_INIT_TIMEOUT"]))
dist.init_process_group("gloo", timeout=timeout)
t = torch.ones(1024) * (dist.get_rank() + 1)
dist.all_reduce(t)
print(json.dumps({"rank": dist.get_rank(), "world": dist.get_world_size(),
                  "sum": t[0].item()}))
dist.destroy_process_group()
"""


def local() -> LocalLauncher:
    return LocalLauncher(ClusterSpec("t", ("a", "b"), "local", sys.executable, 60, 8))


class Answering(Launcher):
    """A launcher no code knows by name: it answers job_node calls itself (each rank's
    data is the MASTER_ADDR and MASTER_PORT it was given) and host calls with {}, and
    records the calls. With `barrier`, every job_node call waits for that many others:
    the test hangs (and fails at the barrier's guard) unless they run at once."""

    name = "answering"

    def __init__(self, barrier: int = 0) -> None:
        super().__init__(ClusterSpec("t", ("a", "b", "c"), "answering", "python3", 60, 8))
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(barrier) if barrier else None

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        return {node: self.answer(call, node) for node in nodes}

    def answer(self, call: ProbeCall, node: str) -> ProbeResult:
        with self.lock:
            self.calls.append((node, call.args))
        if call.name == "host":
            return ProbeResult(node, "host", {})
        if call.args == ("--whereami",):
            return ProbeResult(node, "job_node", {
                "addresses": ["127.0.1.1", f"10.0.0.{len(node)}", "10.9.9.9"],
                "hostname": node})
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.barrier is not None:
                self.barrier.wait(30)  # a hang guard, not a timing
            args = dict(zip(call.args[:-1:2], call.args[1::2], strict=False))
            rank = int(args["--node-rank"])
            data = {"master": args["--master-addr"], "port": int(args["--master-port"])}
            return ProbeResult(node, "job_node", {"ranks": [
                {"rank": rank, "local_rank": 0, "exit_code": 0, "ended_at": None,
                 "data": data, "stderr_tail": ""}]})
        finally:
            with self.lock:
                self.in_flight -= 1


class OneHost(Answering):
    one_host = True


def test_on_one_host_a_job_meets_on_this_machine_at_a_free_port() -> None:
    launcher = OneHost()
    result = run_job(launcher, JobSpec(("a", "b"), "print(1)"))
    assert result.ok
    assert result.master_addr == "127.0.0.1"
    assert all(args != ("--whereami",) for _, args in launcher.calls)  # nothing asked
    data = [r.data or {} for r in result.ranks]
    assert [d["master"] for d in data] == ["127.0.0.1"] * 2
    port = data[0]["port"]
    assert data[1]["port"] == port
    with socket.socket() as sock:  # free here: nothing holds it
        sock.bind(("127.0.0.1", port))


def test_elsewhere_the_first_node_says_where_the_master_is() -> None:
    launcher = Answering()
    result = run_job(launcher, JobSpec(("b", "a"), "print(1)"))
    assert result.ok
    assert launcher.calls[0] == ("b", ("--whereami",))  # the first node of the job
    assert result.master_addr == "10.0.0.1"  # its first address that is not loopback
    ports = {r.data["port"] for r in result.ranks if r.data}
    assert len(ports) == 1 and 29500 <= ports.pop() <= 30499
    given = run_job(launcher, JobSpec(("a",), "print(1)", master_addr="h", master_port=7))
    assert [r.data for r in given.ranks] == [{"master": "h", "port": 7}]


def test_a_node_that_cannot_say_where_it_is_fails_the_job() -> None:
    class Loopback(Answering):
        def answer(self, call: ProbeCall, node: str) -> ProbeResult:
            if call.args == ("--whereami",):
                return ProbeResult(node, "job_node", {"addresses": ["127.0.1.1"]})
            return super().answer(call, node)

    with pytest.raises(JobFailed, match=r"^a has no address other nodes can reach \(found "
                       r"\['127.0.1.1'\]\); give JobSpec.master_addr$"):
        run_job(Loopback(), JobSpec(("a",), "print(1)"))


@pytest.mark.parametrize(("launcher", "at_once"), [(OneHost(), 1), (Answering(3), 3)])
def test_one_host_runs_its_benchmark_jobs_one_at_a_time(tmp_path: Path, launcher: Answering,
                                                         at_once: int) -> None:
    """Each node's own job (intra_node): one at a time where every node is this machine,
    else all at once (the barrier makes the three jobs wait for each other)."""
    spec = parse_spec("cluster: {name: t, nodes: [a, b, c]}\n"
                      "interconnect: {payloads: [1 MiB], busbw: '>= 1 MB/s'}\n", "t.yaml")
    collectives.intra_node(Cluster(spec, tmp_path, launcher=launcher), "a", "all_reduce")
    assert sorted(node for node, args in launcher.calls if "--node-rank" in args) == [
        "a", "b", "c"]
    assert launcher.most_in_flight == at_once


def test_node_call_is_exact() -> None:
    job = JobSpec(("n1", "n2"), "print(1)", ranks_per_node=8, args=("--size", "1G"),
                  init_timeout_s=30, wall_timeout_s=90)
    assert node_call(job, "10.0.0.1", 29600, 1).args == (
        "--master-addr", "10.0.0.1", "--master-port", "29600", "--node-rank", "1",
        "--nnodes", "2", "--ranks-per-node", "8", "--init-timeout", "30",
        "--wall-timeout", "90", "--program", "cHJpbnQoMSk=", "--", "--size", "1G")
    railed = JobSpec(("n1", "n2"), "print(1)", args=("--size", "1G"),
                     env=(("NCCL_IB_HCA", "=mlx5_3:1"), ("GLOO_SOCKET_IFNAME", "ibp3s0")))
    assert node_call(railed, "10.0.0.1", 29600, 0).args[-9:] == (
        "--program", "cHJpbnQoMSk=", "--env", "NCCL_IB_HCA==mlx5_3:1", "--env",
        "GLOO_SOCKET_IFNAME=ibp3s0", "--", "--size", "1G")


@pytest.mark.parametrize("env", [(("LD_PRELOAD", "/tmp/evil.so"),),
                                 (("GLOO_SOCKET_IFNAME", "eth0; reboot"),),
                                 (("NCCL_IB_HCA", ""),)])
def test_a_job_sets_only_the_network_environment_of_its_ranks(
        env: tuple[tuple[str, str], ...]) -> None:
    """An allowlist of names (the network a rank uses) and of characters in values."""
    with pytest.raises(ValueError, match="a job cannot set"):
        JobSpec(("n1",), "print(1)", env=env)
    from pytest_cluster.probes import job_node
    with pytest.raises(SystemExit):
        job_node.main(["--env", "=".join(env[0]), "--", "x"])


def test_a_jobs_environment_reaches_every_rank_over_the_default_interface() -> None:
    program = ("import json, os\nprint(json.dumps({k: os.environ.get(k) for k in "
               "('GLOO_SOCKET_IFNAME', 'NCCL_IB_DISABLE')}))\n")
    result = run_job(local(), JobSpec(("a",), program, ranks_per_node=2, env=(
        ("GLOO_SOCKET_IFNAME", "lo"), ("NCCL_IB_DISABLE", "1"))))
    assert result.ok, result.first_failure()
    assert [r.data for r in result.ranks] == [
        {"GLOO_SOCKET_IFNAME": "lo", "NCCL_IB_DISABLE": "1"}] * 2


def test_every_rank_gets_the_torch_distributed_environment() -> None:
    result = run_job(local(), JobSpec(("a", "b"), ENV, ranks_per_node=2, init_timeout_s=45,
                                      master_port=29777))
    assert result.ok, result.first_failure()
    assert [(r.node, r.rank, r.local_rank) for r in result.ranks] == [
        ("a", 0, 0), ("a", 1, 1), ("b", 2, 0), ("b", 3, 1)]
    for r in result.ranks:
        assert r.data == {"RANK": str(r.rank), "WORLD_SIZE": "4", "LOCAL_RANK": str(
            r.local_rank), "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": str(r.rank // 2),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29777",
            "PYTEST_CLUSTER_INIT_TIMEOUT": "45"}


@pytest.mark.slow
def test_a_dying_rank_is_named_and_ends_its_node() -> None:
    program = ("import os, sys, time\nif os.environ['RANK'] == '3':\n"
               "    sys.exit('rank 3 gives up')\ntime.sleep(600)\n")
    result = run_job(local(), JobSpec(("a", "b"), program, ranks_per_node=2,
                                      wall_timeout_s=5))
    assert not result.ok
    # b's other rank is killed because rank 3 died; a's ranks at the wall clock
    assert [r.exit_code for r in result.ranks] == ["killed", "killed", "killed", 1]
    assert result.first_failure() == ("b rank 3 exited with code 1: rank 3 gives up "
                                      "(3 other rank(s) failed too)")
    with pytest.raises(JobFailed, match="distributed job failed: b rank 3 exited"):
        result.raise_for_failure()


@pytest.mark.slow
def test_a_rank_killed_by_a_signal_is_named_so_by_its_node_and_the_job() -> None:
    """Its node says why it killed the others ('was killed by signal 9', not 'exited with
    code -9'), and the job names the signal."""
    program = ("import os, signal, time\nif os.environ['RANK'] == '1':\n"
               "    os.kill(os.getpid(), signal.SIGKILL)\ntime.sleep(600)\n")
    result = run_job(local(), JobSpec(("a",), program, ranks_per_node=2, wall_timeout_s=5))
    assert [r.exit_code for r in result.ranks] == ["killed", -9]
    assert dict(result.stopped)["a"] == "rank 1 was killed by signal 9"
    assert result.first_failure().startswith("a rank 1 was killed by SIGKILL (signal 9)")


@pytest.mark.slow
def test_a_hanging_job_ends_at_its_wall_clock() -> None:
    result = run_job(local(), JobSpec(("a",), "import time\ntime.sleep(600)\n",
                                      wall_timeout_s=2))
    assert [r.exit_code for r in result.ranks] == ["killed"]
    assert result.first_failure() == ("wall-clock limit of 2 s reached: every rank was "
                                      "killed by its node")


@pytest.mark.realcomponents
@pytest.mark.skipif(not has_torch(), reason="needs torch")
def test_gloo_all_reduce_on_this_machine() -> None:
    result = run_job(local(), JobSpec(("a", "b"), ALL_REDUCE, ranks_per_node=2,
                                      init_timeout_s=60, wall_timeout_s=180))
    assert result.ok, result.first_failure()
    assert [r.data["sum"] for r in result.ranks if r.data] == [10.0] * 4






def test_ctrl_c_stops_every_node_of_a_job_and_its_ranks(tmp_path: Path) -> None:
    """Ctrl-C lands in the thread waiting for the job's nodes: every node's part and its
    ranks end at once, and the program exits (the pool used to wait for the job's end)."""
    pids = tmp_path / "pids"
    pids.mkdir()
    program = (f"import os, time\nopen(os.path.join({str(pids)!r}, str(os.getpid())), "
               "'w').close()\ntime.sleep(600)\n")
    driver = textwrap.dedent(f"""
        import sys
        from pytest_cluster.launchers.jobs import JobSpec, run_job
        from pytest_cluster.launchers.local import LocalLauncher
        from pytest_cluster.contract.model import ClusterSpec
        launcher = LocalLauncher(ClusterSpec("t", ("a", "b"), "local", sys.executable, 60, 8))
        run_job(launcher, JobSpec(("a", "b"), {program!r}, ranks_per_node=2,
                                  wall_timeout_s=600))
    """)
    process = subprocess.Popen([sys.executable, "-c", driver], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(list(pids.iterdir())) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        ranks = [int(p.name) for p in pids.iterdir()]
        assert len(ranks) == 4
        process.send_signal(signal.SIGINT)
        process.wait(15)  # minutes before: the job ran to its wall clock
        deadline = time.monotonic() + 5
        while [p for p in ranks if alive(p)] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [p for p in ranks if alive(p)] == []
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for pid in (int(p.name) for p in pids.iterdir()):  # left by a failure: ours
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


BEATS = """\
import json, os, signal, time
path, start = os.environ["PYTEST_CLUSTER_PROGRESS"], time.time()
def beat():
    with open(path + ".new", "w") as file:
        json.dump({"step": 4, "phase": "forward", "since": start, "beat": time.time()}, file)
    os.replace(path + ".new", path)
beat()
if os.environ["RANK"] == "1":
    os.kill(os.getpid(), signal.SIGSTOP)
for _ in range(15):
    time.sleep(0.2)
    beat()
raise SystemExit(3)
"""


@pytest.mark.slow
def test_a_rank_that_stops_beating_is_killed_by_its_node_with_its_progress() -> None:
    """Rank 1 stops itself (SIGSTOP) after its first beat: its node kills it after the
    stall timeout, not at the wall clock; rank 0 beats on and ends by itself."""
    job = JobSpec(("a", "b"), BEATS, stall_timeout_s=1.0, wall_timeout_s=120)
    assert node_call(job, "127.0.0.1", 29600, 0).args[-3:] == ("--stall-timeout", "1", "--")
    result = run_job(local(), job)
    assert [r.exit_code for r in result.ranks] == [3, "stalled"]
    beating, stopped = (r.progress or {} for r in result.ranks)
    assert (stopped["step"], stopped["phase"]) == (4, "forward")
    assert isinstance(stopped["silent_s"], float) and isinstance(beating["silent_s"], float)
    assert stopped["silent_s"] > 1.0 and beating["silent_s"] < 1.0
    assert result.first_failure() == ("b rank 1 gave no sign of life and was killed (1 other "
                                      "rank(s) failed too)")
