"""What a name the spec misspelled stands for."""

from __future__ import annotations

from pytest_cluster.contract.reading.spelling import (
    closest,
    foreign_letters,
    lookalike,
    written_with,
)


def test_the_closest_known_name_ignores_case() -> None:
    assert closest("GPUs", ["gpus", "host"], 0.6) == "gpus"
    assert closest("zzzz", ["gpus", "host"], 0.6) is None


def test_a_name_written_with_lookalike_letters_is_the_latin_one_and_says_which() -> None:
    cyrillic_o = "h\u043est"
    assert lookalike(cyrillic_o, ["host", "gpus"]) == "host"
    assert foreign_letters(cyrillic_o) == "U+043E CYRILLIC SMALL LETTER O at position 2"
    assert written_with(cyrillic_o) == f" (written with {foreign_letters(cyrillic_o)})"
    assert written_with("host") == "" and lookalike("hzst", ["host"]) is None
