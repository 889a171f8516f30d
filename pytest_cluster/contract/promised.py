"""Whether the contract promises what one test case checks, and under which name.

A test case checks a declared clause (its `clause` marker names the family, e.g.
`storage.write`) for the values it was parametrized with (a node, a filesystem, a dtype, a
software package). Its name is the family's with those filled in (`storage[/data].write`,
`gpus.matmul.bf16`); a case the spec does not promise is named by what is missing: the whole
section (`gpus`), or the family (`host.software`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_cluster.contract.clauses import CLAUSES, declared
from pytest_cluster.contract.declaration import Declaration, Value
from pytest_cluster.contract.model import (
    Promises,
    Spec,
    StorageSpec,
    VersionClause,
)

#: Why a clause the contract has is not checked by a run, as `Promised.kind` says it: it
#: spans more nodes than a run of some nodes has (--cluster-node), or more than the
#: cluster has (a slow-node search of one node).
ACROSS, TOO_FEW_NODES = "across nodes", "too few nodes"
#: Why a rule is not checked: the spec (or its profile) turned it off (`pcie: false`).
OFF = "off"


@dataclass(frozen=True)
class Promised:
    name: str  # the instance checked, or what is not in the contract
    promised: bool
    why: str = ""  # why a clause the spec has is not checked here, e.g. "needs 2+ nodes"
    kind: str = ""  # that reason's kind (ACROSS, TOO_FEW_NODES); '': not in the contract

    @property
    def not_in_contract(self) -> str:
        """How 'not in contract' lists it."""
        return f"{self.name} ({self.why})" if self.why else self.name


def _record(spec: Spec, declaration: Declaration,
            params: Mapping[str, object]) -> Promises | None:
    """The spec's record of a declaration's section; of a section that is a list (storage),
    its entry the case was parametrized with (by its place in the list: a run of some
    nodes is parametrized with its own spec's entry, and asks the whole spec's too)."""
    record = spec.section(declaration.section)
    if isinstance(record, tuple):
        entry = params.get("filesystem")
        record = next((fs for fs in record if isinstance(entry, StorageSpec)
                       and fs.index == entry.index), None)
    return record if isinstance(record, Promises) else None


def absent(spec: Spec, section: str) -> bool:
    """Whether the spec leaves a whole section out (None, or an empty list)."""
    return spec.section(section) in (None, ())


def _member(declaration: Declaration, spec: Spec,
            params: Mapping[str, object]) -> Promised:
    """A case of one member of a family: a version, a package, a dtype."""
    if declaration.value is Value.VERSIONS:
        software = params.get("software")
        if isinstance(software, VersionClause):
            return Promised(software.key, True)
        return Promised(declaration.id, False)
    if declaration.value is Value.MEMBERS:
        dtype = params.get("dtype")
        if spec.gpus is None or not isinstance(dtype, str):  # none in contract: NOTSET
            return Promised(declaration.id, False)
        return Promised(declaration.name(member=dtype),
                        any(name == dtype for name, _ in spec.gpus.matmul))
    package = params.get("package")  # a flag of every member: host.same_software
    on = spec.host.same_software and isinstance(package, str)
    return Promised(declaration.name(member=str(package)) if on else declaration.id, on)


def promised(spec: Spec, name: str, params: Mapping[str, object]) -> Promised:
    """What a case of clause `name` checks, with these parameters, and whether the spec
    promises it. A clause that is not declared (your own marker) is always checked. In a
    run of some nodes, what the whole cluster's spec promises but this run cannot check
    (a clause across nodes) says so."""
    found = _promised(spec, name, params)
    whole, cluster = spec.whole, spec.cluster
    if found.promised or whole is None:
        return found
    full = _promised(whole, name, params)
    if not full.promised:
        return found
    return Promised(full.name, False, across(len(cluster.nodes), len(cluster.chosen_from)),
                    ACROSS)


def across(chosen: int, of: int) -> str:
    return f"{ACROSS}: this run covers {chosen} of {of} nodes (--cluster-node)"


def _promised(spec: Spec, name: str, params: Mapping[str, object]) -> Promised:
    try:
        declaration = declared(name)
    except KeyError:
        return Promised(name, True)
    section = declaration.section
    if absent(spec, section):
        return Promised(section, False)  # the whole section is absent
    if declaration.when is not None:
        found = Promised(name, declaration.when(spec))
    elif declaration.members:
        found = _member(declaration, spec, params)
    else:
        record = _record(spec, declaration, params)
        if record is None:
            return Promised(name, False)
        where = record.path if isinstance(record, StorageSpec) else None
        found = Promised(declaration.name(where), record.item(declaration.key) is not None)
        if declaration.within and getattr(record, declaration.within, None) is None:
            # the map is not written: it is what the contract lacks (storage[/d].checkpoint)
            base = declaration.section if where is None else f"{declaration.section}[{where}]"
            return Promised(f"{base}.{declaration.within}", False)
    off = dict(spec.off).get(declaration.id)
    if not found.promised and off is not None:
        return Promised(found.name, False, f"{OFF}: {off}", OFF)
    if found.promised and len(spec.cluster.nodes) < declaration.needs_nodes:
        return Promised(declaration.id, False, f"needs {declaration.needs_nodes}+ nodes",
                        TOO_FEW_NODES)
    return found


def clause_count(spec: Spec) -> int:
    """How many clauses the spec holds (each filesystem's apart; the rules on unless turned
    off, and the defaults, counted): what `pytest-cluster check` says of a valid spec."""
    total = 0
    for name in dict.fromkeys(d.section for d in CLAUSES):
        record = spec.section(name)
        for each in record if isinstance(record, tuple) else (record,):
            if isinstance(each, Promises):
                total += len(each.clauses)
    return total
