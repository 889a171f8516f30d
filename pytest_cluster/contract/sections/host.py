"""The spec's `host:` section: the host clauses and the software versions promised."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yaml.nodes import Node

from pytest_cluster.contract.clauses import declared, keys
from pytest_cluster.contract.model import (
    HostSpec,
    VersionClause,
)
from pytest_cluster.contract.reading.clause_parsers import flag, promises
from pytest_cluster.contract.reading.fields import field
from pytest_cluster.contract.reading.mapping import Map
from pytest_cluster.contract.reading.yaml_nodes import written
from pytest_cluster.contract.requirement import (
    parse_version_requirement,
)

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.located_errors import Ctx


def _software(ctx: Ctx, table: Map) -> tuple[VersionClause, ...]:
    declaration = declared("host.software")
    node = table.take(declaration.key)
    if node is None:
        return ()
    found: list[VersionClause] = []
    soft = Map(ctx, node, declaration.id, declaration.members)
    for name in declaration.members:
        item = soft.take(name)
        req = field(ctx, item, declaration.name(member=name), parse_version_requirement,
                    written)  # `torch: 2.10` is 2.10, never the float 2.1
        if req is not None and item is not None:
            found.append(VersionClause(declaration.name(member=name),
                                       item.start_mark.line + 1, name, req))
    soft.finish()
    return tuple(found)


def parse_host(ctx: Ctx, node: Node | None) -> HostSpec:
    if node is None:
        return HostSpec()
    table = Map(ctx, node, "host", keys("host"))
    software = _software(ctx, table)
    same, _ = flag(ctx, table, declared("host.same_software"))
    result = HostSpec(clauses=promises(ctx, table, "host"), software=software,
                      same_software=True if same is None else same)
    table.finish()
    return result
