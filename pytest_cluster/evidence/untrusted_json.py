"""JSON from the other side (a baseline someone handed us): read within a size, parsed
strictly, and checked against a declared shape.

- `read_bounded`: a file's bytes, refused by its size before more than the limit is read;
- `parse`: UTF-8 only; no NaN, Infinity or number beyond a float; no key twice in one
  object; nesting deeper than Python's JSON reader can follow is refused, not a crash;
- a shape is a JSON Schema (Draft 2020-12, built by `text`, `number`, `integer`,
  `scalar`, `null`, `record`, `list_of`, `map_of`, `either`) checked by the jsonschema
  library; `check` gives back only what it declares, or raises InputError naming the
  field as a JSON path (`nodes.gpu-001.gpus[3].serial`), what was expected and what was
  found, a value cut to SHOWN characters and made printable.

Every message is one line: the caller prefixes the file's name.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, ValidationError

from pytest_cluster.errors import InputError, clip
from pytest_cluster.evidence.regular_file import open_regular
from pytest_cluster.units import format_size

SHOWN = 60  # characters of a value echoed in a message
_NO_SURROGATE = "^[^\ud800-\udfff]*$"  # a string that is Unicode text
_FLOAT = sys.float_info.max  # a number beyond a float (an integer of 400 digits) is none
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


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


# -- shapes: JSON Schema (Draft 2020-12), checked by the jsonschema library --------------
#
# Each schema node carries a "description" that says, in words, what is expected there; a
# mismatch is reported with it. Only the properties a schema declares are kept (project).

Schema = dict[str, Any]


def text(max_chars: int) -> Schema:
    return {"type": "string", "maxLength": max_chars, "pattern": _NO_SURROGATE,
            "description": f"a string of at most {max_chars} characters"}


def number(low: float | None = None, high: float | None = None, what: str = "") -> Schema:
    bounds = f" from {low:g} to {high:g}" if low is not None and high is not None else ""
    return {"type": "number", "minimum": -_FLOAT if low is None else low,
            "maximum": _FLOAT if high is None else high,
            "description": f"a number{bounds}{f' ({what})' if what else ''}"}


def integer() -> Schema:
    return {"type": "integer", "minimum": -(2**63) + 1, "maximum": 2**63 - 1,
            "description": "a whole number"}


def null() -> Schema:
    return {"type": "null", "description": "null"}


def scalar(max_chars: int) -> Schema:
    """A string (of at most `max_chars`), a number, true, false or null."""
    return {"type": ["string", "number", "boolean", "null"], "maxLength": max_chars,
            "pattern": _NO_SURROGATE, "minimum": -_FLOAT, "maximum": _FLOAT,
            "description": f"a string of at most {max_chars} characters, a number, true, "
                           "false or null"}


def record(fields: dict[str, Schema], what: str = "a mapping",
           required: tuple[str, ...] = ()) -> Schema:
    """A mapping: the `fields` it declares are checked where present (`required` ones must
    be) and kept; other keys are left out."""
    return {"type": "object", "properties": fields, "required": list(required),
            "description": what}


def list_of(item: Schema, what: str = "a list") -> Schema:
    return {"type": "array", "items": item, "description": what}


def map_of(value: Schema, key_chars: int, max_items: int, what: str = "a mapping") -> Schema:
    """A mapping of any keys (each at most `key_chars` long), at most `max_items` of them,
    to values of one shape."""
    return {"type": "object", "additionalProperties": value, "maxProperties": max_items,
            "propertyNames": {"maxLength": key_chars, "pattern": _NO_SURROGATE,
                              "description": f"keys of at most {key_chars} characters of "
                                             "Unicode text"},
            "description": what}


def optional(schema: Schema) -> Schema:
    """A leaf (`text`, `integer`, `number`) or null: one type list, no anyOf to try."""
    return {**schema, "type": [schema["type"], "null"],
            "description": f"{schema['description']} or null"}


def either(*options: Schema) -> Schema:
    """Any of `options`; a mismatch of the value itself names every option."""
    return {"anyOf": list(options),
            "description": " or ".join(str(o["description"]) for o in options)}


_VALIDATORS: dict[int, Draft202012Validator] = {}


def _validator(schema: Schema) -> Draft202012Validator:
    found = _VALIDATORS.get(id(schema))
    if found is None or found.schema is not schema:
        found = _VALIDATORS[id(schema)] = Draft202012Validator(schema)
    return found


def _deepest(error: ValidationError) -> ValidationError:
    """Where an anyOf failed inside the option the value is of (a list of GPUs one of
    which is wrong), that deeper error says more; otherwise the error itself."""
    if error.validator != "anyOf":
        return error
    deeper = [e for e in error.context or () if e.relative_path]
    if not deeper:
        return error
    return _deepest(max(deeper, key=lambda e: len(e.relative_path)))


def _expected(error: ValidationError) -> str:
    schema = error.schema if isinstance(error.schema, dict) else {}
    what = str(schema.get("description", "a value of its declared shape"))
    keyword = error.validator
    if keyword == "required":
        wanted, instance = error.validator_value, error.instance
        missing = next((k for k in wanted if k not in instance), "?") \
            if isinstance(wanted, list) and isinstance(instance, dict) else "?"
        return f"{what} with the key {missing!r}"
    if keyword == "maxProperties":
        return f"{what} of at most {error.validator_value} entries"
    if keyword == "pattern":
        return f"{what} of Unicode text (no lone surrogate)"
    return what


def check(schema: Schema, value: Any) -> Any:
    """`value` checked against `schema`, with only what it declares; InputError 'PATH:
    expected ..., found ...' (the first mismatch, where the value goes wrong deepest)."""
    validator = _validator(schema)
    error = next(validator.iter_errors(value), None)
    if error is not None:
        error = _deepest(error)
        raise InputError(f"{json_path(list(error.absolute_path))}: expected "
                         f"{_expected(error)}, found {found(error.instance)}")
    return project(schema, value)


def project(schema: Schema, value: Any) -> Any:
    """A valid `value` with only the properties `schema` declares, all the way down."""
    if not isinstance(value, (dict, list)):
        return value
    if "anyOf" in schema:
        option = next(o for o in schema["anyOf"] if _validator(o).is_valid(value))
        return project(option, value)
    if isinstance(value, dict):
        if "properties" in schema:
            return {k: project(s, value[k]) for k, s in schema["properties"].items()
                    if k in value}
        inner = schema.get("additionalProperties")
        return {k: project(inner, v) for k, v in value.items()} if isinstance(inner, dict) \
            else value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [project(schema["items"], item) for item in value]
    return value


# -- reading and parsing -----------------------------------------------------------------

def too_big(name: str, size: int, limit: int, what: str) -> InputError:
    return InputError(f"{name}: {size} bytes, more than the {format_size(limit)} {what} may "
                      "have")


def read_bounded(path: Path, limit: int, what: str) -> bytes:
    """The bytes of `path`, a regular file (regular_file.open_regular: a FIFO is refused,
    never waited on); InputError, before more than `limit` bytes are read, where it holds
    more."""
    try:
        with open_regular(path, path.name) as handle:
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
