"""Scalar fields of the spec parsed without raising: `field` records a parser's error at
the value's place (located_errors.Ctx) and gives None; the parsers of names, times,
sizes, counts, switches and interpreter paths it is given."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from yaml.nodes import Node, ScalarNode

from pytest_cluster.contract.reading.yaml_nodes import NUMBER_TAGS, kind, scalar
from pytest_cluster.errors import UnitError, head
from pytest_cluster.units import Dim, misspelled, parse_bytes, parse_quantity

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.located_errors import Ctx

T = TypeVar("T")


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
