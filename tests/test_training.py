"""The training loop (`training:`): its job's command line and its ranks' lines turned into
figures as pure functions; then real DistributedDataParallel training on gloo, on this
machine and across the namespace nodes through ssh: the figures, and a hang found by the
step bound."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from pytest_cluster.jobs import JobResult, RankResult
from pytest_cluster.spec import parse_spec
from pytest_cluster.spec.model import TrainingSpec
from pytest_cluster.training import TrainingRun, summarise, training_job
from tests.conftest import has_torch
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
    assert job.args == ("--steps", "30", "--warmup", "3", "--step-bound", "4",
                        "--backend", "gloo")
    assert job.ranks_per_node == 2 and job.wall_timeout_s == 900.0
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
    data = {"step_s": steps, "tokens_per_step": 512, "loss_first": 6.4, "loss_last": 6.1,
            "finite": True, "torch": "2.4.0", **extra}
    return RankResult(node, rank, 0, 0, data, ended_at=float(rank))


BASE = TrainingRun(("a", "b"), 1, "gloo", 5.0)


def test_a_step_takes_its_slowest_ranks_time_and_tokens_count_every_rank() -> None:
    run = summarise(BASE, JobResult((_rank("a", 0, [0.10, 0.20, 0.10]),
                                     _rank("b", 1, [0.15, 0.10, 0.10])), "a"))
    assert run.ok
    assert run.step_s == (0.15, 0.20, 0.10)
    assert run.slowest == "a rank 0, step 1"
    assert run.tokens_per_s == pytest.approx(2 * 512 * 3 / 0.45)
    assert run.longest_s == 0.20
    assert run.spread == pytest.approx(0.2721655, rel=1e-5)


def test_a_hang_is_named_by_the_rank_that_found_it() -> None:
    stuck = RankResult("b", 1, 0, 3, {"hang": {"step": 7, "waited_s": 5.3, "bound_s": 5.0}},
                       ended_at=10.0)
    run = summarise(BASE, JobResult((_rank("a", 0, [0.1]), stuck), "a"))
    assert not run.ok
    assert run.hang == "b rank 1: step 7 still running after 5.3 s (bound 5 s): a hang"


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
    result.assert_outcomes(passed=3)
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
    result.assert_outcomes(failed=3)
    failed = {r["nodeid"].split("::")[1]: r for r in jsonl(pytester)
              if r.get("type") == "result"}
    message = failed["test_training_steps"]["message"]
    assert "localhost rank " in message and ": step 0 still running after " in message
    assert "(bound 0.001 s): a hang" in message
    assert failed["test_training_steady"]["error_kind"] == "hang"


@pytest.mark.realcomponents
def test_ddp_trains_across_the_namespace_nodes_through_ssh(
        pytester: pytest.Pytester, netns: NetnsCluster) -> None:
    if not has_torch():
        pytest.skip("needs torch on the nodes")
    (pytester.path / "t.yaml").write_text(
        f"cluster:\n  name: train\n  nodes: node[1-4]\n  launcher: ssh\n"
        f"  python: {sys.executable}\n{netns.launcher_section('ssh')}\n"
        "training:\n  steps: 10\n  step_time: '<= 60 s'\n  tokens_per_s: '>= 10'\n")
    # four "nodes" share this machine's two cores: their step times jitter too much for
    # the default spread bound (measured 63 %), which is left out here
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k",
                                "training_steps or training_throughput")
    result.assert_outcomes(passed=2)
    (steps,) = [r for r in jsonl(pytester) if r.get("clause") == "training.step_time"]
    assert steps["raw"]["nodes"] == "node[1-4]"
    assert len(steps["raw"]["step_s"]) == 10
