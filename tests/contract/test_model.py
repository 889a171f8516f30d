"""contract/model.py: the spec's frozen records, each promise found by its declared key."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.clauses import CLAUSES
from pytest_cluster.contract.model import (
    DECLARED,
    SECTION_FIELDS,
    CheckpointSpec,
    ClusterSpec,
    InterconnectSpec,
    LinkSpec,
    SectionSpec,
    Spec,
    SpecNote,
    TransportSpec,
)
from pytest_cluster.contract.sections.busbw import is_share

SPEC = ("cluster: {name: x, nodes: a}\nhost: {cpu_cores: 8}\n"
        "storage:\n  - {path: /d, write: 1 GB/s}\n")


def test_every_declared_clause_and_no_setting_is_known() -> None:
    assert {d.id for d in CLAUSES if d.is_clause} == DECLARED
    assert all(d.id not in DECLARED for d in CLAUSES if not d.is_clause)


def test_a_promise_is_found_by_its_key_or_as_an_attribute() -> None:
    spec = parse_spec(SPEC, "t.yaml")
    fs = spec.storage[0]
    assert fs.write is fs.item("write") is fs.clause("write")
    assert fs.write is not None and fs.write.key == "storage[/d].write"  # named by its path
    assert fs.read is None  # declared, not promised
    assert spec.host.cpu_cores is not None and spec.host.memory is None
    with pytest.raises(AttributeError):
        _ = spec.host.cpu_coers  # not declared: no silent None
    with pytest.raises(AttributeError):
        _ = spec.host._private


def test_a_spec_knows_each_section_by_name_its_fields_and_others() -> None:
    spec = parse_spec(SPEC, "t.yaml")
    assert {f.name for f in dataclasses.fields(Spec)} - {
        "file", "sha256", "others", "warnings", "text", "whole", "extends",
        "off"} == SECTION_FIELDS
    assert spec.section("host") is spec.host and spec.section("gpus") is None
    other = SectionSpec("pdu")
    assert dataclasses.replace(spec, others=(other,)).section("pdu") is other
    assert spec.section("pdu") is None


def test_the_records_that_compute_say_what_they_compute() -> None:
    assert LinkSpec("infiniband", 50e9, "400 Gb/s", 8).total_bytes_per_s == 400e9
    assert TransportSpec("ib", gdr=True).text == "NCCL used inter_node ib, gdr true"
    assert TransportSpec(nvls=False).text == "NCCL used nvls false"
    burst = CheckpointSpec(2**30, "gpu", 2**24, basis=(("checkpoint.write", "node"),))
    assert (burst.basis_of("checkpoint.write"), burst.basis_of("checkpoint.read")) == ("node",
                                                                                      "")
    note = SpecNote("t.yaml", 3, "fabric.rate", "looks like bytes written for bits")
    assert note.said == "fabric.rate: looks like bytes written for bits"
    assert str(note) == "t.yaml:3: fabric.rate: looks like bytes written for bits"


def test_the_sweep_steps_by_four_up_to_the_largest_payload_and_keeps_the_contracts() -> None:
    busbw = parse_spec("cluster: {name: x, nodes: 'n[1-2]'}\ninterconnect:\n  payloads: "
                       "[3 MiB, 64 MiB]\n  busbw: '>= 1 GB/s'\n", "t.yaml").interconnect
    assert isinstance(busbw, InterconnectSpec)
    assert busbw.sweep() == (2**20, 3 * 2**20, 4 * 2**20, 16 * 2**20, 64 * 2**20)
    assert busbw.latency_sizes() == (8, 64 * 2**10)  # latency_size 8: once
    assert dataclasses.replace(busbw, latency_size=2**20).latency_sizes() == (8, 64 * 2**10,
                                                                               2**20)
    assert not any(map(is_share, busbw.busbw))  # a rate, for every scope


def test_the_records_are_frozen() -> None:
    cluster = ClusterSpec("c", ("a",), "local", "python3", 600.0, 64)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cluster.name = "d"  # type: ignore[misc]
