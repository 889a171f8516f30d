"""A YAML mapping of the spec validated key by key."""

from __future__ import annotations

from pytest_cluster.contract.reading.located_errors import Ctx
from pytest_cluster.contract.reading.mapping import Map
from tests.contract.reading.test_yaml_nodes import node


def test_a_merged_key_yields_to_the_maps_own_and_a_key_given_twice_is_an_error() -> None:
    ctx = Ctx("t.yaml")
    document = node("base: &b {x: 1, y: 1}\nm: {<<: *b, y: 2, y: 3}\n")
    table = Map(ctx, document.value[1][1], "m", ("x", "y"))
    assert [str(e) for e in ctx.errors] == [
        "t.yaml:2: m.y: duplicate key (first given on line 2)"]
    taken = {key: table.take(key) for key in ("x", "y")}
    assert {key: node.value for key, node in taken.items() if node is not None} == {
        "x": "1", "y": "2"}  # the merged y yields to the map's own, the first of it


def test_an_unknown_key_is_said_with_the_closest_known_one() -> None:
    ctx = Ctx("t.yaml")
    table = Map(ctx, node("{gpu: 1, zz: 2}"), "s", ("gpus",))
    table.finish()
    assert [str(e) for e in ctx.in_order()] == [
        "t.yaml:1: s.gpu: unknown key; did you mean 'gpus'? (known keys: gpus)",
        "t.yaml:1: s.zz: unknown key (known keys: gpus)"]
