"""contract/sections/cluster.py: the `cluster:` section, its nodes (hostlists expanded, each once,
whatever its case) and how they are reached."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import ClusterSpec
from pytest_cluster.contract.reading.compose import compose
from pytest_cluster.contract.reading.located_errors import Ctx
from pytest_cluster.contract.sections.cluster import MAX_CLUSTER_NAME, parse_cluster, parse_nodes
from pytest_cluster.hostlist import MAX_NODES


def nodes(text: str) -> tuple[tuple[str, ...], list[str]]:
    ctx = Ctx("t.yaml")
    found = parse_nodes(ctx, compose(text, "t.yaml"), "cluster.nodes")
    return found, [str(error) for error in ctx.errors]


def cluster(text: str | None, allocation: bool = False) -> tuple[ClusterSpec, list[str]]:
    ctx = Ctx("t.yaml")
    node = None if text is None else compose(text, "t.yaml")
    return parse_cluster(ctx, node, allocation), [str(error) for error in ctx.errors]


def test_hostlists_expand_in_order_each_node_once() -> None:
    assert nodes("['gpu-[01-03]', login]") == (("gpu-01", "gpu-02", "gpu-03", "login"), [])
    assert nodes("gpu-[1-2]") == (("gpu-1", "gpu-2"), [])  # one hostlist, not a list


def test_a_node_listed_twice_is_named_and_its_case_does_not_matter() -> None:
    found, errors = nodes("[n1, N1, 'n[1-3]', n2]")
    assert found == ("n1", "n2", "n3")
    assert errors == [
        "t.yaml:1: cluster.nodes[1]: node 'N1' is listed twice (a host name's case does not "
        "matter)",
        "t.yaml:1: cluster.nodes[2]: node 'n1' is listed twice",
        "t.yaml:1: cluster.nodes[3]: node 'n2' is listed twice"]


def test_many_nodes_listed_twice_are_named_five_then_counted() -> None:
    _, errors = nodes("['n[1-8]', 'n[1-8]']")
    assert errors == ["t.yaml:1: cluster.nodes[1]: nodes 'n1', 'n2', 'n3', 'n4', 'n5' and 3 "
                      "more are listed twice"]


def test_more_nodes_than_one_spec_holds_are_refused() -> None:
    found, errors = nodes(f"['a[1-{MAX_NODES}]', b]")
    assert len(found) == MAX_NODES
    assert errors == [f"t.yaml:1: cluster.nodes[1]: more than {MAX_NODES} nodes; test a "
                      f"cluster in parts of at most {MAX_NODES} (one spec each)"]


def test_a_bad_hostlist_is_named_at_its_place() -> None:
    found, errors = nodes("[a, 'b[3-1]']")
    assert found == ("a",) and len(errors) == 1
    assert errors[0].startswith("t.yaml:1: cluster.nodes[1]: ")


def test_the_defaults_come_from_the_launchers_registry() -> None:
    for name, kind in KINDS.items():
        spec, errors = cluster(f"{{name: c, nodes: a, launcher: {name}}}")
        assert errors == [], name
        assert (spec.launcher, spec.python) == (name, kind.default_python())
    spec, _ = cluster("{name: c, nodes: a}")
    assert (spec.launcher, spec.probe_timeout_s, spec.parallel, spec.probe_output_bytes) == (
        "local", 600.0, 64, 16 * 2**20)


@pytest.mark.parametrize(("text", "allocation", "messages"), [
    (None, False, ["t.yaml: cluster: missing section (needs at least name and nodes)"]),
    ("{nodes: a}", False, ["t.yaml:1: cluster.name: missing: name the cluster, e.g. name: "
                           "acme-h100-trial"]),
    ("{name: c}", False, ["t.yaml:1: cluster.nodes: missing: list the nodes, e.g. nodes: "
                          "gpu-[001-004]"]),
    ("{name: c}", True, []),
    ("{name: c, nodes: a}", True, ["t.yaml:1: cluster.nodes: leave it out with "
                                   "slurm.allocation: true (the nodes are the allocation's)"]),
    ("{name: c, nodes: [], launcher: shh}", False, [
        "t.yaml:1: cluster.nodes: no nodes given",
        "t.yaml:1: cluster.launcher: expected one of " + ", ".join(KINDS)
        + ", got 'shh'; did you mean 'ssh'?"]),
])
def test_what_is_missing_or_misspelt_is_named(text: str | None, allocation: bool,
                                              messages: list[str]) -> None:
    assert cluster(text, allocation)[1] == messages


def test_a_name_longer_than_the_reports_show_is_refused() -> None:
    assert cluster(f"{{name: {'x' * MAX_CLUSTER_NAME}, nodes: a}}")[1] == []
    _, errors = cluster(f"{{name: {'x' * (MAX_CLUSTER_NAME + 1)}, nodes: a}}")
    assert len(errors) == 1 and errors[0].startswith("t.yaml:1: cluster.name: ")
