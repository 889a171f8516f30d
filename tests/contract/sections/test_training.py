"""contract/sections/training.py: the `training:` section, its defaults from the cluster and
gpus."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.clauses import keys
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import ClusterSpec, GpuSpec, TrainingSpec
from pytest_cluster.contract.reading.compose import compose
from pytest_cluster.contract.reading.located_errors import Ctx
from pytest_cluster.contract.sections.training import parse_training


def cluster(launcher: str = "local") -> ClusterSpec:
    return ClusterSpec("c", ("a", "b"), launcher, "python3", 600.0, 64)


def parsed(text: str | None, launcher: str = "local",
           gpus: GpuSpec | None = None) -> tuple[TrainingSpec | None, list[str]]:
    ctx = Ctx("t.yaml")
    node = None if text is None else compose(text, "t.yaml")
    return parse_training(ctx, node, cluster(launcher), gpus), [str(e) for e in ctx.errors]


def gpus(count: int) -> GpuSpec:
    from pytest_cluster.contract.sections.gpus import parse_gpus

    spec = parse_gpus(Ctx("t.yaml"), compose(f"{{count: {count}}}", "t.yaml"))
    assert spec is not None
    return spec


def test_no_section_no_training() -> None:
    assert parsed(None) == (None, [])


def test_without_gpus_one_gloo_rank_per_node_with_gpus_one_nccl_rank_per_gpu() -> None:
    plain, errors = parsed("\n\n{}")
    assert errors == [] and plain is not None
    assert (plain.steps, plain.ranks_per_node, plain.backend, plain.timeout_s, plain.line) == (
        50, 1, "gloo", 900.0, 3)
    eight, _ = parsed("{steps: 7}", gpus=gpus(8))
    assert eight is not None and (eight.steps, eight.ranks_per_node, eight.backend) == (
        7, 8, "nccl")


def test_the_default_clauses_bound_each_step_and_its_spread() -> None:
    spec, _ = parsed("{}")
    assert spec is not None
    step, spread = spec.clause("step_time"), spec.clause("spread")
    assert step is not None and step.requirement.text == "<= 60 s" and step.line == 0
    assert spread is not None and spread.requirement.text == "<= 25%"
    assert spec.clause("tokens_per_s") is None  # promised only when written
    assert {"steps", "step_time", "tokens_per_s"} <= set(keys("training"))


@pytest.mark.parametrize("launcher", [name for name, kind in KINDS.items()
                                      if kind.no_training is not None])
def test_a_launcher_that_cannot_train_is_refused_saying_why(launcher: str) -> None:
    _, errors = parsed("{steps: 5}", launcher)
    assert errors == [f"t.yaml:1: training: the {launcher} launcher "
                      f"{KINDS[launcher].no_training}; run the training loop with launcher: "
                      "local (or ssh, slurm)"]


def test_out_of_range_values_are_named() -> None:
    _, errors = parsed("{steps: 0, timeout: 5 s}")
    assert errors == ["t.yaml:1: training.steps: expected a whole number from 1 to 100000, "
                      "got 0",
                      "t.yaml:1: training.timeout: expected a time from 10 s to 24 h, got '5 s'"]
