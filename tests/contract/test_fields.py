"""The spec's scalar fields (pytest_cluster/contract/fields.py): `field` records a parser's
error at the value's place and gives None, never raising; each parser refuses a hostile
value with one exact message that echoes what it was given."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import yaml
from yaml.nodes import Node

from pytest_cluster.contract.fields import (
    boolean,
    field,
    interpreter,
    one_of,
    or_default,
    positive_int,
    shown_name,
    size_between,
    text,
    time_between,
    whole,
)
from pytest_cluster.contract.located_errors import Ctx
from pytest_cluster.errors import UnitError
from tests.contract.test_loader import error_of


def node(written: str) -> Node:
    """The YAML node of `written`, a document of one value."""
    found = yaml.compose(written)
    assert found is not None
    return found


def refused(parse: Callable[[object], object], raw: object) -> str:
    """The message `parse` refuses `raw` with."""
    with pytest.raises(UnitError) as info:
        parse(raw)
    return str(info.value)


def read(parse: Callable[[object], object], written: str) -> tuple[object, list[str]]:
    """What `field` gives for the YAML `written` at key `k`, and the errors it recorded."""
    ctx = Ctx("t.yaml")
    value = field(ctx, node(written), "k", parse)
    return value, [str(error) for error in ctx.errors]


# -- field: a parser's error recorded at its place, never raised -----------------------------

def test_a_field_absent_is_none_and_no_error() -> None:
    ctx = Ctx("t.yaml")
    assert field(ctx, None, "k", positive_int) is None
    assert ctx.count == 0


def test_a_wrong_value_is_one_error_at_its_line_and_path_and_reads_as_none() -> None:
    assert read(positive_int, "\n\n0") == (None, ["t.yaml:3: k: expected a whole number "
                                                  ">= 1, got 0"])


@pytest.mark.parametrize(("written", "got"), [("[1, 2]", "a list"), ("{a: 1}", "a map")])
def test_a_list_or_a_map_is_refused_saying_what_the_field_expects(written: str,
                                                                   got: str) -> None:
    assert read(positive_int, written) == (
        None, [f"t.yaml:1: k: expected a whole number >= 1, got {got}"])
    assert read(interpreter, written) == (
        None, [f"t.yaml:1: k: expected an interpreter path like /shared/venv/bin/python, "
               f"got {got}"])


def test_a_list_for_a_parser_that_takes_anything_is_refused_as_not_a_single_value() -> None:
    assert read(str, "[1]") == (None, ["t.yaml:1: k: expected a single value, got a list"])


def test_a_text_field_takes_a_number_as_written() -> None:
    """YAML reads 1.10 as 1.1; a field of text takes what the spec wrote."""
    assert read(text("a name"), "1.10") == ("1.10", [])
    assert read(text("a name"), "007") == ("007", [])


def test_a_number_is_echoed_as_the_spec_wrote_it() -> None:
    """YAML reads 1.0e+3 as 1000.0; the error says what the spec wrote."""
    assert read(positive_int, "1.0e+3") == (None, ["t.yaml:1: k: expected a whole number "
                                                   ">= 1, got 1.0e+3"])


def test_or_default_keeps_a_zero_or_an_empty_text_that_passed() -> None:
    assert or_default(0, 5) == 0
    assert or_default("", "x") == ""
    assert or_default(None, 5) == 5


# -- each parser on hostile values ------------------------------------------------------------

@pytest.mark.parametrize(("raw", "message"), [
    ("b", "expected a or c, got 'b'"),
    (1, "expected a or c, got 1"),
    (None, "expected a or c, got None"),
    ("A", "expected a or c, got 'A'"),  # as written: no case folding
    ("x" * 200, "expected a or c, got '" + "x" * 64 + "... (200 characters)'"),
])
def test_one_of_takes_only_its_choices_as_written(raw: object, message: str) -> None:
    parse = one_of(("a", "c"), "a or c")
    assert refused(parse, raw) == message
    assert parse("c") == "c"


@pytest.mark.parametrize("raw", ["", "   ", None, 3, ["a"]])
def test_text_refuses_nothing_and_what_is_no_text(raw: object) -> None:
    assert refused(text("a label"), raw) == f"expected a label, got {raw!r}"


def test_text_is_stripped() -> None:
    assert text("a label")("  rack 7 \n") == "rack 7"


@pytest.mark.parametrize(("raw", "message"), [
    ("x" * 9, "expected a tag of at most 8 characters, got 'xxxxxxxxx'"),
    ("x" * 100, "expected a tag of at most 8 characters, got '" + "x" * 40 +
     "... (100 characters)'"),
    ("a\x1bb", "expected a tag of printable characters, got 'a\\x1bb' (not printable: "
     "U+001B at position 2)"),
    ("\u202e\x00\x07\x08\x7f", "expected a tag of printable characters, got "
     "'\\u202e\\x00\\x07\\x08\\x7f' (not printable: U+202E at position 1, U+0000 at "
     "position 2, U+0007 at position 3 and 2 more)"),
    ("", "expected a tag, got ''"),
])
def test_shown_name_refuses_long_or_unprintable_names(raw: str, message: str) -> None:
    assert refused(shown_name("a tag", 8), raw) == message


def test_shown_name_keeps_printable_words_of_any_script() -> None:
    assert shown_name("a tag", 8)("Zürich 1") == "Zürich 1"


@pytest.mark.parametrize("raw", ["-c", "python3 -c 'import os'", "py$(id)", "", "a b",
                                 "python;id", "`id`", None, 3])
def test_interpreter_refuses_options_spaces_and_shell(raw: object) -> None:
    assert refused(interpreter, raw) == ("expected an interpreter path like "
                                         f"/shared/venv/bin/python, got {raw!r}")


def test_interpreter_takes_a_path_or_a_command_name() -> None:
    assert [interpreter(raw) for raw in ("/shared/venv/bin/python", "python3.12", " py ")] \
        == ["/shared/venv/bin/python", "python3.12", "py"]


@pytest.mark.parametrize("python", ["-c", "python3 -c 'import os'", "py$(id)", ""])
def test_interpreter_must_be_a_path(python: str) -> None:
    message = error_of(f"cluster: {{name: x, nodes: a, python: {python!r}}}\n"
                       "host: {cpu_cores: 1}\n")
    assert message == ("trial.yaml:1: cluster.python: expected an interpreter path like "
                       f"/shared/venv/bin/python, got {python!r}")


@pytest.mark.parametrize(("raw", "message"), [
    ("2 min", "expected a time from 0 to 1 min, got '2 min'"),
    ("61 s", "expected a time from 0 to 1 min, got '61 s'"),
    ("-1 s", "expected a time like '5 s', got '-1 s' (a time cannot be negative)"),
    (61, "expected a time like '5 s', got 61 (a number needs a unit)"),
])
def test_a_time_outside_its_range_or_without_a_unit_is_refused(raw: object,
                                                                message: str) -> None:
    assert refused(time_between(0, 60, "from 0 to 1 min"), raw) == message


def test_a_time_inside_its_range_is_seconds() -> None:
    parse = time_between(0, 60, "from 0 to 1 min")
    assert (parse("1 min"), parse("0 s"), parse("500 ms")) == (60, 0, 0.5)


@pytest.mark.parametrize("raw", ["2 GiB", "0 B"])
def test_a_size_outside_its_range_is_refused_saying_the_range(raw: object) -> None:
    assert refused(size_between(1, 2**30, "from 1 B to 1 GiB"), raw) == \
        f"expected a size from 1 B to 1 GiB, got {raw!r}"


def test_a_size_inside_its_range_is_bytes() -> None:
    assert size_between(1, 2**30, "from 1 B to 1 GiB")("4 KiB") == 4096


@pytest.mark.parametrize("raw", ["true", "yes", 1, 0, None, "false"])
def test_a_flag_is_only_true_or_false(raw: object) -> None:
    assert refused(boolean, raw) == f"expected true or false, got {raw!r}"
    assert (boolean(True), boolean(False)) == (True, False)


@pytest.mark.parametrize(("raw", "message"), [
    (0, "expected a whole number >= 1, got 0"),
    (-3, "expected a whole number >= 1, got -3"),
    (True, "expected a whole number >= 1, got True"),
    (2.0, "expected a whole number >= 1, got 2.0"),
    ("8", "expected a whole number >= 1, got '8'"),
    ("010", "expected a whole number >= 1, got '010' (not a decimal number: write it "
     "without a leading 0, 0x, '_' or ':')"),
])
def test_positive_int_refuses_what_is_not_a_count(raw: object, message: str) -> None:
    assert refused(positive_int, raw) == message


@pytest.mark.parametrize(("raw", "message"), [
    (0, "expected a whole number from 1 to 64, got 0"),
    (65, "expected a whole number from 1 to 64, got 65"),
    (False, "expected a whole number from 1 to 64, got False"),
    ("0x10", "expected a whole number from 1 to 64, got '0x10' (not a decimal number: "
     "write it without a leading 0, 0x, '_' or ':')"),
])
def test_whole_refuses_what_is_outside_its_range(raw: object, message: str) -> None:
    parse = whole(1, 64)
    assert refused(parse, raw) == message
    assert (parse(1), parse(64)) == (1, 64)
