"""contract/declaration.py: what a clause of the contract is (its section and key, the value
written, the probe field it reads) and the names made from it."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.clauses import CLAUSES, declared
from pytest_cluster.contract.declaration import (
    ACCEPTANCE,
    LEVELS,
    SANITY,
    STRESS,
    TEST_PREFIX,
    Declaration,
    Reads,
    Value,
)
from pytest_cluster.units import Dim


def test_an_instances_name_fills_in_its_place_and_its_member() -> None:
    write = Declaration("storage", "write", Value.QUANTITY, Dim.RATE)
    assert write.id == "storage.write"
    assert write.name() == "storage.write"
    assert write.name("/data") == "storage[/data].write"
    assert write.name("/data", "x") == "storage[/data].write.x"
    assert Declaration("host", "software", Value.VERSIONS).name(member="torch") == (
        "host.software.torch")


def test_a_key_within_a_map_is_written_as_its_last_part() -> None:
    burst = Declaration("storage", "checkpoint.write", Value.QUANTITY, within="checkpoint")
    assert (burst.id, burst.written_as) == ("storage.checkpoint.write", "write")
    assert Declaration("host", "cpu_cores", Value.QUANTITY).written_as == "cpu_cores"


@pytest.mark.parametrize("value", list(Value))
def test_a_setting_is_no_clause_and_an_implied_clause_is_not_written(value: Value) -> None:
    declaration = Declaration("s", "k", value)
    assert declaration.is_clause == (value is not Value.SETTING)
    assert declaration.written == (value is not Value.IMPLIED)


def test_a_test_is_made_from_a_declaration_only_where_it_reads_a_field() -> None:
    cores = Declaration("host", "cpu_cores", Value.QUANTITY, reads=Reads("host", "cpu", "cores"))
    assert cores.table and cores.test == "test_cpu_cores"
    assert not Declaration("host", "x", Value.RULE, reads=Reads("host")).table
    assert not Declaration("host", "x", Value.RULE).table
    assert Declaration("pdu", "outlets", Value.QUANTITY).test == "test_pdu_outlets"
    for section, prefix in TEST_PREFIX.items():
        assert Declaration(section, "k", Value.QUANTITY).test == f"{prefix}k"
    assert declared("storage.write").test == "test_storage_write"


def test_the_levels_from_lightest_to_heaviest_and_every_clause_at_one() -> None:
    assert LEVELS == (SANITY, ACCEPTANCE, STRESS)
    assert Declaration("s", "k", Value.RULE).level == ACCEPTANCE  # the default
    assert {d.level for d in CLAUSES} <= set(LEVELS)


def test_reads_is_a_table_row_only_with_a_field() -> None:
    assert Reads("host", "cpu", "cores").table
    assert not Reads("host", "cpu").table
    assert (Reads("host").method, Reads("host").method_field) == (None, "method")
