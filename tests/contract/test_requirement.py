from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_cluster.contract.requirement import (
    parse_requirement,
    parse_version_requirement,
    version_tuple,
)
from pytest_cluster.errors import UnitError
from pytest_cluster.units import Dim


def test_failed_minimum_says_by_how_much() -> None:
    req = parse_requirement(">= 10 GB/s", Dim.RATE)
    verdict = req.check(4.1e9, "node03 /data write")
    assert not verdict.ok
    assert verdict.message == ("node03 /data write: measured 4.1 GB/s < required 10 GB/s "
                               "(41% of required)")


def test_passed_minimum() -> None:
    verdict = parse_requirement(">= 10 GB/s", Dim.RATE).check(12.5e9)
    assert verdict.ok
    assert verdict.message == "measured 12.5 GB/s >= required 10 GB/s"


def test_maximum_reads_as_allowed() -> None:
    verdict = parse_requirement("<= 5 s", Dim.TIME, "<=").check(7.2, "node01 /data import_torch")
    assert verdict.message == "node01 /data import_torch: measured 7.2 s > allowed 5 s"


def test_bare_value_takes_the_default_comparison() -> None:
    assert parse_requirement("5 s", Dim.TIME, "<=").op == "<="
    assert parse_requirement(192, Dim.COUNT).op == ">="
    assert parse_requirement("= 8", Dim.COUNT).op == "=="


def test_bit_rates_show_in_bits() -> None:
    verdict = parse_requirement(">= 400 Gb/s", Dim.RATE).check(46e9)
    assert verdict.message == "measured 368 Gb/s < required 400 Gb/s (92% of required)"


def test_error_names_the_whole_value() -> None:
    with pytest.raises(UnitError, match=r"got '>= 10 gigs'"):
        parse_requirement(">= 10 gigs", Dim.RATE)


@pytest.mark.parametrize(("bound", "found", "ok"), [
    (">= 5.15", "6.1.0-18-amd64", True),
    (">= 5.15", "5.4.0-150-generic", False),
    (">= 2.4", "2.13.0+cpu", True),
    ("== 550.54", "550.54.15", True),
    ("== 550.54", "550.90.07", False),
    ("< 3.12", "3.11.7", True),
    (">= 12.4", "garbage", False),
])
def test_versions(bound: str, found: str, ok: bool) -> None:
    assert parse_version_requirement(bound).holds(found) is ok


def test_missing_version_fails_with_reason() -> None:
    verdict = parse_version_requirement(">= 2.4").check(None, "node01 torch")
    assert verdict.message == "node01 torch: not found on the node (required >= 2.4)"


def test_version_tuple() -> None:
    assert version_tuple("6.1.0-18-amd64") == (6, 1, 0)
    assert version_tuple("none") is None


@given(st.text(max_size=20))
def test_arbitrary_version_bounds_raise_only_unit_error(text: str) -> None:
    with contextlib.suppress(UnitError):
        parse_version_requirement(text)
