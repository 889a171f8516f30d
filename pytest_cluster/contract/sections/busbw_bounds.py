"""`interconnect.busbw`: the bus bandwidth promised, once for every scope (`">= 80%"`) or
per scope (`{intra_node: ">= 460 GB/s", inter_node: ">= 80%"}`). The scopes are the busbw
clause's instances (contract/clauses.py: busbw[intra_node], busbw[inter_node],
busbw[node_network]); node_network, the slow-node search's node pairs across the network,
takes inter_node's bound unless the spec gives its own. Each bound is a share of
theoretical (which needs the link it is a share of) or a rate. A scope the cluster runs
with no bound is an error at the spec's line, naming the key to write: a profile's busbw is
one node's figure (Azure's health checks run all_reduce on one node's GPUs), never the
network's."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from yaml.nodes import MappingNode, Node

from pytest_cluster.contract.clauses import clauses
from pytest_cluster.contract.reading.clause_parsers import share_or
from pytest_cluster.contract.reading.mapping import Map
from pytest_cluster.contract.sections.busbw import is_share
from pytest_cluster.units import Dim

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Clause, InterconnectSpec
    from pytest_cluster.contract.reading.located_errors import Ctx

PATH = "interconnect.busbw"
#: The scopes a bound may be given for: the declared instances of the busbw clause.
SCOPES = tuple(d.key.removeprefix("busbw[").removesuffix("]") for d in clauses("interconnect")
               if d.key.startswith("busbw["))
#: Each scope in words, for the errors.
WORDS = {"intra_node": "inside one node", "inter_node": "across nodes",
         "node_network": "between node pairs (the slow-node search)"}
EXPECTED = "a share of theoretical like '>= 80%' or a bus bandwidth like '>= 360 GB/s'"


def key(scope: str) -> str:
    """The clause of one scope: 'interconnect.busbw[inter_node]'."""
    return f"{PATH}[{scope}]"


def parse_busbw(ctx: Ctx, table: Map) -> tuple[Clause, ...]:
    """The bound of each scope the spec gives (`table`: the interconnect section's map),
    each keyed as its scope's clause: one bound written for all of them, or a map of
    scopes (node_network taking inter_node's where it has none); () when absent or wrong
    (said)."""
    node = table.items.get("busbw", (None, None))[1]
    if not isinstance(node, MappingNode):
        one = share_or(ctx, table, "interconnect", "busbw", Dim.RATE, EXPECTED)
        return tuple(replace(one, key=key(scope)) for scope in SCOPES) if one else ()
    table.take("busbw")
    scopes = Map(ctx, node, PATH, SCOPES)
    found = {scope: replace(bound, key=key(scope)) for scope in SCOPES
             if (bound := share_or(ctx, scopes, "interconnect.busbw", scope, Dim.RATE,
                                   EXPECTED)) is not None}
    scopes.finish()
    if not scopes.items and not found and not any(
            path.startswith(PATH) for path in ctx.paths):
        ctx.error(node, PATH, f"promises nothing: give a bound for {', '.join(SCOPES)}, "
                  f"each {EXPECTED}")
    if "node_network" not in found and "inter_node" in found:
        found["node_network"] = replace(found["inter_node"], key=key("node_network"))
    return tuple(found[scope] for scope in SCOPES if scope in found)


def running(spec: InterconnectSpec, nodes: int) -> tuple[str, ...]:
    """The scopes a cluster of `nodes` nodes runs cases of, as contract/implied.py says:
    inside a node with 2 ranks or more, across nodes with a node count to test, between
    node pairs with the slow-node search on several nodes."""
    runs = {"intra_node": spec.ranks_per_node > 1, "inter_node": bool(spec.node_counts),
            "node_network": spec.node_network and nodes > 1}
    return tuple(scope for scope in SCOPES if runs[scope])


def _missing(ctx: Ctx, spec: InterconnectSpec, scope: str) -> str:
    """What the error of a scope run without a bound says: what the scope is, where its
    profile's busbw stops, what to write."""
    given = [c.key.removeprefix(f"{PATH}[").removesuffix("]") for c in spec.busbw]
    covers = " (the jobs of node_counts, and the slow-node search unless node_network " \
        "has its own)" if scope == "inter_node" else ""
    profile = ""
    if ctx.profile is not None and any(c.source for c in spec.busbw):
        promised = " and ".join(WORDS[s] for s in given) or "nothing"
        profile = (f"; profile {ctx.profile.name} promises busbw {promised} only (one "
                   "node's figure, never the network's)" if given == ["intra_node"] else
                   f"; profile {ctx.profile.name} promises busbw {promised} only")
    rate = "360 GB/s" if scope == "intra_node" else "320 GB/s"
    link = "intra_node: {kind, rate}" if scope == "intra_node" else \
        "inter_node: {kind, nics_per_node, rate_per_nic}"
    return (f"missing: the busbw promised {WORDS[scope]}{covers}{profile}; write it under "
            f"interconnect, e.g. busbw: {{{scope}: \">= {rate}\"}}; a share of theoretical "
            f"({{{scope}: \">= 80%\"}}) needs the link's rate too (interconnect.{link})")


def check_bounds(ctx: Ctx, node: Node, spec: InterconnectSpec, nodes: int,
                 links: dict[str, bool]) -> None:
    """Every scope the cluster runs has a bound (node_network's missing is inter_node's:
    it takes inter_node's), and a bound that is a share has its link (`links`: whether
    the spec gives intra_node and inter_node)."""
    bounds = {c.key: c for c in spec.busbw}
    said = any(path == PATH or path.startswith(f"{PATH}.") for path in ctx.paths)
    busbw = next((value for k, value in node.value if k.value == "busbw"), None) \
        if isinstance(node, MappingNode) else None
    for scope in running(spec, nodes):
        bound = bounds.get(key(scope))
        named = "inter_node" if scope == "node_network" else scope
        if bound is None and not said and not ctx.failed(f"{PATH}.{named}"):
            ctx.error(ctx.in_spec(busbw, node), f"{PATH}.{named}", _missing(ctx, spec, named))
        link = "intra_node" if scope == "intra_node" else "inter_node"
        if bound is not None and is_share(bound) and not links[link] \
                and not ctx.failed(f"interconnect.{link}"):
            example = "intra_node: {kind: nvlink, rate: 450 GB/s}" if link == "intra_node" \
                else "inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}"
            what = "intra-node link's" if link == "intra_node" else "network's"
            ctx.error(node, f"interconnect.{link}", f"missing: a share of theoretical needs "
                      f"the {what} rate ({example}), or give busbw as a rate")
