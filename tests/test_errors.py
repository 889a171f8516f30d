"""errors.py: our exceptions and how an error shows a value: cut short, every line at most
MAX_LINE, controls escaped, a spec's problems listed in line order with their count."""

from __future__ import annotations

import pytest

from pytest_cluster import errors
from pytest_cluster.errors import (
    MAX_LINE,
    MAX_SHOWN,
    BundleError,
    ClusterError,
    SpecError,
    clip,
    head,
    located,
    log_line,
    printable,
)


def test_head_keeps_a_short_value_and_counts_a_long_ones_characters() -> None:
    assert head("abc", 3) == "abc"
    assert head("abcd", 3) == "abc... (4 characters)"
    assert head("x" * 100) == "x" * 100


def test_clip_cuts_a_long_line_in_the_middle_to_the_limit_saying_how_much() -> None:
    line = "START" + "x" * 5000 + "END"
    clipped = clip(f"short\n{line}\nshort")
    first, middle, last = clipped.split("\n")
    assert (first, last) == ("short", "short")
    assert len(middle) == MAX_LINE
    assert middle.startswith("START") and middle.endswith("END")
    cut = len(line) - (MAX_LINE - len(f" [...{len(line)} characters cut...] "))
    assert f" [...{cut} characters cut...] " in middle
    assert clip("y" * MAX_LINE) == "y" * MAX_LINE


def test_printable_escapes_what_a_terminal_would_act_on_and_keeps_the_rest() -> None:
    assert printable("héllo wörld") == "héllo wörld"
    assert printable("a\x1b[2Jb\u202ec\u200bd\ne") == "a\\x1b[2Jb\\u202ec\\u200bd\\ne"
    assert log_line("a\nb") == "a\\nb"
    assert len(log_line("\x1b" * 5000)) == MAX_LINE


@pytest.mark.parametrize(("file", "line", "path", "shown"), [
    ("s.yaml", 3, "gpus.count", "s.yaml:3: gpus.count: bad"), ("s.yaml", None, "", "s.yaml: bad"),
    ("", 3, "", "line 3: bad"), ("", None, "k", "k: bad"), ("", None, "", "bad")])
def test_an_error_names_where_it_is_where_known(file: str, line: int | None, path: str,
                                                shown: str) -> None:
    assert located(file, line, path, "bad") == shown
    assert str(SpecError("bad", file=file, line=line, path=path)) == shown


def test_a_listing_of_spec_errors_is_in_line_order_and_counts_the_rest() -> None:
    found = [SpecError(f"bad {n}", file="s.yaml", line=n, path="k")
             for n in range(MAX_SHOWN + 5, 0, -1)]
    listed = SpecError.listing(found, "s.yaml")
    lines = str(listed).split("\n")
    assert lines[0] == f"s.yaml: {MAX_SHOWN + 5} problems in the spec:"
    assert lines[1:-1] == [f"  s.yaml:{n}: k: bad {n}" for n in range(1, MAX_SHOWN + 1)]
    assert lines[-1] == "  ... and 5 more"
    assert str(SpecError.listing(found[:2], "s.yaml")).split("\n") == [
        "s.yaml: 2 problems in the spec:", "  s.yaml:24: k: bad 24", "  s.yaml:25: k: bad 25"]


def test_every_error_of_ours_is_a_cluster_error_and_a_bundle_errors_line_is_clipped() -> None:
    ours = [value for value in vars(errors).values()
            if isinstance(value, type) and issubclass(value, Exception)]
    assert ours and all(issubclass(kind, ClusterError) for kind in ours)
    assert len(str(BundleError("m" * 5000))) == MAX_LINE
