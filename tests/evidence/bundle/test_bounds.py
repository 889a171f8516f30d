"""bounds.py: the nesting depth of JSON found without recursion, brackets inside strings
not counted; JSON two readers could read two ways refused; values echoed cut and printable."""

from __future__ import annotations

import pytest

from pytest_cluster.errors import BundleError
from pytest_cluster.evidence.bundle.bounds import MAX_DEPTH, depth, load_json, shown


def test_shown_and_depth() -> None:
    assert shown("plain name.json") == "plain name.json"
    assert shown("a\tb\\c\u00e9") == "a\\tb\\\\c\\xe9"
    assert shown("x" * 10, 8) == "xxxxx..."
    assert shown("\x00" * 10, 8) == "\\x00\\..."
    assert depth(b"1") == 0 and depth(b"[]") == 1 and depth(b"][") == 0  # json stops at the ']'
    assert depth(b'{"a": [1, {"b": "]]]["}], "c\\"[[": {}}') == 3


@pytest.mark.parametrize(("text", "levels"), [
    (b'["\\\\", ["\\\\\\"[", [[]]]]', 4),  # an escaped backslash ends no string early
    (b'["a""[" , [["b"]]]', 3),  # two strings side by side, a bracket in the second
    (b'[["", "", "]"], {"k": "{"}]', 2),  # empty strings, brackets inside strings
    (b'[[ "[[[[' + b'\\"' * 1000, 2),  # unterminated: what follows the quote is not counted
    (b'[\\"[[', 3),  # a backslash outside a string: JSON refuses it; still a count
])
def test_depth_counts_only_the_brackets_outside_strings(text: bytes, levels: int) -> None:
    assert depth(text) == levels


def test_json_within_bounds_is_read() -> None:
    assert load_json(b'{"a": [1, 2.5, "x", null]}', "m") == {"a": [1, 2.5, "x", None]}
    assert load_json(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH, "m") is not None


@pytest.mark.parametrize(("data", "said"), [
    (b'{"a": "\xff"}', "m: not UTF-8 JSON (byte 7 is not UTF-8)"),
    (b"[" * (MAX_DEPTH + 1), f"m: JSON nested {MAX_DEPTH + 1} levels deep; expected at most "
                             f"{MAX_DEPTH}"),
    (b"[NaN]", "m: NaN is not JSON (expected numbers that are finite)"),
    (b"[-Infinity]", "m: -Infinity is not JSON (expected numbers that are finite)"),
    (b'{"\\u001b": 1, "\\u001b": 2}', "m: key '\\x1b' is given twice in one object"),
    (b'{"a": }', "m: not JSON (Expecting value: line 1 column 7 (char 6))"),
])
def test_what_json_is_refused_says_why(data: bytes, said: str) -> None:
    with pytest.raises(BundleError) as caught:
        load_json(data, "m")
    assert str(caught.value) == said
