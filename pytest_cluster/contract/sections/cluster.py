"""The spec's `cluster:` section: its name, its nodes (hostlists expanded, each once) and how
they are reached (launcher, python, probe limits)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yaml.nodes import MappingNode, Node, SequenceNode

from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import (
    ClusterSpec,
)
from pytest_cluster.contract.reading.fields import (
    field,
    interpreter,
    or_default,
    positive_int,
    shown_name,
    size_between,
    text,
    time_between,
)
from pytest_cluster.contract.reading.mapping import Map
from pytest_cluster.contract.reading.spelling import closest, written_with
from pytest_cluster.errors import UnitError
from pytest_cluster.hostlist import MAX_NODES, expand_hostlist

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.located_errors import Ctx

#: The longest cluster.name: it heads the terminal's summary, the reports and the run's
#: directory name (which keeps its first 80 characters).
MAX_CLUSTER_NAME = 128


def parse_nodes(ctx: Ctx, node: Node | None, path: str) -> tuple[str, ...]:
    if node is None:
        return ()
    items = node.value if isinstance(node, SequenceNode) else [node]
    names: dict[str, None] = {}  # ordered, and `in` is O(1)
    seen: set[str] = set()  # each name in lower case: n1 and N1 are one host
    for index, item in enumerate(items):
        where = f"{path}[{index}]" if isinstance(node, SequenceNode) else path
        expr = field(ctx, item, where, text("a hostname or hostlist like 'gpu-[001-004]'"))
        if expr is None:
            continue
        try:
            expanded = expand_hostlist(expr)
        except UnitError as exc:
            ctx.error(item, where, str(exc))
            continue
        twice = []
        for name in expanded:
            if name.lower() in seen:
                twice.append(name)
            else:
                names[name] = None
                seen.add(name.lower())
        if twice:
            shown = ", ".join(repr(name) for name in twice[:5])
            more = f" and {len(twice) - 5} more" if len(twice) > 5 else ""
            ctx.error(item, where, (f"node {shown} is listed twice" if len(twice) == 1 else
                                    f"nodes {shown}{more} are listed twice")
                      + ("" if all(name in names for name in twice[:5]) else
                         " (a host name's case does not matter)"))
        if len(names) > MAX_NODES:
            ctx.error(item, where, f"more than {MAX_NODES} nodes; test a cluster in parts "
                      f"of at most {MAX_NODES} (one spec each)")
            break
    return tuple(names)[:MAX_NODES]


def parse_cluster(ctx: Ctx, node: Node | None, allocation: bool = False) -> ClusterSpec:
    known = ("name", "nodes", "launcher", "python", "probe_timeout", "probe_output",
             "parallel")
    if node is None:
        ctx.error(None, "cluster", "missing section (needs at least name and nodes)")
        return ClusterSpec("", (), "local", "python3", 600.0, 64)
    table = Map(ctx, node, "cluster", known)
    name_node = table.take("name")
    name = field(ctx, name_node, "cluster.name", shown_name("a name for the cluster",
                                                              MAX_CLUSTER_NAME))
    if name_node is None and isinstance(node, MappingNode):
        ctx.error(node, "cluster.name", "missing: name the cluster, e.g. name: acme-h100-trial")
    nodes_node = table.take("nodes")
    if allocation and nodes_node is not None:
        ctx.error(nodes_node, "cluster.nodes", "leave it out with slurm.allocation: true (the "
                  "nodes are the allocation's)")
    elif nodes_node is None and isinstance(node, MappingNode) and not allocation:
        ctx.error(node, "cluster.nodes", "missing: list the nodes, e.g. nodes: gpu-[001-004]")
    nodes = parse_nodes(ctx, nodes_node, "cluster.nodes")
    if nodes_node is not None and not nodes and not ctx.count:
        ctx.error(nodes_node, "cluster.nodes", "no nodes given")

    def launcher(raw: object) -> str:
        if raw not in KINDS:
            close = closest(raw, list(KINDS), cutoff=0.6) if isinstance(raw, str) else None
            hint = f"; did you mean {close!r}?" if close else ""
            spelled = written_with(raw[:64]) if isinstance(raw, str) else ""
            raise UnitError(f"expected one of {', '.join(KINDS)}, got {raw!r}"[:200] + spelled
                            + hint)
        return str(raw)

    chosen = or_default(field(ctx, table.take("launcher"), "cluster.launcher", launcher),
                        "local")
    timeout = time_between(1, 24 * 3600, "from 1 s to 24 h")
    result = ClusterSpec(
        name=or_default(name, ""),
        nodes=nodes,
        launcher=chosen,
        python=or_default(field(ctx, table.take("python"), "cluster.python", interpreter),
                          KINDS[chosen].default_python()),
        probe_timeout_s=or_default(field(ctx, table.take("probe_timeout"),
                                         "cluster.probe_timeout", timeout), 600.0),
        parallel=or_default(field(ctx, table.take("parallel"), "cluster.parallel",
                                  positive_int), 64),
        probe_output_bytes=or_default(field(
            ctx, table.take("probe_output"), "cluster.probe_output",
            size_between(64 * 2**10, 2**30, "from 64 KiB to 1 GiB")), 16 * 2**20),
    )
    table.finish()
    return result
