"""The training loop (`training:`): its job's command line and its ranks' lines turned into
figures as pure functions; then real DistributedDataParallel training on gloo, on this
machine and across the namespace nodes through ssh: the figures, and a hang found by the
step bound."""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.model import TrainingSpec
from pytest_cluster.launchers.jobs import JobResult, RankResult
from pytest_cluster.measure.training import TrainingRun, summarise, training_job
from tests.conftest import has_torch, on, on_no_node, planned
from tests.netns_cluster import NetnsCluster
from tests.test_plugin import jsonl


def _spec(text: str) -> TrainingSpec:
    spec = parse_spec(f"cluster: {{name: t, nodes: [a, b], launcher: local}}\n{text}",
                      "t.yaml").training
    assert spec is not None
    return spec


def test_the_training_job_runs_the_train_probe_with_the_spec_settings() -> None:
    spec = _spec("training: {steps: 30, ranks_per_node: 2, step_time: '<= 4 s'}\n")
    job = training_job(spec, ["a", "b"])
    # the rendezvous and setup are bounded too: the step bound, at least 10 s
    assert job.args == ("--steps", "30", "--warmup", "3", "--step-bound", "4",
                        "--start-bound", "10", "--backend", "gloo")
    assert job.ranks_per_node == 2 and job.wall_timeout_s == 900.0
    # a rank silent for the bound is killed by its node (2 s at the least)
    assert job.stall_timeout_s == 4.0
    assert training_job(_spec("training: {step_time: '<= 50 ms'}\n"), ["a"]).stall_timeout_s \
        == 2.0
    assert "DistributedDataParallel" in job.program


def test_training_defaults_follow_the_gpus() -> None:
    plain = _spec("training: {}\n")
    assert (plain.steps, plain.ranks_per_node, plain.backend) == (50, 1, "gloo")
    assert plain.clause("step_time") is not None  # <= 60 s unless the spec says
    assert plain.clause("tokens_per_s") is None
    gpus = _spec("gpus: {count: 8}\ntraining: {}\n")
    assert (gpus.ranks_per_node, gpus.backend) == (8, "nccl")


def test_the_sim_cannot_train_and_says_so() -> None:
    with pytest.raises(Exception, match="training: the sim launcher simulates collective "
                                        "benchmarks, not a training loop"):
        parse_spec("cluster: {name: t, nodes: [a], launcher: sim}\nsim: {}\n"
                   "gpus: {count: 8}\ntraining: {steps: 5}\n", "t.yaml")


def _rank(node: str, rank: int, steps: list[float], **extra: Any) -> RankResult:
    data = {"step_s": steps, "forward_s": [0.05] * len(steps), "wait_s": [0.001] * len(steps),
            "tokens_per_step": 512, "loss_first": 6.4, "loss_last": 6.1, "finite": True,
            "torch": "2.4.0", "link": {"bytes": 1 << 20, "exchange_s": {}}, **extra}
    return RankResult(node, rank, 0, 0, data, ended_at=float(rank))


BASE = TrainingRun(("a", "b"), 1, "gloo", 5.0)


def test_a_step_takes_its_slowest_ranks_time_and_tokens_count_every_rank() -> None:
    run = summarise(BASE, JobResult((_rank("a", 0, [0.10, 0.20, 0.10]),
                                     _rank("b", 1, [0.15, 0.10, 0.10])), "a"))
    assert run.ok
    assert run.step_s == (0.15, 0.20, 0.10)
    assert run.slowest == ("no rank stands out: forward pass 50.0 ms to 50.0 ms per step, "
                           "wait after it 1 ms to 1 ms")
    assert run.tokens_per_s == pytest.approx(2 * 512 * 3 / 0.45)
    assert run.longest_s == 0.20
    assert run.spread == pytest.approx(0.2721655, rel=1e-5)


def test_the_rank_others_wait_for_is_the_slowest() -> None:
    slow = _rank("b", 1, [0.4, 0.4], forward_s=[0.35, 0.33], wait_s=[0.0, 0.002],
                 link={"bytes": 1 << 20, "exchange_s": {"0": 0.01}})
    fast = _rank("a", 0, [0.4, 0.4], forward_s=[0.05, 0.05], wait_s=[0.30, 0.28],
                 link={"bytes": 1 << 20, "exchange_s": {"1": 0.01}})
    assert summarise(BASE, JobResult((fast, slow), "a")).slowest.startswith(
        "b rank 1 computes slowest: its forward pass takes 0.34 s per step against 50.0 ms "
        "on the other ranks (median), and they wait 0.29 s per step for it after the forward "
        "pass while it waits 1 ms; two nodes: a slow link cannot be placed")


def _progress(step: int, phase: str, phase_s: float, silent_s: float) -> dict[str, Any]:
    return {"step": step, "phase": phase, "since": 0.0, "beat": 0.0, "phase_s": phase_s,
            "silent_s": silent_s}


def test_a_hang_names_the_rank_that_stopped_not_the_one_that_found_it() -> None:
    """a's watchdog ends it at the bound (waiting in the all-reduce); b went silent in its
    forward pass and its node killed it: b is named."""
    found = RankResult("a", 0, 0, 3, {"hang": {"step": 7, "phase": "wait", "waited_s": 5.3,
                                               "bound_s": 5.0}}, ended_at=10.0,
                       progress=_progress(7, "wait", 5.2, 0.1))
    stuck = RankResult("b", 1, 0, "stalled", None, ended_at=10.5,
                       progress=_progress(7, "forward", 5.4, 5.4))
    run = summarise(BASE, JobResult((found, stuck), "a"))
    assert not run.ok
    assert run.hang == ("b rank 1: stuck at step 7 (forward) for 5.4 s (bound 5 s), no sign "
                        "of life for 5.4 s: stopped or frozen; rank 0 waits for it in the "
                        "all-reduce after the forward pass")


def test_a_rank_frozen_before_its_first_step_is_named_not_the_store_timeouts() -> None:
    """b was stopped while importing torch: its node killed it for its silence since its
    start; a's watchdog ended its rendezvous at the start bound. b is named, with the
    silence measured; a store timeout is nowhere."""
    found = RankResult("a", 0, 0, 3, {"hang": {"step": -1, "phase": "rendezvous",
                                               "waited_s": 10.2, "bound_s": 10.0}},
                       "torch.distributed.DistStoreError: wait timeout after 120000ms",
                       ended_at=12.0, progress=_progress(-1, "rendezvous", 10.2, 0.1),
                       longest_silent_s=0.4)
    stuck = RankResult("b", 1, 0, "stalled", None, ended_at=8.3,
                       progress=_progress(-1, "import torch", 8.2, 8.2), longest_silent_s=8.2)
    run = summarise(replace(BASE, stall_s=5.0), JobResult((found, stuck), "a"))
    assert run.hang == ("b rank 1: stuck at import torch (before its first step) for 8.2 s "
                        "(bound 5 s), no sign of life for 8.2 s: stopped or frozen; rank 0 "
                        "waits for it in the rendezvous (init_process_group)")
    assert run.hang_s == 10.2  # the longest stuck: a's watchdog's wait
    assert run.silence == {"a": 0.4, "b": 8.2}


def _killed(node: str, rank: int, at: int, stderr: str = "",
            times: dict[str, list[float]] | None = None) -> RankResult:
    return RankResult(node, rank, 0, "killed", None, stderr, ended_at=20.0,
                      progress=_progress(at, "backward", 0.05, 0.1), longest_silent_s=0.3,
                      steps={f"{k}_s": v for k, v in times.items()} if times else None)


def _timed(step: list[float], forward: list[float], wait: list[float]) -> dict[str, list[float]]:
    return {"step": step, "forward": forward, "wait": wait, "backward": [0.1] * len(step),
            "optimiser": [0.01] * len(step)}


def test_a_run_ended_by_its_wall_clock_says_so_and_keeps_its_steps() -> None:
    """Every rank killed at the wall clock: the reason is the limit, at the step the ranks
    had reached; no torch warning is quoted; the steps that ran are kept."""
    warning = "[W1127 10:00:00.1 socket.cpp:1] [c10d] The hostname of the client socket " \
              "cannot be retrieved"
    a = _killed("a", 0, 71, warning, _timed([0.5, 0.6, 0.55], [0.1] * 3, [0.3] * 3))
    b = _killed("b", 1, 71, warning, _timed([0.5, 0.7], [0.4] * 2, [0.0] * 2))
    result = JobResult((a, b), "a", stopped=(("a", "wall-clock limit of 180 s reached"),
                                             ("b", "wall-clock limit of 180 s reached")))
    assert result.first_failure() == ("wall-clock limit of 180 s reached: every rank was "
                                      "killed by its node")
    run = summarise(BASE, result, 103)
    assert run.error == "wall-clock limit of 180 s reached at step 71 of 103"
    assert run.step_s == (0.5, 0.7)  # the steps every rank completed, their slowest
    assert run.slowest.startswith("b rank 1 computes slowest: its forward pass takes 0.40 s")
    assert not run.ok and "W1127" not in run.error
    behind = _killed("b", 1, 40)
    run = summarise(BASE, JobResult((a, behind), "a",
                                    stopped=(("a", "wall-clock limit of 180 s reached"),)), 103)
    assert run.error == ("wall-clock limit of 180 s reached at step 71 of 103; b rank 1: "
                         "stuck at step 40 (backward) for 50.0 ms (bound 5 s); rank 0 waits "
                         "for it in the backward pass's gradient all-reduce")
    assert run.step_s == ()  # b's steps file was never written: none kept


def test_the_first_failure_is_never_a_store_timeout_or_a_warning() -> None:
    store = RankResult("d", 3, 0, 1, None, "Traceback\ntorch.distributed.DistStoreError: "
                       "wait timeout after 120000ms\n[W1127 ...] [c10d] a warning", 5.0)
    real = RankResult("c", 2, 0, 1, None, "RuntimeError: CUDA error: an illegal memory "
                      "access\n/x/torch/a.py:3: UserWarning: deprecated\n  warnings.warn(",
                      9.0)
    assert JobResult((store, real), "a").first_failure() == (
        "c rank 2 exited with code 1: RuntimeError: CUDA error: an illegal memory access "
        "(1 other rank(s) failed too)")
    assert JobResult((store,), "a").first_failure() == (
        "d rank 3 exited with code 1: torch.distributed.DistStoreError: wait timeout after "
        "120000ms")


#: What a rank whose numpy does not load prints first (a warning and the line it quotes):
#: no reason for anything that happens later
NUMPY_WARNING = ("/x/torch/_subclasses/functional_tensor.py:276: UserWarning: Failed to "
                 "initialize NumPy: _ARRAY_API not found\n"
                 "  cpu = _conversion_method_template(device=torch.device(\"cpu\"))\n")
PEER_GONE = ("[rank0]: Traceback (most recent call last):\n[rank0]:   File \"<string>\", "
             "line 291, in train\n[rank0]: RuntimeError: [pair.cc:553] Connection closed by "
             "peer [10.0.0.3]:5022. This is typically caused by a remote worker crashing.\n")


def test_a_rank_killed_by_a_signal_says_which_and_no_warning_is_its_reason() -> None:
    """A negative exit code is the signal that ended the rank, said by name; the line
    quoted is the last that reads as an error, never a warning or the source line it
    quotes; a rank whose peer went away is no culprit, whatever its clock says."""
    dead = RankResult("b", 1, 0, -9, None, NUMPY_WARNING, 10.0)
    peer = RankResult("a", 0, 0, 1, None, NUMPY_WARNING + PEER_GONE, 9.0)
    assert JobResult((peer, dead), "a").first_failure() == (
        "b rank 1 was killed by SIGKILL (signal 9) (1 other rank(s) failed too)")
    oom = replace(dead, exit_code=1, stderr_tail=NUMPY_WARNING + "Traceback (most recent "
                  "call last):\ntorch.OutOfMemoryError: CUDA out of memory\n  a note\n")
    assert JobResult((peer, oom), "a").first_failure() == (
        "b rank 1 exited with code 1: torch.OutOfMemoryError: CUDA out of memory (1 other "
        "rank(s) failed too)")
    assert JobResult((replace(dead, exit_code=-99),), "a").first_failure() == (
        "b rank 1 was killed by signal 99")


def test_a_rank_killed_by_a_signal_fails_its_node_not_those_ended_with_it() -> None:
    """b's rank 1 SIGKILLed at step 7: the job's failure says the signal and quotes no
    warning; b is the node whose rank died (`died`, its training.ranks case); its other
    rank (killed by its node) and a's rank (its peer gone) are not blamed."""
    a = RankResult("a", 0, 0, 1, None, NUMPY_WARNING + PEER_GONE, 12.0,
                   _progress(7, "backward", 2.1, 0.2), 0.4)
    dead = RankResult("b", 1, 0, -9, None, NUMPY_WARNING, 10.0,
                      _progress(7, "backward", 0.05, 0.1), 0.5)
    ended = RankResult("b", 2, 1, "killed", None, NUMPY_WARNING, 10.1,
                       _progress(7, "backward", 0.1, 0.1), 0.5)
    result = JobResult((a, dead, ended), "a",
                       stopped=(("a", "rank 0 exited with code 1"),
                                ("b", "rank 1 exited with code -9")))
    assert result.own_failure() == dead
    run = summarise(BASE, result, 103)
    assert run.error == "b rank 1 was killed by SIGKILL (signal 9) (2 other rank(s) failed too)"
    assert run.died == {"b": "rank 1 was killed by SIGKILL (signal 9) at step 7 (backward) of "
                              "103; it did not finish its steps (the job's other ranks were "
                              "ended with it)"}
    assert not run.ok and not run.hang
    assert TrainingRun.from_json(json.loads(json.dumps(run.to_json()))) == run
    # an error of its own is quoted: the last line that reads as one, not the warning
    oom = replace(dead, exit_code=1, stderr_tail=NUMPY_WARNING + "Traceback (most recent "
                  "call last):\ntorch.OutOfMemoryError: CUDA out of memory\n  a note\n")
    run = summarise(BASE, replace(result, ranks=(a, oom, ended)), 103)
    assert run.died["b"].startswith("rank 1 exited with code 1 at step 7 (backward) of 103: "
                                    "torch.OutOfMemoryError: CUDA out of memory; it did not")


def test_a_death_that_is_no_nodes_own_blames_none() -> None:
    """The wall clock's kill, a node's part that did not answer, ranks of two nodes that
    died alike (the program's fault, a whole job killed), a rank gone silent (a hang: the
    progress names it): no node's rank is said to have died on its own."""
    a = RankResult("a", 0, 0, 1, None, PEER_GONE, 12.0, _progress(7, "backward", 2.1, 0.2))
    dead = RankResult("b", 1, 0, -9, None, "", 10.0, _progress(7, "backward", 0.05, 0.1))
    both = replace(a, exit_code=-15, stderr_tail="")
    wall = (("a", "wall-clock limit of 180 s reached"),)
    stalled = replace(dead, exit_code="stalled", progress=_progress(7, "forward", 5.4, 5.4))
    for result in (JobResult((a, dead), "a", stopped=wall),
                   JobResult((dead,), "a", errors=("a: job_node probe unreachable",)),
                   JobResult((both, dead), "a"), JobResult((a, stalled), "a")):
        assert result.own_failure() is None
        assert summarise(BASE, result, 103).died == {}
    assert JobResult((both, dead), "a").first_failure() == (
        "b rank 1 was killed by SIGKILL (signal 9) (1 other rank(s) failed too)")


def test_a_hang_without_progress_says_who_is_not_known() -> None:
    stuck = RankResult("b", 1, 0, 3, {"hang": {"step": 7, "waited_s": 5.3, "bound_s": 5.0}},
                       ended_at=10.0)
    run = summarise(BASE, JobResult((_rank("a", 0, [0.1]), stuck), "a"))
    assert run.hang == ("b rank 1: step 7 still running after 5.3 s (bound 5 s); no rank "
                        "reported its progress, so which rank holds it up is not known")


def test_a_job_that_fails_says_which_rank() -> None:
    dead = RankResult("b", 1, 0, 1, None, "RuntimeError: gloo connect refused", 3.0)
    run = summarise(BASE, JobResult((_rank("a", 0, [0.1]), dead), "a"))
    assert run.error.startswith("b rank 1 exited with code 1: RuntimeError: gloo connect")


# the spread bound is the loosest there is: two ranks share this machine's two cores with
# whatever else runs (a CI job), and it is the loop that is tested here, not the machine
LOCAL = """\
cluster: {{name: train, nodes: [localhost], launcher: local}}
training:
  steps: 12
  ranks_per_node: 2
  step_time: "{bound}"
  tokens_per_s: ">= 100"
  spread: "<= 100%"
"""


@pytest.mark.realcomponents
def test_ddp_on_gloo_trains_and_a_step_over_the_bound_is_a_hang(
        pytester: pytest.Pytester) -> None:
    if not has_torch():
        pytest.skip("needs torch")
    (pytester.path / "t.yaml").write_text(LOCAL.format(bound="<= 30 s"))
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
    cases = planned(pytester, LOCAL.format(bound="<= 30 s"))
    result.assert_outcomes(passed=len(cases))
    records = {r["nodeid"].split("::")[1]: r for r in jsonl(pytester)
               if r.get("type") == "result"}
    steps = records["test_training_steps"]
    assert len(steps["raw"]["step_s"]) == 12
    assert steps["raw"]["details"]["model"]["layers"] == 2
    assert steps["raw"]["loss_last"] < steps["raw"]["loss_first"] + 1.0
    assert records["test_training_throughput"]["measured"] > 100
    # a bound no step can keep: the watchdog stops the job at the first step, named
    (pytester.path / "t.yaml").write_text(LOCAL.format(bound="<= 1 ms"))
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
    # its ranks kept their heartbeats (slow, not silent): this node's ranks case passes,
    # the job's own cases (about no one node) fail
    cases = planned(pytester, LOCAL.format(bound="<= 1 ms"))
    job = on_no_node(cases, ("localhost",))
    assert job and on(cases, "localhost")
    result.assert_outcomes(failed=len(job), passed=len(cases) - len(job))
    failed = {r["nodeid"].split("::")[1]: r for r in jsonl(pytester)
              if r.get("type") == "result"}
    message = failed["test_training_steps"]["message"]
    assert " at step " in message and "(bound 0.001 s)" in message
    assert failed["test_training_steady"]["error_kind"] == "hang"




TRAINING_ON_NETNS = """\
cluster:
  name: train
  nodes: node[1-4]
  launcher: ssh
  python: {python}
{section}
training:
  steps: {steps}
  step_time: "<= {bound} s"
  timeout: 5 min
"""


def _train_rank(netns: NetnsCluster, node: str) -> int | None:
    """The pid of the training rank running in `node`'s namespace (python -c train.py)."""
    for pid in netns.pids(node):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 2 and argv[1] == b"-c" and b"class Monitor" in argv[2]:
            return pid
    return None


def _step_of(pid: int) -> int:
    """The training step the rank has reached (its progress file, found in its
    environment); -1 before its steps or when it cannot be read."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        path = next(e.split(b"=", 1)[1] for e in environ
                    if e.startswith(b"PYTEST_CLUSTER_PROGRESS="))
        record = json.loads(Path(os.fsdecode(path)).read_text())
    except (OSError, StopIteration, ValueError):
        return -1
    return int(record["step"]) if record.get("phase") == "forward" else -1


def _stop_at_step(netns: NetnsCluster, node: str, step: int, stopped: dict[str, Any],
                  sig: signal.Signals = signal.SIGSTOP) -> None:
    """SIGSTOP (or `sig`) `node`'s rank once it has begun `step`; record when and which
    pid."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        pid = _train_rank(netns, node)
        if pid is not None and _step_of(pid) >= step:
            os.kill(pid, sig)
            stopped.update(pid=pid, at=time.monotonic())
            return
        time.sleep(0.02)






def _stop_at_start(netns: NetnsCluster, node: str, stopped: dict[str, Any]) -> None:
    """SIGSTOP `node`'s rank as soon as it is started (before its first step)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pid = _train_rank(netns, node)
        if pid is not None:
            os.kill(pid, signal.SIGSTOP)
            stopped.update(pid=pid, at=time.monotonic(), step=_step_of(pid))
            return
        time.sleep(0.005)
