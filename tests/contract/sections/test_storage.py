"""contract/sections/storage.py: the `storage:` list of filesystems, bounds per GPU, per node or the
cluster's aggregate, and what an aggregate is shared out over."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import ClusterSpec, StorageSpec
from pytest_cluster.contract.reading.compose import compose
from pytest_cluster.contract.reading.located_errors import Ctx
from pytest_cluster.contract.sections.storage import (
    AT_ONCE,
    BASES,
    Share,
    parse_storage,
    per_bound,
    shared_over,
)
from pytest_cluster.errors import UnitError
from pytest_cluster.units import Dim


def parsed(text: str, launcher: str = "local",
           gpus: bool = False) -> tuple[tuple[StorageSpec, ...], list[str]]:
    ctx = Ctx("t.yaml")
    cluster = ClusterSpec("c", ("a", "b"), launcher, "python3", 600.0, 64)
    found = parse_storage(ctx, compose(text, "t.yaml"), cluster, gpus)
    return found, [str(error) for error in ctx.errors]


@pytest.mark.parametrize(("raw", "per"), [(">= 2 GB/s per GPU", "gpu"),
                                          (">= 2 GB/s  Per Node ", "node"),
                                          (">= 2 GB/s", "")])
def test_a_bound_says_what_it_is_per_and_keeps_its_whole_text(raw: str, per: str) -> None:
    requirement, basis = per_bound(raw)
    assert basis == per
    assert requirement.bound.value == 2e9
    assert requirement.text == raw.strip()
    assert requirement.per == (BASES[per] if per else "")


def test_a_bound_of_the_wrong_kind_names_every_form() -> None:
    with pytest.raises(UnitError) as caught:
        per_bound(">= 2 GB per GPU")
    example = Dim.RATE.example.strip("'")
    assert str(caught.value).endswith(
        f"; per GPU, per node or the cluster's aggregate: '>= {example} per GPU', "
        f"'>= {example} per node', '>= {example}'")


def test_an_aggregate_is_shared_out_over_the_nodes_or_their_gpus() -> None:
    assert shared_over("", 3, 8) == Share(1, "", "")
    assert shared_over("node", 3, None) == Share(3, "per node", "3 node(s)")
    assert shared_over("gpu", 2, 8) == Share(16, "per GPU",
                                             "16 GPU(s) (2 node(s) x gpus.count 8)")
    with pytest.raises(ValueError, match="needs the gpus section"):
        shared_over("gpu", 2, None)


def test_clauses_are_named_by_the_filesystems_path() -> None:
    (fs,), errors = parsed("[{path: /data, write: 1 GB/s, read: '>= 2 GB/s'}]")
    assert errors == []
    assert [c.key for c in fs.clauses] == ["storage[/data].write", "storage[/data].read"]
    assert (fs.index, fs.shared, fs.python, fs.checkpoint, fs.dataloader) == (
        0, False, "python3", None, None)


@pytest.mark.parametrize(("text", "message"), [
    ("{path: /data}", "t.yaml:1: storage: expected a list of filesystems (- path: /data ...), "
                      "got a map"),
    ("[{path: /data, write: 1 GB/s}, {path: /data, read: 1 GB/s}]",
     "t.yaml:1: storage[1].path: /data is listed twice"),
    ("[{path: data, write: 1 GB/s}]",
     "t.yaml:1: storage[0].path: expected an absolute path like /data, got 'data'"),
])
def test_a_list_that_is_no_list_of_distinct_absolute_paths_is_refused(text: str,
                                                                       message: str) -> None:
    assert parsed(text)[1] == [message]


@pytest.mark.parametrize("launcher", [name for name, kind in KINDS.items()
                                      if kind.no_storage is not None])
def test_a_launcher_that_cannot_test_a_nodes_disk_keeps_what_the_cluster_does_at_once(
        launcher: str) -> None:
    assert parsed("[{path: /d, shared: true}]", launcher)[1] == []
    _, errors = parsed("[{path: /d, shared: true, write: 1 GB/s, read: 1 GB/s}]", launcher)
    assert errors == [f"t.yaml:1: storage[/d].write: the {launcher} launcher "
                      f"{KINDS[launcher].no_storage}: only {', '.join(AT_ONCE)} (test a "
                      "node's disk with launcher: local, ssh or slurm)"]  # the first key only


def test_a_checkpoint_per_gpu_needs_the_gpus_section() -> None:
    text = ("[{path: /d, shared: true, checkpoint: {size_per_gpu: 1 GiB, "
            "write: '>= 1 GB/s per GPU'}}]")
    assert parsed(text)[1] == [
        "t.yaml:1: storage[/d].checkpoint.size_per_gpu: needs the gpus section (how many GPUs "
        "each node has); or size_per_node",
        "t.yaml:1: storage[/d].checkpoint.write: a bound per GPU needs the gpus section (how "
        "many GPUs each node has)"]
    (fs,), errors = parsed(text, gpus=True)
    assert errors == [] and fs.checkpoint is not None
    assert (fs.checkpoint.per, fs.checkpoint.basis_of("checkpoint.write"),
            fs.checkpoint.keeps_up) == ("gpu", "gpu", 0.8)
    assert fs.rule("checkpoint.keeps_up") is not None  # on by default


def test_keeps_up_false_leaves_its_rule_out() -> None:
    (fs,), errors = parsed("[{path: /d, shared: true, checkpoint: {size_per_node: 1 GiB, "
                           "write: '>= 1 GB/s per node', keeps_up: false}}]")
    assert errors == [] and fs.checkpoint is not None
    assert fs.checkpoint.keeps_up == 0.0 and fs.rule("checkpoint.keeps_up") is None
