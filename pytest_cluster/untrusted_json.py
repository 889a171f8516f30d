"""JSON from the other side (a baseline someone handed us): read within a size, parsed
strictly, and checked against a declared shape.

- `read_bounded`: a file's bytes, refused by its size before more than the limit is read;
- `parse`: UTF-8 only; no NaN, Infinity or number beyond a float; no key twice in one
  object; nesting deeper than Python's JSON reader can follow is refused, not a crash;
- a shape (`Text`, `Number`, `Integer`, `Scalar`, `Null`, `Record`, `ListOf`, `MapOf`,
  `Either`) takes a parsed value and gives back only what it declares, or raises
  InputError naming the field as a JSON path (`nodes.gpu-001.gpus[3].serial`), what was
  expected and what was found, a value cut to SHOWN characters and made printable.

Every message is one line: the caller prefixes the file's name.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_cluster.errors import InputError, clip
from pytest_cluster.units import format_size

SHOWN = 60  # characters of a value echoed in a message
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SURROGATE = re.compile("[\ud800-\udfff]")


def cut(text: str, limit: int = SHOWN) -> str:
    """`text` quoted and printable (escaped as Python writes a string), its first `limit`
    characters and '…' where it was longer."""
    return repr(text[:limit] + ("…" if len(text) > limit else ""))


def found(value: Any) -> str:
    """What a value is, in a few words: 'a string of 31457280 characters, 'ab…'', 'a list
    of 3 items', 'null'."""
    if isinstance(value, str):
        return (f"a string of {len(value)} characters, {cut(value)}" if len(value) > SHOWN
                else cut(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return f"a mapping of {len(value)} key(s)"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    text = repr(value)
    return text[:SHOWN] + ("…" if len(text) > SHOWN else "")


def json_path(steps: list[str | int]) -> str:
    """'nodes.gpu-001.gpus[3].serial'; a key of other characters as nodes['a.b']."""
    text = ""
    for step in steps:
        if isinstance(step, int):
            text += f"[{step}]"
        elif _PLAIN_KEY.fullmatch(step) and len(step) <= SHOWN:
            text += f".{step}" if text else step
        else:
            text += f"[{cut(step)}]"
    return text or "the document"


class _Mismatch(Exception):
    """A value that is not of its shape; `steps` grow as it passes up through containers."""

    def __init__(self, expected: str, value: Any) -> None:
        super().__init__(expected)
        self.expected = expected
        self.value = value
        self.steps: list[str | int] = []

    def render(self) -> str:
        return f"{json_path(self.steps)}: expected {self.expected}, found {found(self.value)}"


class Shape:
    """A declared shape of a JSON value."""

    @property
    def expected(self) -> str:
        raise NotImplementedError

    def claims(self, value: Any) -> bool:
        """Whether `value` is of this shape's kind (Either picks the first that is)."""
        raise NotImplementedError

    def take(self, value: Any) -> Any:
        """`value` checked, with only what the shape declares; _Mismatch where not."""
        if not self.claims(value):
            raise _Mismatch(self.expected, value)
        return value


def _number(value: Any) -> bool:
    """An int or float a float can hold (an integer of 400 digits is none)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        abs(value) <= sys.float_info.max


def check(shape: Shape, value: Any) -> Any:
    """`value` as `shape` takes it; InputError 'PATH: expected ..., found ...'."""
    try:
        return shape.take(value)
    except _Mismatch as exc:
        raise InputError(exc.render()) from None


@dataclass(frozen=True)
class Text(Shape):
    max_chars: int

    @property
    def expected(self) -> str:
        return f"a string of at most {self.max_chars} characters"

    def claims(self, value: Any) -> bool:
        return isinstance(value, str)

    def take(self, value: Any) -> Any:
        if not isinstance(value, str) or len(value) > self.max_chars:
            raise _Mismatch(self.expected, value)
        if _SURROGATE.search(value):
            raise _Mismatch(f"{self.expected} of Unicode text (no lone surrogate)", value)
        return value


@dataclass(frozen=True)
class Number(Shape):
    """A number, from `low` to `high` where they are given (`what` says what it is)."""

    low: float | None = None
    high: float | None = None
    what: str = ""

    @property
    def expected(self) -> str:
        bounds = (f" from {self.low:g} to {self.high:g}" if self.low is not None and
                  self.high is not None else "")
        return f"a number{bounds}{f' ({self.what})' if self.what else ''}"

    def claims(self, value: Any) -> bool:
        return _number(value)

    def take(self, value: Any) -> Any:
        if not _number(value) or (self.low is not None and value < self.low) or (
                self.high is not None and value > self.high):
            raise _Mismatch(self.expected, value)
        return value


@dataclass(frozen=True)
class Integer(Shape):
    @property
    def expected(self) -> str:
        return "a whole number"

    def claims(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and \
            abs(value) < 2**63


@dataclass(frozen=True)
class Null(Shape):
    @property
    def expected(self) -> str:
        return "null"

    def claims(self, value: Any) -> bool:
        return value is None


@dataclass(frozen=True)
class Scalar(Shape):
    """A string (of at most `max_chars`), a number, true, false or null."""

    max_chars: int

    @property
    def expected(self) -> str:
        return f"a string of at most {self.max_chars} characters, a number, true, false or null"

    def claims(self, value: Any) -> bool:
        return value is None or isinstance(value, (str, bool)) or _number(value)

    def take(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return Text(self.max_chars).take(value)
            except _Mismatch:
                raise _Mismatch(self.expected, value) from None
        return super().take(value)


@dataclass(frozen=True)
class Record(Shape):
    """A mapping: the `fields` it declares are checked where present (`required` ones
    must be) and kept; other keys are left out."""

    fields: Mapping[str, Shape]
    what: str = "a mapping"
    required: tuple[str, ...] = ()

    @property
    def expected(self) -> str:
        return self.what

    def claims(self, value: Any) -> bool:
        return isinstance(value, dict) and all(key in value for key in self.required)

    def take(self, value: Any) -> Any:
        if not isinstance(value, dict):
            raise _Mismatch(self.expected, value)
        for key in self.required:
            if key not in value:
                raise _Mismatch(f"{self.what} with the key {key!r}", value)
        kept = {}
        for key, shape in self.fields.items():
            if key in value:
                try:
                    kept[key] = shape.take(value[key])
                except _Mismatch as exc:
                    exc.steps.insert(0, key)
                    raise
        return kept


@dataclass(frozen=True)
class ListOf(Shape):
    item: Shape
    what: str = "a list"

    @property
    def expected(self) -> str:
        return self.what

    def claims(self, value: Any) -> bool:
        return isinstance(value, list)

    def take(self, value: Any) -> Any:
        if not isinstance(value, list):
            raise _Mismatch(self.expected, value)
        kept = []
        for index, item in enumerate(value):
            try:
                kept.append(self.item.take(item))
            except _Mismatch as exc:
                exc.steps.insert(0, index)
                raise
        return kept


@dataclass(frozen=True)
class MapOf(Shape):
    """A mapping of any keys (each at most `key_chars` long), at most `max_items` of them,
    to values of one shape."""

    value: Shape
    key_chars: int
    max_items: int
    what: str = "a mapping"

    @property
    def expected(self) -> str:
        return self.what

    def claims(self, value: Any) -> bool:
        return isinstance(value, dict)

    def take(self, value: Any) -> Any:
        if not isinstance(value, dict):
            raise _Mismatch(self.expected, value)
        if len(value) > self.max_items:
            raise _Mismatch(f"{self.what} of at most {self.max_items} entries", value)
        kept = {}
        for key, item in value.items():
            if len(key) > self.key_chars or _SURROGATE.search(key):
                raise _Mismatch(f"keys of at most {self.key_chars} characters of Unicode "
                                "text", key)
            try:
                kept[key] = self.value.take(item)
            except _Mismatch as exc:
                exc.steps.insert(0, key)
                raise
        return kept


class Either(Shape):
    """The first of `options` whose kind the value is of decides; a mismatch of the value
    itself names every option."""

    def __init__(self, *options: Shape) -> None:
        self.options = options

    @property
    def expected(self) -> str:
        return " or ".join(option.expected for option in self.options)

    def claims(self, value: Any) -> bool:
        return any(option.claims(value) for option in self.options)

    def take(self, value: Any) -> Any:
        for option in self.options:
            if option.claims(value):
                try:
                    return option.take(value)
                except _Mismatch as exc:
                    if exc.steps:  # deeper inside: that field says more
                        raise
                    raise _Mismatch(self.expected, exc.value) from None
        raise _Mismatch(self.expected, value)


# -- reading and parsing -----------------------------------------------------------------

def too_big(name: str, size: int, limit: int, what: str) -> InputError:
    return InputError(f"{name}: {size} bytes, more than the {format_size(limit)} {what} may "
                      "have")


def read_bounded(path: Path, limit: int, what: str) -> bytes:
    """The bytes of `path`; InputError, before more than `limit` bytes are read, where
    it holds more."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise too_big(path.name, size, limit, what)
            data = handle.read(limit + 1)
    except OSError as exc:
        raise InputError(f"{path.name}: cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise too_big(path.name, len(data), limit, what)
    return data


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InputError(f"the number {cut(text)} is beyond a float (expected a finite "
                         "number)")
    return value


def _no_constant(text: str) -> Any:
    raise InputError(f"{text} (expected a finite number: JSON has no NaN or Infinity)")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    made = dict(pairs)
    if len(made) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise InputError(f"the key {cut(key)} twice in one object (expected each "
                                 "key once)")
            seen.add(key)
    return made


def parse(data: bytes, where: str) -> Any:
    """`data` as strict JSON; InputError 'WHERE: what is wrong (what was expected)'."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: byte {exc.start} is not UTF-8 (expected JSON text in "
                         "UTF-8)") from None
    try:
        return json.loads(text, parse_float=_finite, parse_constant=_no_constant,
                          object_pairs_hook=_unique)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    except RecursionError:
        raise InputError(f"{where}: nested too deeply to be read (expected the few levels "
                         "of [ and { that pytest-cluster writes)") from None
    except json.JSONDecodeError as exc:
        at = f"column {exc.colno}" if exc.lineno == 1 else f"line {exc.lineno} column " \
            f"{exc.colno}"
        raise InputError(f"{where}: not JSON at {at}: {exc.msg}") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise InputError(f"{where}: not JSON pytest-cluster writes: "
                         f"{clip(str(exc), 200)}") from None
