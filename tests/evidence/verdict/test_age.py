"""How long a verdict holds (evidence/verdict/age.py): durations read as the spec reads a
time or as plain seconds, verdict.json's made_at and valid_until read strictly (hostile
input: a wrong type or form names the key), and why a verdict cannot be acted on at a
given time: stale, too old for --max-age, of unknown age, or made in the future."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_cluster.evidence.verdict.age import (
    CLOCK_SKEW_S,
    DEFAULT_VALID_FOR_S,
    age_problem,
    age_said,
    format_duration,
    parse_utc,
    validity,
)
from pytest_cluster.units import utc

MADE = 1795932000.0  # 2026-11-29T06:00:00Z


def test_durations_are_said_in_the_unit_that_reads_best() -> None:
    assert [format_duration(s) for s in (90, 300, 1800, 86400, 93780)] == [
        "90 s", "5 min", "30 min", "24 h", "26.05 h"]


def test_a_run_writes_its_times_as_the_gate_reads_them() -> None:
    written = validity(MADE, DEFAULT_VALID_FOR_S)
    assert written == {"made_at": "2026-11-29T06:00:00Z", "valid_until": "2026-11-30T06:00:00Z"}
    assert parse_utc(written["made_at"], "made_at") == MADE
    assert parse_utc(written["valid_until"], "valid_until") == MADE + DEFAULT_VALID_FOR_S


@pytest.mark.parametrize(("value", "said"), [
    (MADE, "it is a number"), (True, "it is true or false"), (None, "it is null"),
    ([], "it is a list"), ({}, "it is an object"),
    ("2026-11-29 06:00:00Z", "'2026-11-29 06:00:00Z'"),
    ("2026-11-29T06:00:00+00:00", "'2026-11-29T06:00:00+00:00'"),
    ("2026-11-29T06:00:00.5Z", "'2026-11-29T06:00:00.5Z'"),
    ("2026-11-29T6:00:00Z", "'2026-11-29T6:00:00Z'"),
    ("2026-11-29T06:00:00Z\n", "'2026-11-29T06:00:00Z\\\\n'"),
    ("２０２６-11-29T06:00:00Z", "'２０２６-11-29T06:00:00Z'"),
    ("2026-13-01T00:00:00Z", "not a date and time that exists"),
    ("2026-02-30T00:00:00Z", "not a date and time that exists"),
    ("2026-11-29T23:59:60Z", "not a date and time that exists"),
    ("0000-01-01T00:00:00Z", "not a date and time that exists"),
    ("9" * 100_000, "characters cut"),
])
def test_a_time_not_as_a_run_writes_it_is_refused_naming_the_key(value: object,
                                                                  said: str) -> None:
    with pytest.raises(ValueError, match=r"^'made_at' is not") as caught:
        parse_utc(value, "made_at")
    assert said in str(caught.value) and len(str(caught.value)) < 200


def verdict(made: float | None = MADE, valid_for: float = DEFAULT_VALID_FOR_S,
            **more: Any) -> dict[str, Any]:
    return {**(validity(made, valid_for) if made is not None else {}), **more}


def test_a_verdict_within_its_time_holds() -> None:
    for now in (MADE, MADE + DEFAULT_VALID_FOR_S, MADE - CLOCK_SKEW_S):
        assert age_problem(verdict(), now) is None
    assert age_problem(verdict(), MADE + 1800, max_age=1800) is None


def test_a_verdict_past_its_valid_until_is_stale() -> None:
    now = MADE + DEFAULT_VALID_FOR_S + 1
    assert age_problem(verdict(), now) == (
        f"the verdict is stale: made at 2026-11-29T06:00:00Z, held until "
        f"2026-11-30T06:00:00Z, now {utc(now)}")


def test_max_age_refuses_a_verdict_older_than_it_within_its_valid_until() -> None:
    now = MADE + 3600
    assert age_problem(verdict(), now) is None
    assert age_problem(verdict(), now, max_age=1800) == (
        f"the verdict is stale: made at 2026-11-29T06:00:00Z, 60 min ago, more than "
        f"--max-age 30 min, now {utc(now)}")


def test_a_verdict_without_made_at_is_as_before_unless_max_age_asks_its_age() -> None:
    earlier = {"outcome": "PASS"}  # an earlier version's verdict.json
    assert age_problem(earlier, MADE) is None
    assert age_problem(earlier, MADE, max_age=86400) == (
        "the verdict cannot be held to --max-age 24 h: its age is not recorded (its "
        "verdict.json has no made_at: an earlier version's)")


def test_a_verdict_made_in_the_future_beyond_a_clocks_skew_is_not_trusted() -> None:
    now = MADE - CLOCK_SKEW_S - 60
    said = age_problem(verdict(), now)
    assert said is not None and said.startswith(
        "the verdict was made at 2026-11-29T06:00:00Z, 6 min after now")
    assert "cannot be trusted" in said
    assert age_problem(verdict(), now, max_age=3600) == said  # never a negative age


@pytest.mark.parametrize(("document", "said"), [
    ({"made_at": 1795932000}, "'made_at' is not a UTC time"),
    ({"made_at": "2026-11-29T06:00:00Z", "valid_until": ["x"]}, "'valid_until' is not a UTC"),
    ({"made_at": "2026-11-29T06:00:00Z", "valid_until": "2026-11-29T05:59:59Z"},
     "'valid_until' 2026-11-29T05:59:59Z is before 'made_at' 2026-11-29T06:00:00Z"),
    ({"made_at": "2026-11-29T06:00:00Z", "valid_until": "9999-12-31T23:59:59Z"},
     "more than 366 days after 'made_at'"),
])
def test_times_that_disagree_or_are_malformed_are_refused(document: dict[str, Any],
                                                           said: str) -> None:
    with pytest.raises(ValueError) as caught:
        age_problem(document, MADE)
    assert said in str(caught.value)


def test_a_verdict_without_made_at_is_still_stale_past_its_valid_until() -> None:
    document = {"valid_until": "2026-11-29T06:00:00Z"}
    assert age_problem(document, MADE) is None
    assert age_problem(document, MADE + 1) == (
        f"the verdict is stale: made at a time not recorded, held until "
        f"2026-11-29T06:00:00Z, now {utc(MADE + 1)}")


def test_a_pass_line_says_the_verdicts_age_where_it_is_recorded() -> None:
    assert age_said(verdict()) == (" (made at 2026-11-29T06:00:00Z, holds until "
                                   "2026-11-30T06:00:00Z)")
    assert age_said({}) == ""
