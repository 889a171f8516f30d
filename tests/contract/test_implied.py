"""When the contract promises a clause that is not written (contract/implied.py): each
predicate of the spec, as the clauses' `when` names it."""

from __future__ import annotations

from pytest_cluster.contract import implied, parse_spec
from pytest_cluster.contract.clauses import declared


def test_the_inter_node_scopes_need_an_interconnect_and_more_than_one_node() -> None:
    one = parse_spec("cluster: {name: x, nodes: a}\nhost: {cpu_cores: 1}\n", "t.yaml")
    assert not any(check(one) for check in (implied.several, implied.intra, implied.inter,
                                            implied.search, implied.training))
    assert declared("interconnect.busbw[node_network]").when is implied.search
    assert declared("training.ranks").when is implied.training


def test_several_nodes_are_several() -> None:
    two = parse_spec("cluster: {name: x, nodes: 'a,b'}\nhost: {cpu_cores: 1}\n", "t.yaml")
    assert implied.several(two) and not implied.latency(two)
