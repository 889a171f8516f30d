"""The spec's sections, the one registry of them (`SECTIONS`): each section's key, its parser
and the probes its clauses are checked against; ours, then the installed extensions'."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yaml.nodes import Node

from pytest_cluster.contract.extensions import added_sections, adds_to, free
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import (
    ClusterSpec,
    SectionSpec,
    StorageSpec,
)
from pytest_cluster.contract.reading.clause_parsers import promises
from pytest_cluster.contract.reading.mapping import Map, section_map
from pytest_cluster.contract.sections.cluster import parse_cluster
from pytest_cluster.contract.sections.fabric import parse_fabric
from pytest_cluster.contract.sections.gpus import parse_gpus
from pytest_cluster.contract.sections.host import parse_host
from pytest_cluster.contract.sections.interconnect import parse_interconnect
from pytest_cluster.contract.sections.sim import parse_sim
from pytest_cluster.contract.sections.sla import parse_sla
from pytest_cluster.contract.sections.slurm import allocation_nodes, parse_slurm, wants_allocation
from pytest_cluster.contract.sections.ssh import parse_ssh
from pytest_cluster.contract.sections.storage import parse_storage
from pytest_cluster.contract.sections.tolerances import parse_baseline, parse_soak
from pytest_cluster.contract.sections.training import parse_training

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.located_errors import Ctx


class Sofar:
    """What the sections parsed so far give the ones after them: the cluster (its launcher,
    its nodes: a SLURM allocation's with `slurm: {allocation: true}`) and each section's
    record by name."""

    def __init__(self, top: Map) -> None:
        self.top = top  # the spec's top-level map (a section may peek at another's node)
        self.written = frozenset(top.items)  # the sections the spec has
        self.cluster = ClusterSpec("", (), "local", "python3", 600.0, 64)
        self.records: dict[str, Any] = {}

    def record(self, name: str) -> Any:
        return self.records.get(name)


def _declared_only(ctx: Ctx, node: Node | None, name: str) -> SectionSpec | None:
    """A section without a parser of its own: a map of its declared clauses, each parsed as
    declared (contract/clauses.py), into a SectionSpec; None when the spec leaves it out."""
    table = section_map(ctx, node, name)
    if table is None:
        return None
    record = SectionSpec(name, promises(ctx, table, name))
    table.finish()
    return record


@dataclass(frozen=True)
class Section:
    """One section of the spec, declared once: its key, its parser (the node, None when
    absent; it returns the Spec's field of the same name) and the probes whose results its
    clauses are checked against. The loader and `promised` iterate SECTIONS; a section's
    clauses are declared in clauses.py under its name.

    A section without a parser (`parse` None) is a map of its declared clauses, parsed as
    declared, and its record a SectionSpec in `Spec.others`: adding one takes its clauses,
    this line, its probe and its acceptance module (README: how to add a spec section)."""

    name: str
    parse: Callable[[Ctx, Node | None, Sofar], object] | None = None
    probes: tuple[str, ...] = ()
    keep_null: bool = False  # `sim:` with nothing under it is a section (a healthy cluster)
    checked: bool = False  # its clauses are checked: given alone, it is something to test

    def read(self, ctx: Ctx, node: Node | None, sofar: Sofar) -> object:
        """The section's record from its node (None when the spec leaves it out)."""
        if self.parse is None:
            return _declared_only(ctx, node, self.name)
        return self.parse(ctx, node, sofar)


def _cluster_section(ctx: Ctx, node: Node | None, sofar: Sofar) -> ClusterSpec:
    """The cluster; with `slurm: {allocation: true}` and the slurm launcher, its nodes are
    the SLURM allocation's (read before any section that counts the nodes)."""
    slurm_node = sofar.top.items.get("slurm", (None, None))[1]
    allocation = wants_allocation(slurm_node)
    cluster = parse_cluster(ctx, node, allocation)
    if allocation and KINDS[cluster.launcher].section == "slurm":
        cluster = dataclasses.replace(cluster, nodes=allocation_nodes(ctx, slurm_node))
    sofar.cluster = cluster
    return cluster


def _storage_section(ctx: Ctx, node: Node | None, sofar: Sofar) -> tuple[StorageSpec, ...]:
    return parse_storage(ctx, node, sofar.cluster, "gpus" in sofar.top.items)


#: Our sections of the spec, in the order they are parsed (a section reads what those
#: before it gave) and error messages list them. Each is a field of Spec of the same name.
_BUILTIN: tuple[Section, ...] = (
    Section("cluster", _cluster_section, ("inventory",)),
    Section("host", lambda ctx, node, sofar: parse_host(ctx, node, sofar.cluster.nodes,
                                                        sofar.written), ("host",)),
    Section("storage", _storage_section, ("storage", "import_latency", "shared_fs")),
    Section("gpus", lambda ctx, node, _: parse_gpus(ctx, node), ("gpu", "gpu_perf", "dcgm"),
            checked=True),
    Section("interconnect", lambda ctx, node, sofar: parse_interconnect(
        ctx, node, sofar.cluster, sofar.record("gpus")), ("job_node", "nccl_tests"),
        checked=True),
    Section("sim", lambda ctx, node, sofar: parse_sim(
        ctx, node, sofar.cluster, sofar.record("gpus"), sofar.record("interconnect")),
            keep_null=True),
    Section("ssh", lambda ctx, node, sofar: parse_ssh(ctx, node, sofar.cluster)),
    Section("slurm", lambda ctx, node, sofar: parse_slurm(ctx, node, sofar.cluster)),
    Section("baseline", lambda ctx, node, _: parse_baseline(ctx, node)),
    Section("sla", lambda ctx, node, _: parse_sla(ctx, node)),
    Section("soak", lambda ctx, node, _: parse_soak(ctx, node)),
    Section("training", lambda ctx, node, sofar: parse_training(
        ctx, node, sofar.cluster, sofar.record("gpus")), ("job_node",), checked=True),
    Section("fabric", lambda ctx, node, sofar: parse_fabric(
        ctx, node, "interconnect" in sofar.written), ("nic",), checked=True),
)
#: The spec's sections, the one registry of them: ours, then those of the installed
#: extensions once they are loaded (contract/extensions.py), each a map of its declared clauses
#: (Spec.others).
SECTIONS: list[Section] = list(_BUILTIN)
BY_NAME = {section.name: section for section in SECTIONS}
#: The top-level keys, in the order error messages list them.
LISTED: list[str] = list(BY_NAME)


@adds_to
def _add_extensions() -> None:
    new = free(((s.name, Section(s.name, None, s.probes, checked=s.checked))
                for s in added_sections()), BY_NAME, "the spec's sections")
    SECTIONS.extend(new.values())
    BY_NAME.update(new)
    LISTED.extend(new)
