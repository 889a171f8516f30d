"""Our own records read back from the JSON their `asdict` wrote (a measurement's document
kept in the run's cache, measure/cache.py): `record_of(Kind, document)` reads each field as
its declared type says, so a record's `from_json` is one line and no field is read as Any.
At the bottom of the package (it imports nothing of ours): the contract's records (busbw's
CollectiveRun) are read back through it as the measurements' are.

Only for documents this run wrote itself: a node's answer is untrusted, and is checked by
its reader before it is typed (ProbeResult.payload_as)."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import TypeVar, cast

R = TypeVar("R")


def record_of(kind: type[R], document: object) -> R:
    """The record `kind` (a frozen dataclass) from the document its `asdict` wrote (a
    document of ours, read back from the cache): each field read as its declared type
    says (lists as the tuples they were, records inside as their records, an int where a
    float is declared as the float, the rest as JSON has it); a field the document lacks
    keeps its default. ValueError where a record is not a JSON object."""
    return cast("R", _as(kind, document))


@functools.cache
def _hints(kind: type) -> dict[str, object]:
    return typing.get_type_hints(kind)


def _as(hint: object, value: object) -> object:
    """`value` (JSON) read as the type `hint` declares (record_of)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, dict):
            raise ValueError(f"{hint.__name__}: not a JSON object")
        hints = _hints(hint)
        return hint(**{f.name: _as(hints[f.name], value[f.name])
                       for f in dataclasses.fields(hint) if f.name in value})
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        kinds = [a for a in args if a is not type(None)]
        return _as(kinds[0], value) if len(kinds) == 1 else value
    if origin is tuple and isinstance(value, (list, tuple)):  # read back, or as asdict made it
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_as(args[0], item) for item in value)
        return tuple(_as(a, item) for a, item in zip(args, value, strict=True))
    if origin is dict and isinstance(value, dict):
        return {key: _as(args[1], item) for key, item in value.items()}
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value
