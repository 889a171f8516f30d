"""Building blocks of spec validation: a located error collector, a mapping being
validated key by key, and scalar field parsers that record errors instead of raising."""

from __future__ import annotations

import contextlib
import difflib
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import TypeVar

from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from pytest_cluster.contract.clauses import clauses, keys
from pytest_cluster.contract.declaration import Declaration, Value
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import Clause, ClusterSpec, Rule
from pytest_cluster.contract.requirement import Requirement, parse_requirement
from pytest_cluster.errors import SpecError, UnitError, head
from pytest_cluster.units import (
    MAX_DIGITS,
    UNITS,
    Dim,
    Quantity,
    format_value,
    misspelled,
    parse_bytes,
    parse_quantity,
    significant_digits,
)

#: Keys echoed in "unknown key" messages; others (a password file's lines, tokens) are not.
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")

T = TypeVar("T")


#: Errors kept with their text; later ones are counted (a SpecError shows 20 anyway).
MAX_KEPT = 200


class Ctx:
    """Collects errors, and warnings (likely slips that do not stop the run), with their
    location while validation goes on."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.errors: list[SpecError] = []  # the first MAX_KEPT
        self.where: list[tuple[int, int]] = []  # each kept error's line and column
        self.count = 0  # of all errors
        self.warnings: list[SpecError] = []  # located and rendered like errors
        self.paths: set[str] = set()  # of all errors

    @property
    def full(self) -> bool:
        """Whether errors are only counted now: skip costly hints (did-you-mean)."""
        return self.count >= MAX_KEPT

    def error(self, node: Node | None, path: str, message: str) -> None:
        self.count += 1
        self.paths.add(path)
        if len(self.errors) < MAX_KEPT:
            line = node.start_mark.line + 1 if node is not None else None
            self.errors.append(SpecError(as_written(node, message), file=self.file,
                                         line=line, path=path))
            self.where.append((line or 0, node.start_mark.column if node is not None else 0))

    def in_order(self) -> list[SpecError]:
        """The kept errors as they stand in the file (line, then column), whatever order
        the sections were validated in."""
        order = sorted(range(len(self.errors)), key=self.where.__getitem__)
        return [self.errors[index] for index in order]

    def failed(self, path: str) -> bool:
        """Whether an error was recorded at `path` (one set lookup, however many errors)."""
        return path in self.paths

    def warn(self, line: int, path: str, message: str) -> None:
        self.warnings.append(SpecError(message, file=self.file, line=line, path=path))


#: The most characters of a value an error echoes; a longer one is cut, saying so.
MAX_ECHO = 100


def as_written(node: Node | None, message: str) -> str:
    """`message` about the value YAML read at `node` with that value as the spec wrote it:
    'got 1000.0' is 'got 1e3' (the parsers echo the value they were given, which is YAML's
    reading of a number), and a value of more than MAX_ECHO characters echoed cut, saying
    so where it is cut (a 4,000-digit number was a 1,000-character line of digits, cut in
    its middle)."""
    if not isinstance(node, ScalarNode):
        return message
    read = repr(scalar(node))
    shown = head(str(node.value), MAX_ECHO) if node.tag in NUMBER_TAGS else \
        repr(head(node.value, MAX_ECHO)) if isinstance(node.value, str) else read
    if read == shown:
        return message
    # found as text, not by a pattern made of it: a 1 MB value made a 1 MB pattern (3.4 s)
    needle = f"got {read}"
    at = message.find(needle)
    while at >= 0:
        end = at + len(needle)
        if not _word(message[at - 1:at]) and not (_word(message[end:end + 1])
                                                  or message[end:end + 1] in (".", "+", "-")):
            return f"{message[:at]}got {shown}{message[end:]}"
        at = message.find(needle, at + 1)
    return message


def _word(char: str) -> bool:
    """Whether `char` (one character, or none) is part of a word, as the regex \\w."""
    return char.isalnum() or char == "_"


def closest(word: str, choices: Sequence[str], cutoff: float) -> str | None:
    """The choice most like `word`, ignoring case (GPUs -> gpus), for a did-you-mean."""
    if len(word) > 64:  # no name is that long
        return None
    lowered = {choice.lower(): choice for choice in choices}
    folded = unicodedata.normalize("NFKC", word).translate(_LOOKALIKES).lower()
    match = difflib.get_close_matches(folded, list(lowered), n=1, cutoff=cutoff)
    return lowered[match[0]] if match else None


#: Letters of other scripts that look like Latin ones (Cyrillic, Greek), as they look.
_LOOKALIKES = str.maketrans(
    "аеорсухіјѕԁһӏкмнтвгпьАВЕКМНОРСТХІЈЅαεικνορτυχΑΒΕΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdhlkmhtbrnbABEKMHOPCTXIJSaeiknoptuxABEHIKMNOPTYX")


def lookalike(key: str, known: Sequence[str]) -> str | None:
    """The known key a name written with other scripts' letters stands for: the same once
    lookalike letters are read as Latin ('host' written with a Cyrillic o), or the only
    known key of its length whose every plain letter matches ('sla' written with a
    Cyrillic el)."""
    if len(key) > 64:
        return None
    folded = unicodedata.normalize("NFKC", key).translate(_LOOKALIKES)
    if folded in known:
        return folded
    plain = [i for i, c in enumerate(key) if c.isascii()]
    if len(plain) < max(2, len(key) - 2):
        return None
    fits = [k for k in known if len(k) == len(key) and all(k[i] == key[i] for i in plain)]
    return fits[0] if len(fits) == 1 else None


def foreign_letters(key: str) -> str:
    """The letters of `key` that are not plain ASCII, named: 'U+043B CYRILLIC SMALL
    LETTER EL at position 2'."""
    found = [f"U+{ord(c):04X} {unicodedata.name(c, 'UNNAMED')} at position {i + 1}"
             for i, c in enumerate(key) if not c.isascii()]
    return ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")


def written_with(value: str) -> str:
    """' (written with U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I at position
    2)' for a value with letters that are not plain ASCII (a name pasted from a document,
    that looks right and is not), else ''."""
    return f" (written with {foreign_letters(value)})" if not value.isascii() else ""


def respelled(quantity: Quantity, unit: str) -> Quantity | None:
    """The number as written, in another unit: 400 GB/s -> 400 Gb/s (None if `unit` is not
    a unit of the same kind)."""
    if UNITS.get(unit, (None, 0.0))[0] is not quantity.dim or quantity.unit not in UNITS:
        return None
    number = quantity.value / UNITS[quantity.unit][1]
    return Quantity(number * UNITS[unit][1], quantity.dim, unit)


def kind(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a map"
    if isinstance(node, SequenceNode):
        return "a list"
    if node.tag.endswith(":null"):
        return "nothing"
    return repr(scalar(node))


def scalar(node: Node) -> object:
    """A scalar's value as YAML reads it; but a number with more significant digits than
    a double holds (units.MAX_DIGITS) stays the text written, which a number's parser
    refuses saying so (111.99999999999999999 was read as 112.0)."""
    if node.tag == "tag:yaml.org,2002:float" and significant_digits(str(node.value)) \
            > MAX_DIGITS:
        return str(node.value)
    try:
        return SafeConstructor().construct_object(node, deep=True)
    except (ConstructorError, ValueError, OverflowError):
        return node.value


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


#: The tags of the scalars YAML reads as numbers.
NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def written(node: Node) -> object:
    """A scalar as its text where YAML would read a number (a version written unquoted:
    `torch: 2.10` is the text '2.10', where the float would be 2.1); else as `scalar`."""
    if node.tag in NUMBER_TAGS:
        return str(node.value)
    return scalar(node)


def field(ctx: Ctx, node: Node | None, path: str, parse: Callable[[object], T],
          read: Callable[[Node], object] | None = None) -> T | None:
    """Parse a scalar field (read by `read`, else `scalar`); on failure record the error
    and return None."""
    if node is None:
        return None
    if not isinstance(node, ScalarNode):
        try:
            parse(None)
        except (UnitError, ValueError) as exc:
            message = str(exc).rsplit(", got", 1)[0]
            ctx.error(node, path, f"{message}, got {kind(node)}")
            return None
        ctx.error(node, path, f"expected a single value, got {kind(node)}")
        return None
    try:
        return parse((read or scalar)(node))
    except (UnitError, ValueError) as exc:
        if read is None and node.tag in NUMBER_TAGS:  # a field of text: as written
            with contextlib.suppress(UnitError, ValueError):
                return parse(str(node.value))  # `name: 1.10` is '1.10', never 1.1
        ctx.error(node, path, str(exc))
        return None


def one_of(choices: Sequence[str], expected: str) -> Callable[[object], str]:
    """A parser of one name from `choices` (allowlisted, as written); `expected` says
    them in words for the error."""
    def parse(raw: object) -> str:
        if not isinstance(raw, str) or raw not in choices:
            shown = repr(raw) if len(repr(raw)) <= 80 else repr(head(str(raw), 64))
            raise UnitError(f"expected {expected}, got {shown}")
        return raw
    return parse


def text(what: str) -> Callable[[object], str]:
    def parse(raw: object) -> str:
        if not isinstance(raw, str) or not raw.strip():
            raise UnitError(f"expected {what}, got {raw!r}")
        return raw.strip()
    return parse


def shown_name(what: str, most: int) -> Callable[[object], str]:
    """A parser of a name the run shows as written (the terminal, the reports, JUnit, the
    run's directory): at most `most` characters, each printable (no ESC that a terminal
    acts on, no newline, no bidi override: str.isprintable), as a node name is refused
    unless it is a host name; `what` says it in words for the error."""
    def parse(raw: object) -> str:
        name = text(what)(raw)
        if len(name) > most:
            raise UnitError(f"expected {what} of at most {most} characters, got "
                            f"{head(name, 40)!r}")
        unprintable = [f"U+{ord(c):04X} at position {i + 1}" for i, c in enumerate(name)
                       if not c.isprintable()]
        if unprintable:
            more = f" and {len(unprintable) - 3} more" if len(unprintable) > 3 else ""
            raise UnitError(f"expected {what} of printable characters, got {head(name, 64)!r}"
                            f" (not printable: {', '.join(unprintable[:3])}{more})")
        return name
    return parse


INTERPRETER_RE = re.compile(r"^[A-Za-z0-9_./+][A-Za-z0-9_./+-]*$")


def interpreter(raw: object) -> str:
    """A path or command name for python: no spaces, quotes or options."""
    if not isinstance(raw, str) or not INTERPRETER_RE.match(raw.strip()):
        raise UnitError(f"expected an interpreter path like /shared/venv/bin/python, got {raw!r}")
    return raw.strip()


def time_between(low: float, high: float, shown: str) -> Callable[[object], float]:
    """A parser of times from `low` to `high` seconds; `shown` says the range in words."""
    def parse(raw: object) -> float:
        value = parse_quantity(raw, Dim.TIME).value
        if not low <= value <= high:
            raise UnitError(f"expected a time {shown}, got {raw!r}")
        return value
    return parse


def size_between(low: float, high: float, shown: str) -> Callable[[object], int]:
    """A parser of sizes from `low` to `high` bytes; `shown` says the range in words."""
    def parse(raw: object) -> int:
        value = parse_bytes(raw)
        if not low <= value <= high:
            raise UnitError(f"expected a size {shown}, got {raw!r}")
        return value
    return parse


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


def boolean(raw: object) -> bool:
    if not isinstance(raw, bool):
        raise UnitError(f"expected true or false, got {raw!r}")
    return raw


def positive_int(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        hint = misspelled(raw) if isinstance(raw, str) else ""
        raise UnitError(f"expected a whole number >= 1, got {raw!r}{hint}")
    return raw


def whole(low: int, high: int) -> Callable[[object], int]:
    """A parser of whole numbers from `low` to `high` (a count that sizes real work)."""
    def parse(raw: object) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int) or not low <= raw <= high:
            hint = misspelled(raw) if isinstance(raw, str) else ""
            raise UnitError(f"expected a whole number from {low} to {high}, got {raw!r}{hint}")
        return raw
    return parse


def or_default(value: T | None, default: T) -> T:
    """`value`, or `default` when the key is absent (or invalid, already reported): unlike
    `value or default`, a 0 or '' that passed its parser stays what was written."""
    return default if value is None else value


#: The fastest NIC there is, in bytes/s (1.6 Tb/s); a link rate above it is likely bytes
#: written for bits (400 GB/s for 400 Gb/s).
MAX_NIC_RATE = 200e9


def slips(ctx: Ctx, line: int, path: str, declaration: Declaration,
          quantity: Quantity) -> None:
    """Warn of what the declaration says is a likely slip in a value written as it declares:
    a NIC's or link's rate (`link`) faster than any NIC, likely bytes written for bits.
    Every parse of a declared quantity comes here (`clause`, `as_declared`)."""
    if not declaration.link or quantity.dim is not Dim.RATE or quantity.value <= MAX_NIC_RATE:
        return
    bits = quantity.unit.replace("i", "").replace("B", "b")
    meant = respelled(quantity, bits) if bits != quantity.unit else None
    hint = f"; did you mean {meant}?" if meant is not None else ""
    ctx.warn(line, path, f"{quantity} is {format_value(quantity.value, Dim.RATE, 'Tb/s')} "
             f"per NIC, faster than any NIC ({format_value(MAX_NIC_RATE, Dim.RATE, 'Tb/s')} "
             f"at most){hint}")


def as_declared(ctx: Ctx, node: Node | None, path: str,
                declaration: Declaration) -> Quantity | None:
    """A quantity (no comparison) written at `path` as `declaration` says: of its dim, with
    the slips it warns of; None if absent or wrong (said)."""
    dim = declaration.dim
    assert dim is not None, declaration.id
    quantity = field(ctx, node, path, lambda raw: parse_quantity(raw, dim))
    if quantity is not None and node is not None:
        slips(ctx, node.start_mark.line + 1, path, declaration, quantity)
    return quantity


def clause(ctx: Ctx, table: Map, declaration: Declaration, where: str | None = None,
           member: str | None = None) -> Clause | None:
    """A clause written as `declaration` says (a comparison and a quantity of its dim), named
    as its instance (`where`: the filesystem; `member`: e.g. the dtype); None if absent."""
    key = member or declaration.key
    node = table.take(key)
    dim, op = declaration.dim, declaration.op
    assert dim is not None, declaration.id
    req: Requirement | None = field(ctx, node, table.sub(key),
                                     lambda raw: parse_requirement(raw, dim, op))
    if req is None or node is None:
        return None
    slips(ctx, node.start_mark.line + 1, table.sub(key), declaration, req.bound)
    return Clause(declaration.name(where, member), node.start_mark.line + 1, req)


def default(declaration: Declaration, where: str | None = None) -> Clause | None:
    """What a declared clause requires when the spec leaves it out (None: nothing)."""
    if declaration.default is None or declaration.dim is None:
        return None
    return Clause(declaration.name(where), 0,
                  parse_requirement(declaration.default, declaration.dim, declaration.op))


def share_or(ctx: Ctx, table: Map, key: str, name: str, dim: Dim,
             expected: str) -> Clause | None:
    """A clause written as a share ('>= 95%', 0.95) or as a quantity of `dim`; `expected`
    says both in words for the error ("a share of total like '95%' or a size like ...")."""
    node = table.take(name)
    if node is None:
        return None

    def parse(raw: object) -> Clause:
        if (isinstance(raw, str) and raw.rstrip().endswith("%")) or isinstance(raw, float):
            req = parse_requirement(raw, Dim.FRACTION)
        else:
            try:
                req = parse_requirement(raw, dim)
            except UnitError:
                raise UnitError(f"expected {expected}, got {raw!r}") from None
        return Clause(f"{key}.{name}", node.start_mark.line + 1, req)

    return field(ctx, node, table.sub(name), parse)


def rule(ctx: Ctx, table: Map, declaration: Declaration) -> Rule | None:
    """A health rule: on (its line 0) unless the spec says false; the words that keep it
    on are the declaration's."""
    node = table.take(declaration.key)
    if node is None:
        return Rule(declaration.id, 0, declaration.text)
    words = declaration.on

    def parse(raw: object) -> bool:
        if raw is False:
            return False
        if raw in words:
            return True
        shown = " or ".join(repr(w) if isinstance(w, str) else "true" for w in words)
        raise UnitError(f"expected {shown} (the default), or false to leave it out, got {raw!r}")

    on = field(ctx, node, declaration.id, parse)
    return Rule(declaration.id, node.start_mark.line + 1, declaration.text) if on else None


def flag(ctx: Ctx, table: Map, declaration: Declaration,
         where: str | None = None) -> tuple[bool | None, Rule | None]:
    """A promise switched by true or false: the value (None if absent) and, when true, the
    rule it promises."""
    node = table.take(declaration.key)
    on = field(ctx, node, table.sub(declaration.key), boolean)
    if not on or node is None:
        return on, None
    return on, Rule(declaration.name(where), node.start_mark.line + 1, declaration.text)


def promises(ctx: Ctx, table: Map, section: str, where: str | None = None,
             skip: tuple[str, ...] = ()) -> tuple[Clause | Rule, ...]:
    """The section's clauses that are quantities, shares or rules, parsed as declared (a
    default where the spec leaves one out); the others (`skip`, versions, flags, members)
    are the section parser's."""
    found: list[Clause | Rule | None] = []
    for declaration in clauses(section):
        if declaration.key in skip or declaration.within:  # a map's: its parser's
            continue
        if declaration.value is Value.QUANTITY:
            found.append(clause(ctx, table, declaration, where)
                         or default(declaration, where))
        elif declaration.value is Value.SHARE:
            assert declaration.dim is not None
            prefix = section if where is None else f"{section}[{where}]"
            found.append(share_or(ctx, table, prefix, declaration.key, declaration.dim,
                                  declaration.expected))
        elif declaration.value is Value.RULE:
            found.append(rule(ctx, table, declaration))
    return tuple(item for item in found if item is not None)
