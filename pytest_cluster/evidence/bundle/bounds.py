"""What `verify` accepts from the other side, and how it echoes it: JSON parsed only after
its nesting depth is known to be small (found without recursion), and every value shown
cut short and made printable ASCII (no control characters, no look-alike letters)."""

from __future__ import annotations

import json
import re
from array import array
from collections import Counter
from itertools import accumulate
from typing import Any

from pytest_cluster.errors import BundleError

#: The deepest nesting of JSON arrays and objects read (ours nest 5 deep).
MAX_DEPTH = 64
#: How many characters of a value from the evidence are echoed (a name, a keyid).
SHOWN = 200

#: Every byte but a quote and a bracket, deleted by `bytes.translate`.
_NOT_QUOTE_OR_BRACKET = bytes(b for b in range(256) if b not in b'"[]{}')
#: A string once its escapes are gone: from a quote to the next, or to the end of the text
#: (unterminated: JSON refuses it). A single character class that always matches once
#: started, so each byte is looked at once: no backtracking, no retry from a later quote.
_STRING = re.compile(rb'"[^"]*"?')
_SIGNED = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def _outside_strings(data: bytes) -> bytes:
    """The brackets of the JSON text `data` that are outside its strings, in order; in
    linear C-speed passes. Escapes go first: a run of backslashes pairs from its start
    (its first byte follows a byte that is no backslash, so it starts no escape), `\\\\`
    pairs, then the `\\"` left; every quote left opens or closes a string. Two quotes side
    by side go next: an empty string, or a string's end and the next one's start with
    nothing between (the two strings' inside becomes one), so which bracket is inside a
    string stays as it was, and a text of a million strings costs no match apiece."""
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    quotes_and_brackets = unescaped.translate(None, _NOT_QUOTE_OR_BRACKET).replace(b'""', b"")
    return _STRING.sub(b"", quotes_and_brackets)


def depth(data: bytes) -> int:
    """How deep the arrays and objects of the JSON text `data` nest, brackets inside
    strings not counted; in linear C-speed passes, without recursion (a text of escaped
    quotes or of unterminated strings costs one pass, never a rescan per quote)."""
    brackets = _outside_strings(data)
    return max(accumulate(array("b", brackets.translate(_SIGNED)), initial=0))


class _Refused(ValueError):
    """JSON that parses, but that two readers could read two ways."""


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON (expected numbers that are finite)")


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are each given once: with a key twice, which one counts
    depends on the reader, so the other side could show a verifier one and a person the
    other."""
    found = dict(pairs)
    if len(found) != len(pairs):
        twice = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
        raise _Refused(f"key '{shown(twice)}' is given twice in one object")
    return found


def load_json(data: bytes, where: str) -> Any:
    """`data` (UTF-8 JSON, at most MAX_DEPTH deep, no NaN or Infinity, no key twice in an
    object) parsed; BundleError naming `where`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(f"{where}: not UTF-8 JSON (byte {exc.start} is not UTF-8)") from None
    nesting = depth(data)
    if nesting > MAX_DEPTH:
        raise BundleError(f"{where}: JSON nested {nesting} levels deep; expected at most "
                          f"{MAX_DEPTH}")
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_once)
    except _Refused as exc:
        raise BundleError(f"{where}: {exc}") from None
    except RecursionError:  # cannot happen after the depth check; still ours, not a trace
        raise BundleError(f"{where}: JSON nested too deep") from None
    except ValueError as exc:
        raise BundleError(f"{where}: not JSON ({shown(str(exc))})") from None


def shown(text: str, limit: int = SHOWN) -> str:
    """`text` as printable ASCII (anything else, and a backslash, as a Python escape), at
    most `limit` characters: a longer one ends in '...'."""
    cut = text[:limit + 1]
    safe = "".join(ch if " " <= ch <= "~" and ch != "\\" else ascii(ch)[1:-1] for ch in cut)
    return safe if len(safe) <= limit and len(cut) <= limit else safe[:limit - 3] + "..."
