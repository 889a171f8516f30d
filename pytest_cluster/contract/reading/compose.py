"""A YAML file read (read_text: a regular file only, to a bound, as UTF-8) and its text to
nodes, bounded: a spec is a small tree of plain data, so composing stops
with a SpecError (file and line) at the first sign of something else, before anything walks
the tree:

- nesting deeper than MAX_DEPTH levels (5000 `[` would exhaust Python's recursion);
- more than MAX_VALUES values, each alias counted as a copy of what it names (anchors for
  reuse are fine; a 'billion laughs' of nested aliases or merge keys stops here, after a
  few thousand events, instead of expanding to gigabytes), and an alias inside what it
  names (a cycle);
- YAML tags (`!!python/...`, `!custom`) and more than one document.

A plain scalar is typed by YAML 1.2's core schema (CORE), not by YAML 1.1's that PyYAML
follows: a number only in decimal, true/false, null; every other one is the text written.
YAML 1.1 read `010` as 8, `1:30` as 90, `0x70` as 112 and `no` as false, so a bound a
failure showed was not the number written; now they reach the fields as written (and a
number's parser refuses them, naming them as written).

libyaml parses when it is installed (fast: a 65536-node list in a tenth of a second); its
syntax errors are read again with PyYAML's own parser, whose messages say more.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import cast

import yaml
from yaml.error import Mark
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    DocumentStartEvent,
    Event,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
    SequenceStartEvent,
)
from yaml.nodes import CollectionNode, MappingNode, Node, ScalarNode, SequenceNode

from pytest_cluster.errors import SpecError

MAX_DEPTH = 64
MAX_VALUES = 100_000
#: Syntax errors in texts up to this size are re-read with PyYAML's parser for its message.
REREAD_LIMIT = 256 * 1024

PLAIN_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in
                       ("str", "int", "float", "bool", "null", "map", "seq", "merge",
                        "timestamp"))
_FAST = getattr(yaml, "CSafeLoader", None)

_TAG = "tag:yaml.org,2002:"
#: YAML 1.2's core schema for plain scalars (yaml.org/spec/1.2.2 10.3.2), each its tag's
#: pattern in ASCII, and merge keys (`<<`). Stricter in one thing: a number has no leading
#: 0, so 010 is the text '010' (YAML 1.1 read 8, YAML 1.2 reads 10). Anything else is a str.
CORE = re.compile(
    r"(?P<null>~|null|Null|NULL|)"
    r"|(?P<bool>true|True|TRUE|false|False|FALSE)"
    r"|(?P<int>[-+]?(?:0|[1-9][0-9]*))"
    r"|(?P<float>[-+]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))"
    r"|(?P<merge><<)")
#: What an explicit tag accepts of the core schema's types (`!!float 1` is 1.0).
_FITS = {"int": ("int",), "float": ("int", "float"), "bool": ("bool",), "null": ("null",)}


def core_type(value: str) -> str:
    """The type YAML 1.2's core schema gives the plain scalar `value`: null, bool, int,
    float, merge or str."""
    match = CORE.fullmatch(value)
    return "str" if match is None or match.lastgroup is None else match.lastgroup


def _fits(tag: str, value: str) -> bool:
    """Whether the explicit tag `tag` (`!!int`) reads `value` as the core schema does:
    `!!int 010` and `!!bool yes` do not; a tag other than int, float, bool or null does."""
    fits = _FITS.get(tag.removeprefix(_TAG))
    return fits is None or core_type(value) in fits


def _mark(mark: object) -> Mark | None:
    """libyaml's marks are not PyYAML's class, but have the same line and column."""
    return cast("Mark | None", mark)


@dataclass
class _Open:
    """A collection being composed."""

    node: CollectionNode
    anchor: str | None
    first: int  # the value count before it
    height: int = 1  # levels of collections, itself included
    key: Node | None = None  # a mapping's key waiting for its value


@dataclass
class _Composer:
    file: str
    stack: list[_Open] = field(default_factory=list)
    anchors: dict[str, Node] = field(default_factory=dict)
    #: what an anchor names, once complete: (values, height)
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    values: int = 0
    root: Node | None = None
    documents: int = 0

    def fail(self, message: str, event: Event) -> SpecError:
        line = event.start_mark.line + 1 if event.start_mark is not None else None
        return SpecError(message, file=self.file, line=line)

    def feed(self, event: Event) -> None:
        if isinstance(event, DocumentStartEvent):
            if self.documents:
                raise self.fail("YAML syntax error: a spec is one document, but found "
                                "another (a second '---')", event)
            self.documents += 1
        elif isinstance(event, AliasEvent):
            self.alias(event)
        elif isinstance(event, NodeEvent):
            self.start(event)
        elif isinstance(event, CollectionEndEvent):
            done = self.stack.pop()
            done.node.end_mark = _mark(event.end_mark)
            if done.anchor is not None:
                self.sizes[done.anchor] = (self.values - done.first, done.height)
            self.attach(done.node, done.height)

    def count(self, values: int, event: Event) -> None:
        self.values += values
        if self.values > MAX_VALUES:
            raise self.fail(f"more than {MAX_VALUES} YAML values (each alias counted as a "
                            "copy of what it names); a spec needs far fewer", event)

    def alias(self, event: AliasEvent) -> None:
        anchor = str(event.anchor)
        if anchor not in self.anchors:
            raise self.fail(f"YAML syntax error: found undefined alias {anchor!r}", event)
        if anchor not in self.sizes:
            raise self.fail(f"YAML alias *{anchor} inside what &{anchor} names: a spec "
                            "cannot refer to itself", event)
        values, height = self.sizes[anchor]
        self.count(values, event)
        if len(self.stack) + height > MAX_DEPTH:
            raise self.fail(f"YAML nested more than {MAX_DEPTH} levels deep (with alias "
                            f"*{anchor} expanded); a spec needs a few", event)
        self.attach(self.anchors[anchor], height)

    def start(self, event: NodeEvent) -> None:
        self.count(1, event)
        anchor = None if event.anchor is None else str(event.anchor)
        if anchor is not None and anchor in self.anchors:
            first = self.anchors[anchor].start_mark.line + 1
            raise self.fail(f"YAML syntax error: anchor &{anchor} is defined twice (first "
                            f"on line {first})", event)
        if isinstance(event, ScalarEvent):
            tag = self.tag(event, ScalarNode, event.value, event.implicit)
            node: Node = ScalarNode(tag, event.value, _mark(event.start_mark),
                                    _mark(event.end_mark), style=event.style)
            if anchor is not None:
                self.anchors[anchor] = node
                self.sizes[anchor] = (1, 0)
            self.attach(node, 0)
            return
        assert isinstance(event, CollectionStartEvent)
        if len(self.stack) >= MAX_DEPTH:
            raise self.fail(f"YAML nested more than {MAX_DEPTH} levels deep; a spec needs "
                            "a few", event)
        collection: CollectionNode
        if isinstance(event, SequenceStartEvent):
            tag = self.tag(event, SequenceNode, None, event.implicit)
            collection = SequenceNode(tag, [], _mark(event.start_mark), None,
                                      flow_style=event.flow_style)
        else:
            assert isinstance(event, MappingStartEvent)
            tag = self.tag(event, MappingNode, None, event.implicit)
            collection = MappingNode(tag, [], _mark(event.start_mark), None,
                                     flow_style=event.flow_style)
        if anchor is not None:
            self.anchors[anchor] = collection
        self.stack.append(_Open(collection, anchor, self.values - 1))

    def tag(self, event: NodeEvent, kind: type[Node], value: str | None,
            implicit: object) -> str:
        """The node's tag: a plain scalar's by the core schema, a quoted one's str; an
        explicit tag of YAML's own (`!!int`) only where the core schema reads the value so
        (`!!int 0x70` is the text '0x70', refused as the plain one is)."""
        tag = getattr(event, "tag", None)
        if tag is None or tag == "!":
            if kind is ScalarNode:
                plain = isinstance(implicit, tuple) and bool(implicit[0])
                tag = _TAG + (core_type(value or "") if plain else "str")
            else:
                tag = _TAG + ("seq" if kind is SequenceNode else "map")
        elif kind is ScalarNode and not _fits(tag, value or ""):
            tag = _TAG + "str"
        if tag not in PLAIN_TAGS:
            raise self.fail(f"YAML tag {tag!r} is not allowed; a spec is plain data", event)
        return str(tag)

    def attach(self, node: Node, height: int) -> None:
        if not self.stack:
            self.root = node
            return
        parent = self.stack[-1]
        parent.height = max(parent.height, height + 1)
        if isinstance(parent.node, SequenceNode):
            parent.node.value.append(node)
        elif parent.key is None:
            parent.key = node
        else:
            parent.node.value.append((parent.key, node))
            parent.key = None


def _events(text: str, fast: bool) -> Iterator[Event]:
    loader = _FAST if fast and _FAST is not None else yaml.SafeLoader
    return yaml.parse(text, Loader=loader)


def _compose(text: str, file: str, fast: bool) -> Node | None:
    composer = _Composer(file)
    for event in _events(text, fast):
        composer.feed(event)
    return composer.root


def _syntax_error(exc: yaml.YAMLError, file: str, text: str) -> SpecError:
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML refuses: its line
        at = text.count("\n", 0, max(0, min(exc.position, len(text)))) + 1
        char = exc.character
        code = char if isinstance(char, int) else ord(char[:1] or "\0")
        return SpecError(f"YAML error: the character U+{code:04X} is not allowed in YAML; "
                         "write it as an escape inside double quotes (\"\\e\" for ESC) or "
                         "leave it out", file=file, line=at)
    if not isinstance(exc, yaml.MarkedYAMLError):
        return SpecError(f"YAML error: {exc}", file=file)
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else None
    problem = exc.problem or exc.context or "invalid YAML"
    hint = ""
    if "chomping or indentation" in problem:
        hint = " (quote values that start with '>' or '<', e.g. cpu_cores: \">= 192\")"
    elif "'['" in problem:
        hint = " (quote hostlists inside [...] lists, e.g. nodes: ['gpu-[001-004]', login01])"
    return SpecError(f"YAML syntax error: {problem}{hint}", file=file, line=line)


def compose(text: str, file: str) -> Node | None:
    """The root node of `text` (None for an empty document); SpecError for anything that
    is not a small tree of plain data."""
    try:
        return _compose(text, file, fast=True)
    except yaml.YAMLError as exc:
        error = _syntax_error(exc, file, text)
        if _FAST is None or len(text) > REREAD_LIMIT:
            raise error from None
    try:
        _compose(text, file, fast=False)
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, file, text) from None
    raise error from None  # only libyaml found it


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"))


def _not_a_file(mode: int) -> str | None:
    """What a file of `mode` is, if it is not a regular file."""
    for test, what in _KINDS:
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) else "not a regular file"


def _read(name: str, limit: int, what: str) -> bytes:
    """The file's bytes: a regular file only (a FIFO, /dev/zero or a directory is refused
    before it is read), and never more than `limit` + 1 of them."""
    kind = _not_a_file(os.stat(name).st_mode)
    if kind is None:
        # O_NONBLOCK: if the path was swapped for a FIFO since, opening does not wait
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            kind = _not_a_file(os.fstat(fd).st_mode)
            if kind is None:
                return handle.read(limit + 1)
    raise SpecError(f"is {kind}, expected a YAML {what} file", file=name)


def read_text(path: str | os.PathLike[str], limit: int, what: str = "spec") -> str:
    """The UTF-8 text of the YAML file at `path` (a spec, or a disable file: `what`), read
    as a regular file only, to `limit` bytes; SpecError naming the file where it cannot."""
    name = str(path)
    try:
        data = _read(name, limit, what)
    except FileNotFoundError:
        raise SpecError("no such file", file=name) from None
    except PermissionError:
        raise SpecError("permission denied", file=name) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SpecError(f"cannot read: {reason}", file=name) from None
    if len(data) > limit:
        size = f"{limit // 2**20} MiB" if limit >= 2**20 else f"{limit // 2**10} KiB"
        raise SpecError(f"is larger than {size}; is this really a {what}?", file=name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"not UTF-8 text (byte {exc.start})", file=name) from None
