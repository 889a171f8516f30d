"""The kill switch's file read as strictly as a spec: every problem at its line, naming the
key and what was expected; an entry's until as a date (through that day, UTC) or a time;
empty is nothing disabled; a file that is no disable file refused, bounded."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from pytest_cluster.contract.disable_file import MAX_BYTES, MAX_ENTRIES, load, parse
from pytest_cluster.errors import SpecError

VALID = """\
disabled:
  - clause: gpus.row_remap      # misfires on one driver
    reason: "false positives on driver 550.54 (ticket OPS-1234)"
    until: 2026-12-31
  - {clause: gpus.xid, reason: noisy, until: "2026-06-01T12:30:00Z"}
"""


def _at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def test_a_valid_file_is_read_with_each_entry_and_its_line() -> None:
    read = parse(VALID, "off.yaml")
    assert [(e.clause, e.reason, e.until, e.line) for e in read.entries] == [
        ("gpus.row_remap", "false positives on driver 550.54 (ticket OPS-1234)",
         "2026-12-31", 2),
        ("gpus.xid", "noisy", "2026-06-01T12:30:00Z", 5)]
    assert read.entries[0].said == ("disabled: false positives on driver 550.54 (ticket "
                                    "OPS-1234), until 2026-12-31")


def test_a_date_holds_through_that_day_and_a_time_to_its_instant() -> None:
    read = parse(VALID, "off.yaml")
    day, moment = read.entries
    assert not day.expired(_at("2026-12-31T23:59:59"))
    assert day.expired(_at("2027-01-01T00:00:00"))
    assert not moment.expired(_at("2026-06-01T12:29:59"))
    assert moment.expired(_at("2026-06-01T12:30:00"))
    assert [e.clause for e in read.in_force(_at("2026-07-01T00:00:00"))] == ["gpus.row_remap"]
    assert [e.clause for e in read.expired(_at("2026-07-01T00:00:00"))] == ["gpus.xid"]


def test_a_time_with_an_offset_is_said_in_utc() -> None:
    read = parse("disabled:\n - {clause: gpus.pcie, reason: r, until: "
                 "'2026-06-01T14:00+02:00'}\n", "off.yaml")
    assert read.entries[0].until == "2026-06-01T12:00:00Z"


def test_every_problem_is_said_at_its_line_with_the_key_and_what_was_expected() -> None:
    text = """\
disabled:
  - clause: gpus.rowremap
    reason: typo
    until: 2026-12-31
  - clause: PC-GPU-ROWREMAP
    reason: a code
    until: 2026-12-31
  - clause: gpus.pcie
    until: 31.12.2026
    colour: red
  - clause: gpus.xid
    reason: x
    until: 2026-02-30
  - clause: gpus.matmul_size
    reason: a setting
    until: 2026-12-31
"""
    with pytest.raises(SpecError) as raised:
        parse(text, "off.yaml")
    said = str(raised.value)
    assert said.startswith("off.yaml: 7 problems in the disable file:")
    for line in ("off.yaml:2: disabled[0].clause: no clause 'gpus.rowremap'; did you mean "
                 "'gpus.row_remap'?",
                 "off.yaml:5: disabled[1].clause: 'PC-GPU-ROWREMAP' is a fault code, not a "
                 "clause",
                 "off.yaml:8: disabled[2].reason: missing: expected why",
                 "off.yaml:9: disabled[2].until: expected a date (2026-12-31",
                 "got '31.12.2026'",
                 "off.yaml:10: disabled[2].colour: unknown key (known keys: clause, reason, "
                 "until)",
                 "off.yaml:13: disabled[3].until: expected a date",
                 "off.yaml:14: disabled[4].clause: no clause 'gpus.matmul_size'"):
        assert line in said


def test_a_clause_disabled_twice_is_a_problem_naming_the_first() -> None:
    with pytest.raises(SpecError, match=r"off.yaml:3: disabled\[1\].clause: gpus.xid is "
                                        r"disabled twice \(first on line 2\)"):
        parse("disabled:\n - {clause: gpus.xid, reason: a, until: 2026-12-31}\n"
              " - {clause: gpus.xid, reason: b, until: 2026-12-31}\n", "off.yaml")


@pytest.mark.parametrize("text", ["", "# nothing off\n", "disabled:\n", "disabled: []\n"])
def test_an_empty_file_or_list_disables_nothing(text: str) -> None:
    assert parse(text, "off.yaml").entries == ()


@pytest.mark.parametrize(("text", "said"), [
    ("cluster:\n  name: x\n", "off.yaml:1: disabled: missing: expected `disabled:`"),
    ("- gpus.xid\n", "expected a map of disabled, got a list"),
    ("disabled: gpus.xid\n", "disabled: expected a list of entries (clause, reason, "
                             "until), got 'gpus.xid'"),
    ("disabled:\n - {clause: gpus.xid, reason: \"a\\tb\\n\", until: 2026-12-31}\n",
     "reason: expected why it is turned off: one line of printable text"),
])
def test_a_file_that_is_no_disable_file_is_refused_saying_what_was_expected(
        text: str, said: str) -> None:
    with pytest.raises(SpecError) as raised:
        parse(text, "off.yaml")
    assert said in str(raised.value)


def test_more_entries_than_a_disable_file_has_are_refused() -> None:
    entries = "".join(f" - {{clause: gpus.xid, reason: r{i}, until: 2026-12-31}}\n"
                      for i in range(MAX_ENTRIES + 1))
    with pytest.raises(SpecError, match=f"{MAX_ENTRIES + 1} entries, more than"):
        parse("disabled:\n" + entries, "off.yaml")


def test_a_huge_binary_or_missing_file_is_refused_before_it_is_parsed(
        tmp_path: Path) -> None:
    huge = tmp_path / "huge.yaml"
    huge.write_text("#" * (MAX_BYTES + 1))
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00" * 100)
    for path, said in ((huge, "is larger than 64 KiB; is this really a disable file?"),
                       (binary, "not UTF-8 text"), (tmp_path / "none.yaml", "no such file"),
                       (tmp_path, "is a directory, expected a YAML disable file")):
        with pytest.raises(SpecError, match=said):
            load(path)
