"""untrusted_json.py: JSON from the other side read within a size (a FIFO or a link never
waited on nor followed), parsed strictly (no NaN, no number beyond a float, no key twice,
no nesting that crashes the reader), and checked against a declared shape naming the
field, what was expected and a cut, printable value."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_cluster.errors import InputError
from pytest_cluster.evidence.untrusted_json import (
    check,
    cut,
    either,
    found,
    integer,
    json_path,
    list_of,
    map_of,
    null,
    number,
    optional,
    parse,
    read_bounded,
    record,
    scalar,
    text,
)


def _refused(data: bytes) -> str:
    with pytest.raises(InputError) as caught:
        parse(data, "f.json")
    return str(caught.value)


def test_parse_refuses_what_json_loads_would_take_or_crash_on() -> None:
    assert parse(b'{"a": [1, 2.5, "x", null]}', "f.json") == {"a": [1, 2.5, "x", None]}
    assert _refused(b'{"a": NaN}') == ("f.json: NaN (expected a finite number: JSON has no "
                                       "NaN or Infinity)")
    assert _refused(b"[-Infinity]") == ("f.json: -Infinity (expected a finite number: JSON "
                                        "has no NaN or Infinity)")
    assert _refused(b"[1e400]") == ("f.json: the number '1e400' is beyond a float (expected "
                                    "a finite number)")
    assert _refused(b'{"a": 1, "a": 2}') == ("f.json: the key 'a' twice in one object "
                                             "(expected each key once)")
    assert _refused(b'{"a": "\xff"}') == ("f.json: byte 7 is not UTF-8 (expected JSON text "
                                          "in UTF-8)")
    assert _refused(b"[" * 200_000) == ("f.json: nested too deeply to be read (expected the "
                                        "few levels of [ and { that pytest-cluster writes)")
    assert _refused(b'{"a": 1,\n "b": }') == ("f.json: not JSON at line 2 column 7: "
                                              "Expecting value")
    assert _refused(b"1" * 5000).startswith("f.json: not JSON pytest-cluster writes: ")


def test_a_mismatch_names_the_path_what_was_expected_and_a_cut_printable_value() -> None:
    shape = record({"nodes": record({"n1": list_of(record({"serial": text(8)}))})})
    value = {"nodes": {"n1": [{"serial": "ok"}, {"serial": "\x1b[31m" * 30}]}}
    with pytest.raises(InputError) as caught:
        check(shape, value)
    assert str(caught.value) == (
        "nodes.n1[1].serial: expected a string of at most 8 characters, found a string of "
        "150 characters, " + repr("\x1b[31m" * 12 + "…") + "")
    assert "\x1b" not in str(caught.value)
    assert check(shape, {"nodes": {"n1": [{"serial": "ok", "other": [[[]]]}]}, "x": 1}) == {
        "nodes": {"n1": [{"serial": "ok"}]}}  # only what the shape declares is kept
    assert json_path(["nodes", "gpu-1.example.com", "gpus", 3]) == \
        "nodes['gpu-1.example.com'].gpus[3]"
    assert cut("a" * 61) == repr("a" * 60 + "…")
    with pytest.raises(InputError, match=r"^the document: expected a string of at most 4 "
                                         r"characters or null, found true$"):
        check(either(text(4), null()), True)


def test_a_file_is_read_within_its_limit_and_refused_above_it(tmp_path: Path) -> None:
    path = tmp_path / "inventory.json"
    path.write_bytes(b"x" * 100)
    assert read_bounded(path, 100, "an inventory") == b"x" * 100
    with pytest.raises(InputError) as caught:
        read_bounded(path, 99, "an inventory")
    assert str(caught.value) == "inventory.json: 100 bytes, more than the 99 B an inventory " \
        "may have"


def test_a_fifo_a_directory_or_nothing_is_refused_naming_the_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.json")  # refused at once: never waited on for a writer
    (tmp_path / "dir.json").mkdir()
    for name, said in (("fifo.json", "fifo.json: a fifo, not a regular file"),
                       ("dir.json", "dir.json: a directory, not a regular file"),
                       ("none.json", "none.json: cannot be read: No such file or directory")):
        with pytest.raises(InputError) as caught:
            read_bounded(tmp_path / name, 100, "a baseline")
        assert str(caught.value) == said


def test_what_a_value_is_is_said_in_a_few_words() -> None:
    assert [found(v) for v in (True, False, None, {"a": 1}, [1, 2], 2.5, "ab")] == [
        "true", "false", "null", "a mapping of 1 key(s)", "a list of 2 item(s)", "2.5", "'ab'"]
    assert found(10**100) == "1" + "0" * 59 + "…"


@pytest.mark.parametrize(("shape", "value", "said"), [
    (number(0, 10, "GB/s"), 11, "the document: expected a number from 0 to 10 (GB/s), found 11"),
    (number(), float("inf"), "the document: expected a number, found inf"),
    (integer(), 2**63, f"the document: expected a whole number, found {2**63}"),
    (integer(), 1.5, "the document: expected a whole number, found 1.5"),
    (optional(integer()), "1", "the document: expected a whole number or null, found '1'"),
    (scalar(3), [1], "the document: expected a string of at most 3 characters, a number, "
                     "true, false or null, found a list of 1 item(s)"),
    (text(10), "\ud800", "the document: expected a string of at most 10 characters of "
                         "Unicode text (no lone surrogate), found '\\ud800'"),
    (map_of(integer(), 3, 1), {"a": 1, "b": 2},
     "the document: expected a mapping of at most 1 entries, found a mapping of 2 key(s)"),
    (record({"n": integer()}, "a node", required=("n",)), {},
     "the document: expected a node with the key 'n', found a mapping of 0 key(s)"),
])
def test_each_shape_names_what_it_expected(shape: dict[str, object], value: object,
                                           said: str) -> None:
    with pytest.raises(InputError) as caught:
        check(shape, value)
    assert str(caught.value) == said


def test_only_what_a_shape_declares_is_kept_all_the_way_down() -> None:
    shape = map_of(either(record({"a": integer()}), list_of(record({"b": null()}))), 8, 10)
    assert check(shape, {"x": {"a": 1, "z": 2}, "y": [{"b": None, "c": 3}]}) == {
        "x": {"a": 1}, "y": [{"b": None}]}
