"""Shipped profiles: `extends: NAME` at the top of a spec takes the sections and clauses of
the profile NAME (a YAML file of pytest_cluster/contract/profiles/, one per part and fabric
or cloud shape), and the spec's own values override them key by key.

The merge is of YAML nodes (`merged`), before any section is read: a mapping in both is
merged key by key, anything else the spec writes replaces the profile's at that key. So the
profile's values go through the same validation as the spec's, an error in the spec's value
keeps its FILE:LINE, and one in a profile's names the profile's file (our bug: a test loads
every shipped profile).

A profile cites every bound it supplies (`sources:`, from the key's path to the URL and what
it says); a clause whose bound came from a profile carries its citation (`Ctx.cited`), which
the evidence and the report show. Only the shipped names are allowed: `extends` never reads
a path or anything but our own files.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from yaml.error import Mark
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from pytest_cluster.contract.reading.compose import compose
from pytest_cluster.contract.reading.spelling import closest
from pytest_cluster.contract.reading.yaml_nodes import kind, scalar
from pytest_cluster.errors import SpecError, head

#: The key of a spec that names its profile, and a profile's keys that are not sections.
EXTENDS = "extends"
ABOUT, SOURCES = "about", "sources"
#: The sections a profile may supply: what a part or a cloud shape promises (never where
#: the cluster is or how it is reached).
SECTIONS = ("host", "gpus", "interconnect", "fabric")


def folder() -> Path:
    """Where the shipped profiles are (inside the installed package)."""
    return Path(str(resources.files("pytest_cluster.contract") / "profiles"))


def names() -> tuple[str, ...]:
    """The shipped profiles' names (each file's name without .yaml), sorted."""
    return tuple(sorted(path.stem for path in folder().glob("*.yaml")))


@dataclass(frozen=True)
class Citation:
    """Where a profile's bound comes from: the page and what it says there."""

    url: str
    says: str

    def __str__(self) -> str:
        return f"{self.url} ({self.says})"


@dataclass(frozen=True)
class Profile:
    """A shipped profile: its name, file, what it describes, the citation of each of its
    keys (by path: 'interconnect.busbw'; one of a map covers its keys) and its sections."""

    name: str
    file: str
    about: str
    sources: tuple[tuple[str, Citation], ...]
    root: MappingNode  # its sections, without `about` and `sources`

    def citation(self, path: str) -> Citation | None:
        """The citation of the key at `path`: its own, else its nearest map's."""
        cited = dict(self.sources)
        parts = path.split(".")
        for end in range(len(parts), 0, -1):
            found = cited.get(".".join(parts[:end]))
            if found is not None:
                return found
        return None

    def cites(self, path: str) -> str:
        """Where the bound at `path` comes from, as the evidence says it: 'profile
        azure-nd-h100-v5: URL (what it says)'."""
        citation = self.citation(path)
        said = f": {citation}" if citation is not None else ""
        return f"profile {self.name}{said}"


def leaves(node: Node, path: str = "") -> list[tuple[str, str]]:
    """Each value of a profile's tree (a map's keys followed down; a list is one value) by
    its path ('interconnect.payloads'), as written ('[16 GiB]')."""
    if isinstance(node, MappingNode):
        return [leaf for key, value in node.value
                for leaf in leaves(value, f"{path}.{scalar(key)}" if path else str(scalar(key)))]
    if isinstance(node, SequenceNode):
        return [(path, "[" + ", ".join(str(item.value) for item in node.value) + "]")]
    return [(path, str(node.value))]


def _text(node: Node, file: str, what: str) -> str:
    value = scalar(node) if isinstance(node, ScalarNode) else None
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{what}: expected text, got {kind(node)}", file=file,
                        line=node.start_mark.line + 1)
    return value.strip()


def _citation(node: Node, file: str, path: str) -> Citation:
    if not isinstance(node, MappingNode):
        raise SpecError(f"sources.{path}: expected a map of url and says, got {kind(node)}",
                        file=file, line=node.start_mark.line + 1)
    given = {str(scalar(k)): v for k, v in node.value}
    if set(given) != {"url", "says"}:
        raise SpecError(f"sources.{path}: expected exactly url and says, got "
                        f"{', '.join(sorted(given))}", file=file, line=node.start_mark.line + 1)
    url = _text(given["url"], file, f"sources.{path}.url")
    if not url.startswith("https://"):
        raise SpecError(f"sources.{path}.url: expected an https:// address, got {url!r}",
                        file=file, line=given["url"].start_mark.line + 1)
    return Citation(url, _text(given["says"], file, f"sources.{path}.says"))


def _marked(node: Node, file: str) -> None:
    """Mark every node of a profile's tree as the profile's (`Ctx.file_of` reads it)."""
    for mark in ("start_mark", "end_mark"):
        old = getattr(node, mark)
        if old is not None:
            setattr(node, mark, Mark(file, old.index, old.line, old.column, "", 0))
    if isinstance(node, MappingNode):
        for key, value in node.value:
            _marked(key, file)
            _marked(value, file)
    elif isinstance(node, SequenceNode):
        for item in node.value:
            _marked(item, file)


@functools.cache
def _read(name: str) -> tuple[str, str]:
    path = folder() / f"{name}.yaml"
    return str(path), path.read_text(encoding="utf-8")


def load(name: str) -> Profile:
    """The shipped profile `name` (one of `names()`), its nodes marked as its own; a
    SpecError naming its file where it is not a profile (our bug)."""
    assert name in names(), name
    file, text = _read(name)
    root = compose(text, file)
    if not isinstance(root, MappingNode):
        raise SpecError("a profile is a map of about, sources and sections", file=file)
    _marked(root, file)
    about, sources, sections = "", {}, []
    for key_node, value_node in root.value:
        key = scalar(key_node)
        if key == ABOUT:
            about = _text(value_node, file, ABOUT)
        elif key == SOURCES:
            if not isinstance(value_node, MappingNode):
                raise SpecError(f"sources: expected a map, got {kind(value_node)}", file=file,
                                line=value_node.start_mark.line + 1)
            sources = {str(scalar(k)): _citation(v, file, str(scalar(k)))
                       for k, v in value_node.value}
        elif key in SECTIONS:
            sections.append((key_node, value_node))
        else:
            raise SpecError(f"{head(str(key), 40)}: a profile has about, sources and the "
                            f"sections {', '.join(SECTIONS)}", file=file,
                            line=key_node.start_mark.line + 1)
    return Profile(name, file, about, tuple(sources.items()),
                   MappingNode(root.tag, sections, root.start_mark, root.end_mark))


def named(raw: object) -> str:
    """A parser of `extends`: the name of a shipped profile (never a path), with a
    did-you-mean and the known names."""
    known = names()
    if isinstance(raw, str) and raw.strip() in known:
        return raw.strip()
    if raw is None:  # `extends: [a, b]` (field adds what it got instead) or `extends:`
        raise ValueError(f"expected a single profile name (a spec extends one profile: "
                         f"{', '.join(known)}), got nothing")
    shown = repr(head(str(raw), 64))
    close = closest(str(raw), known, cutoff=0.5) if isinstance(raw, str) else None
    hint = f"; did you mean {close!r}?" if close else ""
    raise ValueError(f"unknown profile {shown}{hint} (a profile is one of the shipped "
                     f"ones, never a file: {', '.join(known)})")


def merged(base: Node, own: Node) -> Node:
    """The profile's node `base` with the spec's `own` over it: two maps merged key by key
    (the spec's pairs first, as written, then the profile's keys the spec leaves out),
    anything else the spec's. The spec's merge keys (`<<`) stay its own: a key they bring
    in replaces the profile's whole."""
    if not isinstance(base, MappingNode) or not isinstance(own, MappingNode):
        return own
    written = {scalar(key): index for index, (key, _) in enumerate(own.value)
               if isinstance(key, ScalarNode)}
    pairs = list(own.value)
    brought = _merged_in(own)
    for key_node, value_node in base.value:
        key = scalar(key_node)
        if key in written:
            at = written[key]
            pairs[at] = (pairs[at][0], merged(value_node, pairs[at][1]))
        elif key not in brought:
            pairs.append((key_node, value_node))
    return MappingNode(own.tag, pairs, own.start_mark, own.end_mark, flow_style=own.flow_style)


def _merged_in(node: MappingNode) -> set[object]:
    """The keys a map's merge keys (`<<: *base`) bring in."""
    found: set[object] = set()
    for key_node, value_node in node.value:
        if key_node.tag != "tag:yaml.org,2002:merge":
            continue
        sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
        for source in sources:
            if isinstance(source, MappingNode):
                found |= {scalar(k) for k, _ in source.value} | _merged_in(source)
    return found
