"""contract/sections/busbw_bounds.py: `interconnect.busbw` once for every scope or per scope
(node_network taking inter_node's), an unknown scope named with a suggestion, a scope the
cluster runs without a bound refused at its line, and a run on the simulator judging each
scope's case at its own bound."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.loader import parse_spec
from pytest_cluster.contract.sections.busbw import required_busbw
from pytest_cluster.contract.sections.busbw_bounds import SCOPES, running
from tests.contract.sections.test_interconnect import H100, error_of, ic
from tests.test_plugin import jsonl


def _bounds(text: str) -> list[tuple[str, str, int]]:
    return [(c.key, c.requirement.text, c.line) for c in ic(text).busbw]


def test_the_scopes_are_the_declared_instances_of_busbw() -> None:
    assert SCOPES == ("intra_node", "inter_node", "node_network")


def test_one_bound_is_every_scopes_and_a_map_gives_each_its_own() -> None:
    assert _bounds(H100) == [(f"interconnect.busbw[{scope}]", ">= 80%", 9) for scope in SCOPES]
    per_scope = H100.replace('  busbw: ">= 80%"\n', '  busbw:\n    intra_node: ">= 460 GB/s"\n'
                             '    inter_node: ">= 80%"\n')
    # node_network (the slow-node search's pairs, across the network) takes inter_node's
    assert _bounds(per_scope) == [("interconnect.busbw[intra_node]", ">= 460 GB/s", 10),
                                  ("interconnect.busbw[inter_node]", ">= 80%", 11),
                                  ("interconnect.busbw[node_network]", ">= 80%", 11)]
    spec = ic(per_scope)
    texts = {scope: required_busbw(spec, 1 if scope == "intra_node" else 4, scope)[0]
             .requirement.text for scope in SCOPES}
    assert texts == {"intra_node": ">= 460 GB/s",
                     "inter_node": ">= 80% of 400 GB/s = 320 GB/s",
                     "node_network": ">= 80% of 400 GB/s = 320 GB/s"}
    own = per_scope.replace('    inter_node: ">= 80%"\n', '    inter_node: ">= 80%"\n'
                            '    node_network: ">= 300 GB/s"\n')
    assert _bounds(own)[2] == ("interconnect.busbw[node_network]", ">= 300 GB/s", 12)


@pytest.mark.parametrize(("busbw", "message"), [
    ('{intra_node: ">= 460 GB/s", inter_nod: ">= 80%"}',
     "t.yaml:9: interconnect.busbw.inter_nod: unknown key; did you mean 'inter_node'? (known "
     "keys: intra_node, inter_node, node_network)"),
    ('{intra_node: ">= 460 GB/s", inter_node: fast}',
     "t.yaml:9: interconnect.busbw.inter_node: expected a share of theoretical like '>= 80%' "
     "or a bus bandwidth like '>= 360 GB/s', got 'fast'"),
    ("{}", "t.yaml:9: interconnect.busbw: promises nothing: give a bound for intra_node, "
           "inter_node, node_network, each a share of theoretical like '>= 80%' or a bus "
           "bandwidth like '>= 360 GB/s'"),
])
def test_a_wrong_scope_or_bound_is_named(busbw: str, message: str) -> None:
    assert error_of(H100.replace('">= 80%"', busbw, 1)) == message


def test_a_scope_the_cluster_runs_without_a_bound_is_refused_saying_what_to_write() -> None:
    said = error_of(H100.replace('">= 80%"', '{intra_node: ">= 460 GB/s"}'))
    assert said.startswith("t.yaml:9: interconnect.busbw.inter_node: missing: the busbw "
                           "promised across nodes (the jobs of node_counts, and the "
                           "slow-node search unless node_network has its own); write it")
    # a rate works alone; a share needs the network's rate too, and says so
    assert said.endswith('e.g. busbw: {inter_node: ">= 320 GB/s"}; a share of theoretical '
                         '({inter_node: ">= 80%"}) needs the link\'s rate too '
                         '(interconnect.inter_node: {kind, nics_per_node, rate_per_nic})')
    # the slow-node search alone (no node count to test) needs it as well: it is its bound
    search_only = H100.replace("[1, 2, 4, 8, 16]", "[8, 16]")
    assert ic(search_only).node_counts == ()
    assert error_of(search_only.replace('">= 80%"', '{intra_node: ">= 460 GB/s"}')) \
        .startswith("t.yaml:9: interconnect.busbw.inter_node: missing: ")
    # a scope the cluster does not run needs none: one node, or nothing across nodes
    one = H100.replace("'n[1-4]'", "n1").replace('">= 80%"', '{intra_node: ">= 460 GB/s"}')
    assert [c.key for c in ic(one).busbw] == ["interconnect.busbw[intra_node]"]
    quiet = search_only.replace("  busbw:", "  node_network: false\n  busbw:")
    assert _bounds(quiet.replace('">= 80%"', '{intra_node: ">= 460 GB/s"}')) == [
        ("interconnect.busbw[intra_node]", ">= 460 GB/s", 10)]
    assert error_of(one.replace("intra_node: \">=", "inter_node: \">=")).startswith(
        "t.yaml:9: interconnect.busbw.intra_node: missing: the busbw promised inside one "
        "node; write it")


def test_a_share_needs_the_link_of_its_own_scope_only() -> None:
    no_inter = H100.replace("  inter_node: {kind: infiniband, nics_per_node: 8, "
                            "rate_per_nic: 400 Gb/s}\n", "")
    assert error_of(no_inter).startswith("t.yaml:4: interconnect.inter_node: missing: a "
                                         "share of theoretical needs the network's rate")
    # the share is inside the node only: across nodes a rate needs no link
    rate_across = no_inter.replace('">= 80%"', '{intra_node: ">= 80%", inter_node: '
                                   '">= 300 GB/s"}')
    assert [c.requirement.text for c in ic(rate_across).busbw] == [
        ">= 80%", ">= 300 GB/s", ">= 300 GB/s"]


@pytest.mark.parametrize("nodes", ["n1", "'n[1-4]'"])
@pytest.mark.parametrize("extra", ["", "  node_network: false\n", "  ranks_per_node: 1\n"])
def test_the_scopes_run_are_those_the_declarations_promise(nodes: str, extra: str) -> None:
    text = H100.replace("'n[1-4]'", nodes).replace('  busbw:', f"{extra}  busbw:")
    if nodes == "n1" and extra.startswith("  ranks"):
        return  # one node with one rank: refused (nothing to measure)
    spec = parse_spec(text, "t.yaml")
    assert spec.interconnect is not None
    whens = [declared(f"interconnect.busbw[{scope}]").when for scope in SCOPES]
    promised = tuple(scope for scope, when in zip(SCOPES, whens, strict=True)
                     if when is not None and when(spec))
    assert running(spec.interconnect, len(spec.cluster.nodes)) == promised


PER_SCOPE = """\
cluster: {name: scopes, nodes: "n[1-2]", launcher: sim}
interconnect:
  intra_node: {kind: nvlink, rate: 450 GB/s}
  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}
  payloads: [1 GiB]
  ranks_per_node: 8
  backend: nccl
  busbw:
    intra_node: ">= 50%"
    inter_node: ">= 99%"
    node_network: ">= 100 GB/s"
sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 8
"""


def test_each_scopes_case_is_judged_at_its_own_bound(pytester: pytest.Pytester) -> None:
    """Inside each node at 50% of NVLink (passes), across the two at 99% of the network
    (a healthy fabric does not reach it: fails), the slow-node search's pairs at 100 GB/s
    (pass): each record requires its scope's bound."""
    (pytester.path / "t.yaml").write_text(PER_SCOPE)
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k",
                       "collective or node_network")
    judged = {(r["clause"], r["outcome"], r["required"]) for r in jsonl(pytester)
              if str(r.get("clause", "")).startswith("interconnect.busbw")}
    assert judged == {("interconnect.busbw[intra_node]", "passed", 225.0),
                      ("interconnect.busbw[inter_node]", "failed", 396.0),
                      ("interconnect.busbw[node_network]", "passed", 100.0)}
