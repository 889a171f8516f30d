"""A YAML mapping of the spec validated key by key (Map: take the known keys, then
`finish` flags the rest, with a did-you-mean), merge keys read the YAML way, a section's
map, and whether a launcher's own section matches the cluster's launcher."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from yaml.nodes import MappingNode, Node, SequenceNode

from pytest_cluster.contract.clauses import keys
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.reading.spelling import closest, foreign_letters, lookalike
from pytest_cluster.contract.reading.yaml_nodes import kind, scalar

if TYPE_CHECKING:
    from pytest_cluster.contract.model import ClusterSpec
    from pytest_cluster.contract.reading.located_errors import Ctx

#: Keys echoed in "unknown key" messages; others (a password file's lines, tokens) are not.
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
MERGE_TAG = "tag:yaml.org,2002:merge"
Pairs = list[tuple[Node, Node]]


def merge_keys(ctx: Ctx, node: MappingNode, path: str) -> tuple[Pairs, Pairs]:
    """A mapping's pairs brought in by merge keys (`<<: *base`, `<<: [*a, *b]`) and its
    own, the YAML way and without changing the nodes (an anchored map is read again where
    its aliases are): of the merged, the last of a key wins (the maps of a list are
    given last to first, so the first map wins); a key of the map's own wins over them."""
    merged: Pairs = []
    own: Pairs = []
    for key_node, value_node in node.value:
        if key_node.tag != MERGE_TAG:
            own.append((key_node, value_node))
            continue
        sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
        for source in reversed(sources):
            if isinstance(source, MappingNode):
                inner, inner_own = merge_keys(ctx, source, path)
                merged += inner + inner_own
            else:
                ctx.error(key_node, path, f"YAML merge key (<<): expected a map or a list "
                          f"of maps, got {kind(source)}")
    return merged, own


class Map:
    """A YAML mapping being validated: take known keys, then `finish` flags the rest."""

    def __init__(self, ctx: Ctx, node: Node, path: str, known: tuple[str, ...]) -> None:
        self.ctx, self.node, self.path, self.known = ctx, node, path, known
        self.items: dict[str, tuple[Node, Node]] = {}
        if not isinstance(node, MappingNode):
            ctx.error(node, path, f"expected a map of {', '.join(known)}, got {kind(node)}")
            return
        merged, own = merge_keys(ctx, node, path)
        given: set[str] = set()
        for explicit, pairs in ((False, merged), (True, own)):
            for key_node, value_node in pairs:
                key = scalar(key_node)
                sub = self.sub(str(key))
                if not isinstance(key, str):
                    ctx.error(key_node, sub, f"a key must be a name, got {key!r}")
                elif explicit and key in given:
                    first = self.items[key][0].start_mark.line + 1
                    ctx.error(key_node, sub, f"duplicate key (first given on line {first})")
                else:  # a key written in the map wins over a merged one
                    if explicit:
                        given.add(key)
                    self.items[key] = (key_node, value_node)

    def sub(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def take(self, key: str, keep_null: bool = False) -> Node | None:
        """The value of `key`; a key without a value counts as absent unless `keep_null`."""
        item = self.items.pop(key, None)
        if item is None or (item[1].tag.endswith(":null") and not keep_null):
            return None
        return item[1]

    def finish(self) -> None:
        for key, (key_node, _) in self.items.items():
            if not _PLAIN_KEY.match(key):  # echo no line of a file that is not a spec
                meant = lookalike(key, self.known)
                if meant is not None:
                    self.ctx.error(key_node, self.sub("<key not shown>"),
                                   f"unknown key; did you mean {meant!r}? It is written "
                                   f"with {foreign_letters(key)}")
                    continue
                self.ctx.error(key_node, self.sub("<key not shown>"),
                               "unknown key, not a plain name (not shown: is this file a "
                               f"spec? known keys: {', '.join(self.known)})")
                continue
            close = None if self.ctx.full else closest(key, self.known, cutoff=0.6)
            hint = f"; did you mean {close!r}?" if close else ""
            self.ctx.error(key_node, self.sub(key),
                           f"unknown key{hint} (known keys: {', '.join(self.known)})")


def section_map(ctx: Ctx, node: Node | None, name: str) -> Map | None:
    """The map of the spec's section `name`, its keys the declared ones (contract/clauses.py);
    None when the spec leaves the section out or it is not a map (said as an error)."""
    if node is None:
        return None
    table = Map(ctx, node, name, keys(name))
    return table if isinstance(node, MappingNode) else None


def for_launcher(ctx: Ctx, node: Node, section: str, cluster: ClusterSpec) -> bool:
    """Whether a launcher's own section (sim, ssh, slurm) matches cluster.launcher; if not,
    records the error."""
    if KINDS[cluster.launcher].section == section:
        return True
    if ctx.failed("cluster.launcher"):  # which launcher was meant is not known: one error
        return False
    ctx.error(node, section, f"only used with launcher: {section} (the launcher is "
              f"{cluster.launcher!r})")
    return False
