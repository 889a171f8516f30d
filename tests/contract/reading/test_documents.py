"""contract/reading/documents.py: our records read back from the JSON their asdict wrote, each
field as its declared type says."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from pytest_cluster.contract.reading.documents import record_of


@dataclasses.dataclass(frozen=True)
class Inner:
    name: str
    seconds: float


@dataclasses.dataclass(frozen=True)
class Outer:
    nodes: tuple[str, ...]
    pair: tuple[str, int]
    inner: tuple[Inner, ...] = ()
    by_node: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    again: Outer | None = None
    said: str | int = ""
    bag: dict[str, object] = dataclasses.field(default_factory=dict)


def _json(record: Outer) -> object:
    return json.loads(json.dumps(dataclasses.asdict(record)))


def test_a_record_reads_back_equal_from_its_json_and_from_asdict() -> None:
    record = Outer(("a", "b"), ("a", 2), (Inner("a", 1.5), Inner("b", 2.0)),
                   {"a": (1.0, 2.5)}, Outer(("c",), ("c", 0)), said=3, bag={"x": [1]})
    again = record_of(Outer, _json(record))
    assert again == record
    assert isinstance(again.nodes, tuple) and isinstance(again.inner[0], Inner)
    assert again.again is not None and isinstance(again.again.nodes, tuple)
    # in the process that made it, asdict's tuples are read the same
    assert record_of(Outer, dataclasses.asdict(record)) == record


def test_an_int_is_read_as_the_declared_float_and_a_missing_field_keeps_its_default() -> None:
    found = record_of(Outer, {"nodes": [], "pair": ["a", 1],
                              "inner": [{"name": "a", "seconds": 3}]})
    assert found.inner[0].seconds == 3.0 and isinstance(found.inner[0].seconds, float)
    assert found.by_node == {} and found.again is None and found.said == ""
    assert math.isnan(record_of(Inner, {"name": "a", "seconds": math.nan}).seconds)


def test_a_record_that_is_not_a_json_object_is_refused() -> None:
    with pytest.raises(ValueError, match="Inner: not a JSON object"):
        record_of(Outer, {"nodes": [], "pair": ["a", 1], "inner": ["a"]})
