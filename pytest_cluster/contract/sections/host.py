"""The spec's `host:` section: the host clauses and the software versions promised."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from yaml.nodes import Node

from pytest_cluster.contract.clauses import declared, keys
from pytest_cluster.contract.model import (
    HostSpec,
    Rule,
    VersionClause,
)
from pytest_cluster.contract.reading.clause_parsers import flag, promises
from pytest_cluster.contract.reading.fields import field
from pytest_cluster.contract.reading.mapping import Map
from pytest_cluster.contract.reading.yaml_nodes import written
from pytest_cluster.contract.requirement import (
    parse_version_requirement,
)
from pytest_cluster.contract.sections.host_records import Golden
from pytest_cluster.errors import UnitError, head
from pytest_cluster.hostlist import compress_hostlist

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


#: `host.golden: majority` (or true): each node against the cluster's strict majority.
MAJORITY = "majority"
#: How a file of golden values is named: an inventory.json a run wrote, or a YAML.
GOLDEN_FILES = (".json", ".yaml", ".yml")


def golden_of(nodes: tuple[str, ...]) -> Callable[[object], Golden]:
    """The parser of host.golden: `majority` (or true), a node of `nodes` (a host name's
    case does not matter: the cluster's spelling is kept), or a file of golden values;
    anything else is a usage error (a golden node that is not in the cluster)."""
    by_lower = {name.lower(): name for name in nodes}

    def parse(raw: object) -> Golden:
        if raw is True or raw == MAJORITY:
            return Golden()
        if isinstance(raw, str) and raw.strip().lower() in by_lower:
            return Golden(node=by_lower[raw.strip().lower()])
        if isinstance(raw, str) and raw.strip().lower().endswith(GOLDEN_FILES):
            if not raw.strip().isprintable():  # shown in every view: never raw controls
                raise UnitError(f"a golden file's name may not hold control characters "
                                f"(ESC, NUL, a bidi override), got {head(raw, 64)!r}")
            return Golden(file=raw.strip())
        listed = head(compress_hostlist(list(nodes)), 120) if nodes else "none"
        raise UnitError(f"expected {MAJORITY} (the nodes' strict majority), a node of the "
                        f"cluster ({listed}) or a file of golden values (an inventory.json "
                        f"a run wrote, or a .yaml), got {head(str(raw), 64)!r}")
    return parse


def golden_text(gpus: bool, fabric: bool) -> str:
    """host.golden's requirement, saying only what it compares: the host's versions, and
    the GPUs' VBIOS and PCIe link where the spec has a gpus section (the GPU probe runs),
    the NIC ports' firmware and PCIe link where it has a fabric section (the NIC probe)."""
    parts = ["the node's driver, CUDA, NCCL and kernel versions",
             *(["its GPUs' VBIOS and PCIe link"] if gpus else []),
             *(["its NIC ports' firmware and PCIe link"] if fabric else [])]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{listed} the same as the golden configuration's"


def _golden(ctx: Ctx, table: Map, nodes: tuple[str, ...],
            sections: frozenset[str]) -> tuple[Golden | None, Rule | None]:
    declaration = declared("host.golden")
    node = table.take(declaration.key)
    golden = field(ctx, node, declaration.id, golden_of(nodes))
    if golden is None or node is None:
        return None, None
    text = golden_text("gpus" in sections, "fabric" in sections)
    return golden, Rule(declaration.id, node.start_mark.line + 1, f"{text} ({golden.said})")


def parse_host(ctx: Ctx, node: Node | None, nodes: tuple[str, ...] = (),
               sections: frozenset[str] = frozenset()) -> HostSpec:
    """The host section; `nodes`: the cluster's (what host.golden may name); `sections`:
    those the spec has (what host.golden compares: the GPUs' fields with gpus, the NIC
    ports' with fabric)."""
    if node is None:
        return HostSpec()
    table = Map(ctx, node, "host", keys("host"))
    software = _software(ctx, table)
    same, _ = flag(ctx, table, declared("host.same_software"))
    golden, rule = _golden(ctx, table, nodes, sections)
    result = HostSpec(clauses=promises(ctx, table, "host") + ((rule,) if rule else ()),
                      software=software, same_software=True if same is None else same,
                      golden=golden)
    table.finish()
    return result
