"""How long a verdict holds: verdict.json says when it was made (`made_at`, the run's end)
and until when it holds (`valid_until`, --cluster-valid-for later); a gate refuses one past
that, or older than its own --max-age, as an ERROR ("stale") that decides nothing: never a
PASS, and never a drain on a stale FAIL (the node may have been fixed, or failed, since).

Pure functions of the document and a time given (the gate reads the clock once); only the
standard library and units.py are imported (a prolog's budget is seconds). The times are
read strictly, as hostile input: a string of exactly the form the run writes
(2026-11-29T06:00:00Z), a date that exists; anything else is a ValueError naming the key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from pytest_cluster.errors import log_line
from pytest_cluster.units import MAX_DURATION_S, Dim, format_value, utc

MADE_AT = "made_at"
VALID_UNTIL = "valid_until"
#: How long a verdict holds unless --cluster-valid-for says otherwise: a day. A health
#: check reruns every few minutes, so its own verdicts never come near it; a day is the
#: cadence of a fleet's daily acceptance run, so a verdict older than that means the loop
#: that should have renewed it stopped, and whatever reads it (a scheduler plugin reading
#: the latest run) must not go on trusting it.
DEFAULT_VALID_FOR_S = 24 * 3600.0
#: How far in the future a verdict's made_at may be (two machines' clocks differ a little);
#: beyond it, one of the clocks cannot be trusted, and neither can the verdict's age.
CLOCK_SKEW_S = 300.0
_UTC = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_UTC_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_JSON_TYPES = {bool: "true or false", int: "a number", float: "a number", list: "a list",
               dict: "an object", type(None): "null"}


def format_duration(seconds: float) -> str:
    """A duration for people: '90 s', '30 min', '24 h', '26.05 h'."""
    unit = "s" if seconds < 120 else "min" if seconds < 7200 else "h"
    return format_value(seconds, Dim.TIME, unit)


def parse_utc(value: object, key: str) -> float:
    """A time of verdict.json (`key`'s `value`) in seconds since the epoch: exactly the form
    a run writes (units.utc: 2026-11-29T06:00:00Z), a date and time that exist; ValueError
    naming the key otherwise."""
    if not isinstance(value, str):
        given = _JSON_TYPES.get(type(value), type(value).__name__)
        raise ValueError(f"{key!r} is not a UTC time like 2026-11-29T06:00:00Z: it is {given}")
    if len(value) != 20 or not _UTC.fullmatch(value):
        raise ValueError(f"{key!r} is not a UTC time like 2026-11-29T06:00:00Z: "
                         f"{log_line(value, 40)!r}")
    try:
        made = datetime.strptime(value, _UTC_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:
        raise ValueError(f"{key!r} is not a date and time that exists: {value!r}") from None
    return made.timestamp()


def validity(made: float, valid_for: float) -> dict[str, str]:
    """verdict.json's made_at and valid_until for a verdict made at `made` (epoch seconds)
    that holds for `valid_for` seconds."""
    return {MADE_AT: utc(made), VALID_UNTIL: utc(made + valid_for)}


def age_problem(document: Mapping[str, Any], now: float,
                max_age: float | None = None) -> str | None:
    """Why the verdict `document` cannot be acted on at `now` (epoch seconds), one line
    without its 'ERROR: ', or None when it still holds: made in the future beyond
    CLOCK_SKEW_S (a clock cannot be trusted), past its valid_until, made more than
    `max_age` seconds ago, or of unknown age where `max_age` is given (a verdict.json of an
    earlier version has no made_at: without `max_age` it is taken as before). ValueError
    (naming the key) where made_at or valid_until is not as a run writes it."""
    made = parse_utc(document[MADE_AT], MADE_AT) if MADE_AT in document else None
    until = parse_utc(document[VALID_UNTIL], VALID_UNTIL) if VALID_UNTIL in document else None
    if made is not None and until is not None:
        if until < made:
            raise ValueError(f"'valid_until' {utc(until)} is before 'made_at' {utc(made)}")
        if until - made > MAX_DURATION_S:
            raise ValueError(f"'valid_until' {utc(until)} is more than 366 days after "
                             f"'made_at' {utc(made)} (a run's verdict holds at most that)")
    made_said = utc(made) if made is not None else "a time not recorded"
    if made is not None and made - now > CLOCK_SKEW_S:
        return (f"the verdict was made at {made_said}, {format_duration(made - now)} after "
                f"now ({utc(now)}), more than the {format_duration(CLOCK_SKEW_S)} two clocks "
                "may differ: this machine's clock or the run's cannot be trusted")
    if until is not None and now > until:
        return f"the verdict is stale: made at {made_said}, held until {utc(until)}, now {utc(now)}"
    if max_age is None:
        return None
    if made is None:
        return (f"the verdict cannot be held to --max-age {format_duration(max_age)}: its "
                "age is not recorded (its verdict.json has no made_at: an earlier version's)")
    if now - made > max_age:
        return (f"the verdict is stale: made at {made_said}, {format_duration(now - made)} "
                f"ago, more than --max-age {format_duration(max_age)}, now {utc(now)}")
    return None


def age_said(document: Mapping[str, Any]) -> str:
    """' (made at X, holds until Y)' for a PASS line, where they are recorded (checked by
    age_problem first); '' otherwise."""
    parts = [f"{word} {document[key]}" for word, key in (("made at", MADE_AT),
                                                         ("holds until", VALID_UNTIL))
             if isinstance(document.get(key), str)]
    return f" ({', '.join(parts)})" if parts else ""
