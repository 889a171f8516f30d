"""The clause declarations (contract/clauses.py) are the one place a clause is spelled: the
acceptance suite checks exactly the declared clauses, the loader parses each as declared,
and the probes give the fields the table-made tests read."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.clauses import CLAUSES, clauses, declared, keys
from pytest_cluster.contract.declaration import TEST_PREFIX, Declaration, Value
from pytest_cluster.contract.model import Clause, Rule
from pytest_cluster.contract.sections.sim_records import SimSpec
from pytest_cluster.errors import SpecError
from pytest_cluster.probes import PROBES, probe_source
from pytest_cluster.sim.cluster import host_payload
from pytest_cluster.units import Dim

#: Every module of the acceptance suite (a new one is found, not listed here).
SUITES = tuple(sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "acceptance")
                      .glob("test_*.py")))


def marked() -> dict[str, list[str]]:
    """Clause marker -> the acceptance tests that carry it."""
    found: dict[str, list[str]] = {}
    for suite in SUITES:
        module = importlib.import_module(f"pytest_cluster.acceptance.{suite}")
        for name, test in inspect.getmembers(module, inspect.isfunction):
            if not name.startswith("test_"):
                continue
            for mark in getattr(test, "pytestmark", []):
                if mark.name == "clause":
                    found.setdefault(mark.args[0], []).append(f"{suite}::{name}")
    return found


def test_the_suite_checks_exactly_the_declared_clauses() -> None:
    tests = marked()
    assert sorted(tests) == sorted(d.id for d in CLAUSES if d.is_clause)
    assert all(len(names) == 1 for names in tests.values()), tests


def test_table_made_tests_carry_their_declared_names() -> None:
    """A clause that compares a probe field gets its test from the table, named as users
    know it (test_cpu_cores, test_storage_write, test_gpu_h2d), in its section's suite."""
    tests = marked()
    table = [d for d in CLAUSES if d.table]
    assert {d.id for d in table} >= {"host.cpu_cores", "host.memory_available",
                                     "storage.write", "gpus.h2d"}
    for declaration in table:
        assert declaration.test.startswith(
            TEST_PREFIX.get(declaration.section, f"test_{declaration.section}_"))
        assert tests[declaration.id][0].endswith(f"::{declaration.test}")
        assert declaration.reads is not None and declaration.reads.probe in PROBES


def example(declaration: Declaration) -> str:
    """A value of the declared kind, as YAML (the unit's example from its dimension)."""
    assert declaration.dim is not None
    return "8" if declaration.dim is Dim.COUNT else declaration.dim.example.split(" or ")[0]


@pytest.mark.parametrize("section", ["host", "gpus"])
def test_each_declared_quantity_parses_as_declared(section: str) -> None:
    """Every quantity of a section, written as a bare value: parsed with its declared
    dimension, its default comparison, and named as declared."""
    quantities = [d for d in clauses(section) if d.value is Value.QUANTITY]
    body = "".join(f"  {d.key}: {example(d)}\n" for d in quantities)
    spec = parse_spec(f"cluster: {{name: x, nodes: a}}\n{section}:\n{body}", "t.yaml")
    record = spec.host if section == "host" else spec.gpus
    assert record is not None
    for line, declaration in enumerate(quantities, start=3):
        clause = record.item(declaration.key)
        assert isinstance(clause, Clause), declaration.id
        assert (clause.key, clause.line, clause.requirement.op) == (
            declaration.id, line, declaration.op)
        assert clause.requirement.bound.dim is declaration.dim


def written_alone(declaration: Declaration, value: str) -> tuple[str, str]:
    """A spec with `value` written where `declaration` is written (a filesystem's, a
    member's, a key of a map within its section), and the name its errors give it."""
    member = declaration.members[0] if declaration.value is Value.MEMBERS else None
    inner = f"{{{member}: {value}}}" if member is not None else value
    key = declaration.written_as
    body = f"{declaration.within}: {{{key}: {inner}}}" if declaration.within \
        else f"{key}: {inner}"
    if declaration.section == "storage":
        return (f"cluster: {{name: x, nodes: 'n[1-4]'}}\nstorage:\n  - path: /d\n    {body}\n",
                declaration.name("/d", member))
    if declaration.within == "faults":  # the sim's faults: a list of maps
        return (f"cluster: {{name: x, nodes: 'n[1-4]', launcher: sim}}\nsim:\n  faults:\n"
                f"    - {{node: n1, nic: 0, {key}: {inner}}}\n", f"sim.faults[0].{key}")
    return (f"cluster: {{name: x, nodes: 'n[1-4]'}}\n{declaration.section}:\n  {body}\n",
            declaration.name(None, member))


def error_line(text: str, name: str) -> str:
    """The error the spec `text` gives about the value at `name` (one line of a listing,
    or the one; another section's or key's problems aside)."""
    with pytest.raises(SpecError) as info:
        parse_spec(text, "t.yaml")
    found = [line.strip() for line in str(info.value).splitlines()
             if f" {name}: expected " in line]
    assert len(found) == 1, str(info.value)
    return found[0]


#: Every clause (and setting) written with a number: parsed (units.parse_quantity) as its
#: dimension says.
NUMBERED = [d for d in CLAUSES if d.written and d.dim is not None]


@pytest.mark.parametrize("declaration", NUMBERED, ids=[d.id for d in NUMBERED])
def test_a_number_no_double_holds_as_written_is_refused_at_its_key(
        declaration: Declaration) -> None:
    """Every numbered clause, however it is parsed, refuses a number it would not read as
    written: 38 nines (a YAML int: before, host.cpu_cores took it and every node failed
    `required 99999999999999997748809823456034029568`), the same in a comparison, one of
    16 significant digits; a usage error naming the key."""
    nines = "9" * 38
    for value, why in ((nines, "too large: a number of the spec is below 1e15"),
                       (f"'>= {nines}'", "too large: a number of the spec is below 1e15"),
                       ("'>= 1e400'", "too large"),
                       ("0.1234567890123456", "more than 15 significant digits"),
                       ("'>= 1.234567890123456'", "more than 15 significant digits")):
        text, name = written_alone(declaration, value)
        line = error_line(text, name)
        extra = declaration.section == "storage" or declaration.within == "faults"
        assert line.startswith(f"t.yaml:{3 + extra}: {name}: ")
        # a share's error says its two forms; a rule reads only a whole number as a count,
        # a setting only a quantity (no comparison)
        if declaration.value in (Value.QUANTITY, Value.MEMBERS) or (
                declaration.value is Value.RULE and value == nines) or (
                declaration.value is Value.SETTING and not value.startswith("'>=")):
            assert f"({why}" in line, line


def test_a_filesystem_names_its_clauses_by_its_path() -> None:
    body = "".join(f"    {d.key}: {example(d)}\n" for d in clauses("storage")
                   if d.value is Value.QUANTITY and not d.within)
    spec = parse_spec(f"cluster: {{name: x, nodes: a}}\nstorage:\n  - path: /data/\n"
                      f"    shared: true\n{body}", "t.yaml")
    (fs,) = spec.storage
    assert [c.key for c in fs.clauses] == [f"storage[/data].{d.key}" for d in
                                           clauses("storage") if not d.within]
    assert isinstance(fs.item("shared"), Rule) and isinstance(fs.write, Clause)
    assert keys("storage")[:3] == ("path", "shared", "capacity")


def test_a_marker_of_an_undeclared_clause_fails_at_import() -> None:
    from pytest_cluster.run.contract_tests import checks

    assert checks("gpus.p2p").args == ("gpus.p2p",)
    with pytest.raises(KeyError):
        checks("gpus.p2q")
    assert declared("storage.write").name("/data") == "storage[/data].write"
    assert declared("gpus.matmul").name(member="bf16") == "gpus.matmul.bf16"


def table_fields(probe: str) -> list[tuple[str, str, str]]:
    return [(d.id, d.reads.part, d.reads.field) for d in CLAUSES
            if d.table and d.reads is not None and d.reads.probe == probe]


def test_the_host_probe_and_the_simulated_host_give_every_field_declared() -> None:
    done = subprocess.run([sys.executable, "-I", "-"], input=probe_source("host"),
                          capture_output=True, text=True, timeout=120, check=True)
    payloads = {"probe": json.loads(done.stdout.splitlines()[-1])["data"],
                "sim": host_payload(SimSpec("H100-SXM-80GB", 8), "n1")}
    for source, payload in payloads.items():
        for name, part, field in table_fields("host"):
            assert isinstance(payload[part].get(field), int), (source, name)
