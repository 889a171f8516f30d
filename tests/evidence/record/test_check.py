"""check.py: the evidence of one test: where it looks from the test's parameters, whether
it is simulated from the results it read, values recorded within bounds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.model import Rule
from pytest_cluster.evidence.record import check
from pytest_cluster.evidence.record.check import Evidence, Place, bounded, raw_text, where
from pytest_cluster.launchers.result import ErrorKind, ProbeResult


class FakeItem:
    def __init__(self) -> None:
        self.user_properties: list[tuple[str, object]] = []
        self.callspec: FakeCallSpec | None = None


def test_simulated_follows_from_the_result_not_the_caller() -> None:
    evidence = Evidence(FakeItem(), Place("n1", gpu=0))  # type: ignore[arg-type]
    sim = ProbeResult("n1", "gpu", {"count": 0}, simulated=True)
    evidence.require(sim, Rule("gpus.xid", 3, "no XID errors"))
    with pytest.raises(pytest.fail.Exception, match=r"^\[SIMULATED\] n1 gpu0 xid: cannot"):
        evidence.cannot_measure(Rule("gpus.xid", 3, "no XID errors"), "no events")
    real = Evidence(FakeItem())  # type: ignore[arg-type]
    down = ProbeResult("n1", "host", None, error=ErrorKind.UNREACHABLE, message="refused")
    with pytest.raises(pytest.fail.Exception, match=r"^n1: host probe unreachable: refused"):
        real.require(down, Rule("gpus.xid", 3, "no XID errors"))
    assert ("probe", "host") in real.item.user_properties


class FakeCallSpec:
    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params


def test_the_evidence_knows_where_from_the_tests_parameters() -> None:
    """Node, filesystem and GPU come from the test's own parameters: no call says them."""
    spec = parse_spec("cluster: {name: x, nodes: n2}\nstorage:\n  - {path: /data, "
                      "write: 1 GB/s}\n", "t.yaml")
    item = FakeItem()
    item.callspec = FakeCallSpec({"node": "n2", "filesystem": spec.storage[0], "gpu": 3})
    evidence = Evidence(item)  # type: ignore[arg-type]
    assert evidence.place == Place("n2", "/data", 3)
    write = spec.storage[0].clause("write")
    assert write is not None
    result = ProbeResult("n2", "storage", {}, simulated=True)
    with pytest.raises(pytest.fail.Exception, match=r"^\[SIMULATED\] n2 /data gpu3 write: "
                       r"measured 0.5 GB/s < required 1 GB/s \(50% of required\)$"):
        evidence.check(write, 5e8, result=result)
    recorded = dict(item.user_properties)
    assert (recorded["node"], recorded["filesystem"], recorded["spec_key"]) == (
        "n2", "/data", "storage[/data].write")
    assert Evidence(FakeItem()).place == Place()  # type: ignore[arg-type]


def test_a_case_that_fails_early_still_says_what_tells_it_apart() -> None:
    """collective, payload and node count come from the parameters into the result, even
    when the node did not answer before the test recorded them: every view can tell the
    1 GiB case from the 16 GiB one."""
    spec = parse_spec("cluster: {name: x, nodes: n2}\nhost: {cpu_cores: 8}\n", "t.yaml")
    cores = spec.host.clause("cpu_cores") if spec.host is not None else None
    assert cores is not None
    item = FakeItem()
    item.callspec = FakeCallSpec({"node": "n2", "collective": "all_reduce",
                                  "payload": 2**30, "node_count": 1, "flag": True})
    evidence = Evidence(item)  # type: ignore[arg-type]
    down = ProbeResult("n2", "host", None, error=ErrorKind.UNREACHABLE, message="gone")
    with pytest.raises(pytest.fail.Exception):
        evidence.require(down, cores)
    recorded = dict(item.user_properties)
    assert (recorded["collective"], recorded["payload"], recorded["node_count"]) == (
        "all_reduce", 2**30, 1)
    assert "flag" not in recorded
    names = [name for name, _ in item.user_properties]
    assert names.count("payload") == 1


def test_where_names_the_node_the_filesystem_and_the_gpu() -> None:
    assert where("n1") == "n1"
    assert where("n1", "/data") == "n1 /data"
    assert where("n1", gpu=0) == "n1 gpu0"
    assert where("n1", "/data", 3) == "n1 /data gpu3"


def test_a_place_takes_only_parameters_of_the_right_kind() -> None:
    assert Place.of({"node": 3, "gpu": True, "filesystem": "/data", "payload": False,
                     "collective": ["x"]}) == Place()


def test_a_recorded_value_is_cut_and_a_number_not_finite_is_text() -> None:
    assert bounded("x" * check.MAX_TEXT) == "x" * check.MAX_TEXT
    assert bounded("x" * (check.MAX_TEXT + 1)) == (
        f"{'x' * check.MAX_TEXT}... (cut: {check.MAX_TEXT + 1} characters)")
    assert bounded(float("nan")) == "nan" and bounded(float("-inf")) == "-inf"
    assert bounded(1.5) == 1.5


def test_raw_evidence_is_one_line_of_strict_json_within_its_bound() -> None:
    assert json.loads(raw_text({"b": float("inf"), "a": [1]})) == {"a": [1], "b": "inf"}
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    assert raw_text(deep) == '{"cut": "nested too deeply to record"}'
    big = "x" * check.MAX_RAW
    cut = json.loads(raw_text(big))
    assert cut == {"cut": f"{check.MAX_RAW + 2} bytes of raw evidence, more than "
                          f"{check.MAX_RAW}", "head": json.dumps(big)[:4096]}


def test_a_failure_without_a_number_records_its_kind() -> None:
    item = FakeItem()
    with pytest.raises(pytest.fail.Exception, match=r"^versions differ$"):
        Evidence(item).fail("versions differ", "not_all_nodes")  # type: ignore[arg-type]
    assert item.user_properties == [("error_kind", "not_all_nodes"), ("verdict", "fail")]
