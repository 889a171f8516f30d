"""contract/sections/slurm.py: the `slurm:` section and the nodes of the current allocation."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import ClusterSpec, SlurmSpec
from pytest_cluster.contract.reading.compose import compose
from pytest_cluster.contract.reading.located_errors import Ctx
from pytest_cluster.contract.sections.slurm import (
    ALLOCATION_ENV,
    allocation_nodes,
    parse_slurm,
    wants_allocation,
)

#: The launchers that read the slurm section, and those that do not.
READERS = [name for name, kind in KINDS.items() if kind.section == "slurm"]
OTHERS = [name for name, kind in KINDS.items() if kind.section != "slurm"]


def parsed(text: str | None, launcher: str) -> tuple[SlurmSpec | None, list[str]]:
    ctx = Ctx("t.yaml")
    node = None if text is None else compose(text, "t.yaml")
    cluster = ClusterSpec("c", ("a",), launcher, "python3", 600.0, 64)
    return parse_slurm(ctx, node, cluster), [str(error) for error in ctx.errors]


def test_left_out_it_is_the_sites_defaults_for_the_slurm_launcher_alone() -> None:
    assert READERS and OTHERS
    for launcher in READERS:
        assert parsed(None, launcher) == (SlurmSpec(), [])
    for launcher in OTHERS:
        assert parsed(None, launcher) == (None, [])


@pytest.mark.parametrize("launcher", OTHERS)
def test_given_to_another_launcher_it_is_refused(launcher: str) -> None:
    assert parsed("{partition: gpu}", launcher) == (None, [
        f"t.yaml:1: slurm: only used with launcher: slurm (the launcher is {launcher!r})"])


def test_the_time_limit_is_whole_minutes_rounded_up() -> None:
    spec, errors = parsed("{partition: gpu, account: a.b-c_1, time_limit: 90 s, mpi: none}",
                          READERS[0])
    assert errors == []
    assert spec == SlurmSpec(partition="gpu", account="a.b-c_1", time_limit_min=2, mpi="none")


@pytest.mark.parametrize(("text", "message"), [
    ("{partition: 'gpu;rm -rf'}", "slurm.partition: expected a partition name (letters, "
                                  "digits, '_', '-', '.'), got 'gpu;rm -rf'"),
    ("{account: 'a b'}", "slurm.account: expected a account name (letters, digits, '_', '-', "
                         "'.'), got 'a b'"),
    ("{time_limit: 30 s}", "slurm.time_limit: expected a time from 1 min to 7 days, got "
                           "'30 s'"),
])
def test_a_value_that_could_smuggle_a_word_into_srun_is_refused(text: str,
                                                                message: str) -> None:
    assert parsed(text, READERS[0])[1] == [f"t.yaml:1: {message}"]


def test_the_allocation_is_asked_for_only_with_allocation_true() -> None:
    assert wants_allocation(compose("{allocation: true}", "t.yaml"))
    assert not wants_allocation(compose("{allocation: 'true'}", "t.yaml"))
    assert not wants_allocation(compose("{partition: gpu}", "t.yaml"))
    assert not wants_allocation(compose("[allocation]", "t.yaml"))
    assert not wants_allocation(None)


def test_the_allocations_nodes_are_its_expanded_hostlist(
        monkeypatch: pytest.MonkeyPatch) -> None:
    node = compose("{allocation: true}", "t.yaml")
    monkeypatch.setenv(ALLOCATION_ENV, " gpu-[01-03],login ")
    ctx = Ctx("t.yaml")
    assert allocation_nodes(ctx, node) == ("gpu-01", "gpu-02", "gpu-03", "login")
    assert ctx.errors == []
    monkeypatch.delenv(ALLOCATION_ENV)
    assert allocation_nodes(ctx, node) == ()
    assert [str(e) for e in ctx.errors] == [
        f"t.yaml:1: slurm.allocation: no SLURM allocation here ({ALLOCATION_ENV} is not set): "
        "run inside salloc or sbatch, or list cluster.nodes"]
    monkeypatch.setenv(ALLOCATION_ENV, "gpu-[03-01]")
    assert allocation_nodes(ctx, node) == ()
    assert str(ctx.errors[-1]).startswith(
        f"t.yaml:1: slurm.allocation: {ALLOCATION_ENV}='gpu-[03-01]': ")
