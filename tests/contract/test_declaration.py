"""contract/declaration.py: what a clause of the contract is (its section and key, the value
written, the probe field it reads) and the names made from it."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_cluster.contract.clauses import CLAUSES, declared
from pytest_cluster.contract.declaration import (
    ACCEPTANCE,
    LEVELS,
    SANITY,
    STRESS,
    TEST_PREFIX,
    Actor,
    Declaration,
    Fault,
    Reads,
    Value,
)
from pytest_cluster.units import Dim

#: A fault for the declarations made here (every clause declares one).
FAULT = Fault("PC-TEST", "nothing: a test's clause", Actor.TOOL)


def _declared(section: str, key: str, value: Value, *args: Any, **kwargs: Any) -> Declaration:
    """A declaration as the table would make it: a clause with its fault, a setting none."""
    kwargs.setdefault("fault", None if value is Value.SETTING else FAULT)
    return Declaration(section, key, value, *args, **kwargs)


def test_an_instances_name_fills_in_its_place_and_its_member() -> None:
    write = _declared("storage", "write", Value.QUANTITY, Dim.RATE)
    assert write.id == "storage.write"
    assert write.name() == "storage.write"
    assert write.name("/data") == "storage[/data].write"
    assert write.name("/data", "x") == "storage[/data].write.x"
    assert _declared("host", "software", Value.VERSIONS).name(member="torch") == (
        "host.software.torch")


def test_a_key_within_a_map_is_written_as_its_last_part() -> None:
    burst = _declared("storage", "checkpoint.write", Value.QUANTITY, within="checkpoint")
    assert (burst.id, burst.written_as) == ("storage.checkpoint.write", "write")
    assert _declared("host", "cpu_cores", Value.QUANTITY).written_as == "cpu_cores"


@pytest.mark.parametrize("value", list(Value))
def test_a_setting_is_no_clause_and_an_implied_clause_is_not_written(value: Value) -> None:
    declaration = _declared("s", "k", value)
    assert declaration.is_clause == (value is not Value.SETTING)
    assert declaration.written == (value is not Value.IMPLIED)


def test_a_test_is_made_from_a_declaration_only_where_it_reads_a_field() -> None:
    cores = _declared("host", "cpu_cores", Value.QUANTITY, reads=Reads("host", "cpu", "cores"))
    assert cores.table and cores.test == "test_cpu_cores"
    assert not _declared("host", "x", Value.RULE, reads=Reads("host")).table
    assert not _declared("host", "x", Value.RULE).table
    assert _declared("pdu", "outlets", Value.QUANTITY).test == "test_pdu_outlets"
    for section, prefix in TEST_PREFIX.items():
        assert _declared(section, "k", Value.QUANTITY).test == f"{prefix}k"
    assert declared("storage.write").test == "test_storage_write"


def test_the_levels_from_lightest_to_heaviest_and_every_clause_at_one() -> None:
    assert LEVELS == (SANITY, ACCEPTANCE, STRESS)
    assert _declared("s", "k", Value.RULE).level == ACCEPTANCE  # the default
    assert {d.level for d in CLAUSES} <= set(LEVELS)


def test_reads_is_a_table_row_only_with_a_field() -> None:
    assert Reads("host", "cpu", "cores").table
    assert not Reads("host", "cpu").table
    assert (Reads("host").method, Reads("host").method_field) == (None, "method")


def test_a_clause_cannot_be_declared_without_its_fault_nor_a_setting_with_one() -> None:
    with pytest.raises(ValueError, match=r"clause pdu\.outlets: declare its fault"):
        Declaration("pdu", "outlets", Value.QUANTITY)
    with pytest.raises(ValueError, match=r"setting storage\.io_size: .* has no fault"):
        Declaration("storage", "io_size", Value.SETTING, fault=FAULT)
    assert Declaration("storage", "io_size", Value.SETTING).fault is None


@pytest.mark.parametrize("code", ["GPU-ROWREMAP", "PC-gpu", "PC-", "PC-GPU-", "PC GPU",
                                  "PC-GPU_ROWREMAP", ""])
def test_a_fault_code_is_pc_and_upper_case_words(code: str) -> None:
    with pytest.raises(ValueError, match="fault code"):
        Fault(code, "reseat it", Actor.PROVIDER_HARDWARE)


def test_a_fault_says_an_action_and_an_actor() -> None:
    with pytest.raises(ValueError, match="its action is empty"):
        Fault("PC-GPU-X", " ", Actor.PROVIDER_HARDWARE)
    with pytest.raises(ValueError, match="is not an Actor"):
        Fault("PC-GPU-X", "reseat it", "provider-hardware")  # type: ignore[arg-type]
    assert [a.value for a in Actor] == ["provider-hardware", "provider-network", "storage",
                                        "buyer-spec", "tool"]


def test_every_clause_declares_its_own_fault_code() -> None:
    """Every clause of the table has a fault, each code its own (a family's members and
    instances share their declaration's)."""
    faults = [d.fault for d in CLAUSES if d.is_clause]
    assert all(isinstance(f, Fault) for f in faults)
    codes = [f.code for f in faults if f is not None]
    assert len(codes) == len(set(codes)), sorted(c for c in codes if codes.count(c) > 1)
    assert declared("gpus.row_remap").fault == Fault(
        "PC-GPU-ROWREMAP", declared("gpus.row_remap").fault.action,  # type: ignore[union-attr]
        Actor.PROVIDER_HARDWARE)
