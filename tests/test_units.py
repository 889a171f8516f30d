from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_cluster.contract.requirement import parse_requirement
from pytest_cluster.errors import UnitError
from pytest_cluster.units import (
    EXPECTED_DURATION,
    MAX_DURATION_S,
    Dim,
    format_number,
    format_value,
    parse_bytes,
    parse_duration,
    parse_quantity,
)


@pytest.mark.parametrize(("text", "dim", "value"), [
    ("1.5 TiB", Dim.SIZE, 1.5 * 2**40),
    ("100 TB", Dim.SIZE, 100e12),
    ("512MiB", Dim.SIZE, 512 * 2**20),
    ("1 kB", Dim.SIZE, 1000.0),
    ("10 GB/s", Dim.RATE, 10e9),
    ("400 Gb/s", Dim.RATE, 50e9),
    ("400 Gbps", Dim.RATE, 50e9),
    ("1 Gbit/s", Dim.RATE, 0.125e9),
    ("3.35 TB/s", Dim.RATE, 3.35e12),
    ("2 GiB/s", Dim.RATE, 2 * 2**30),
    ("5 s", Dim.TIME, 5.0),
    ("200 ms", Dim.TIME, 0.2),
    ("2 min", Dim.TIME, 120.0),
    ("1 h", Dim.TIME, 3600.0),
    ("989 TFLOPS", Dim.FLOPS, 989e12),
    ("20000 ops/s", Dim.OPS, 20000.0),
    ("95%", Dim.FRACTION, 0.95),
    ("0.8", Dim.FRACTION, 0.8),
    (0.8, Dim.FRACTION, 0.8),
    (192, Dim.COUNT, 192.0),
    ("192", Dim.COUNT, 192.0),
])
def test_parse_quantity(text: object, dim: Dim, value: float) -> None:
    assert parse_quantity(text, dim).value == pytest.approx(value)


@pytest.mark.parametrize(("raw", "dim", "message"), [
    ("10 gigs", Dim.RATE, "expected a rate like '10 GB/s', got '10 gigs' (unknown unit 'gigs'; "
     "known units: MB/s, GB/s, TB/s, MiB/s, GiB/s (bytes); Mb/s, Gb/s, Gbps, Tb/s (bits))"),
    ("10 gb/s", Dim.RATE, "expected a rate like '10 GB/s', got '10 gb/s' "
     "(unknown unit 'gb/s'; did you mean 'GB/s'?)"),
    ("10", Dim.RATE, "expected a rate like '10 GB/s', got '10' (a number needs a unit)"),
    (10, Dim.SIZE, "expected a size like '1.5 TiB', got 10 (a number needs a unit)"),
    ("10 GB", Dim.RATE, "expected a rate like '10 GB/s', got '10 GB' (that is a size)"),
    ("150%", Dim.FRACTION, "expected a fraction like '95%' or 0.95 (between 0% and 100%), "
     "got '150%'"),
    (True, Dim.COUNT, "expected a count like 192, got True"),
    ("nan s", Dim.TIME, "expected a time like '5 s', got 'nan s'"),
    ([1], Dim.TIME, "expected a time like '5 s', got [1]"),
])
def test_parse_errors_are_exact(raw: object, dim: Dim, message: str) -> None:
    with pytest.raises(UnitError) as info:
        parse_quantity(raw, dim)
    assert str(info.value) == message


NOT_DECIMAL = " (not a decimal number: write it without a leading 0, 0x, '_' or ':')"


@pytest.mark.parametrize(("raw", "dim", "message"), [
    ("\uff11 TiB", Dim.SIZE, "expected a size like '1.5 TiB', got '\uff11 TiB' (written with "
     "U+FF11 FULLWIDTH DIGIT ONE: a number's digits are 0-9)"),
    ("\u0661\u0660 GB/s", Dim.RATE, "expected a rate like '10 GB/s', got '\u0661\u0660 GB/s' "
     "(written with U+0661 ARABIC-INDIC DIGIT ONE, U+0660 ARABIC-INDIC DIGIT ZERO: a "
     "number's digits are 0-9)"),
    ("1\u00b2", Dim.COUNT, "expected a count like 192, got '1\u00b2' (written with U+00B2 "
     "SUPERSCRIPT TWO: a number's digits are 0-9)"),
    ("010", Dim.COUNT, f"expected a count like 192, got '010'{NOT_DECIMAL}"),
    ("0x70", Dim.COUNT, f"expected a count like 192, got '0x70'{NOT_DECIMAL}"),
    ("0o10", Dim.COUNT, f"expected a count like 192, got '0o10'{NOT_DECIMAL}"),
    ("1:52", Dim.COUNT, f"expected a count like 192, got '1:52'{NOT_DECIMAL}"),
    ("1:30", Dim.TIME, f"expected a time like '5 s', got '1:30'{NOT_DECIMAL}"),
    ("20_000 ops/s", Dim.OPS, "expected a operation rate like '20000 ops/s', got "
     f"'20_000 ops/s'{NOT_DECIMAL}"),
    ("01.5 TiB", Dim.SIZE, f"expected a size like '1.5 TiB', got '01.5 TiB'{NOT_DECIMAL}"),
])
def test_a_number_not_in_decimal_digits_is_refused_as_written(raw: str, dim: Dim,
                                                               message: str) -> None:
    """Only 0-9 in decimal: a full-width or Arabic-Indic digit (which float() reads) read
    '>= \uff11 TiB' as 1 TiB; 010, 0x70, 1:52 and 1_000, which YAML 1.1 read as numbers,
    reach here as written (contract/reading/compose.py) and are refused, not read as 10 or 1000."""
    with pytest.raises(UnitError) as info:
        parse_quantity(raw, dim)
    assert str(info.value) == message


@pytest.mark.parametrize(("raw", "dim", "shown"), [
    (999_999_999_999_999, Dim.COUNT, "999999999999999"),
    (">= 999999999999999", Dim.COUNT, "999999999999999"),
    ("123456789012345 B", Dim.SIZE, "123456789012345 B"),
    ("1.50000000000000000000 TiB", Dim.SIZE, "1.5 TiB"),
    ("999 PiB", Dim.SIZE, "999 PiB"),
    (0.000001, Dim.FRACTION, "0.0001%"),
])
def test_a_number_a_double_holds_is_read_and_shown_as_written(raw: object, dim: Dim,
                                                               shown: str) -> None:
    """Up to 15 significant digits, below 1e15 as written before the unit: what a double
    holds exactly, so the bound a failure shows is the number written (38 nines showed as
    99999999999999997748809823456034029568; now refused, contract/test_clauses.py)."""
    requirement = parse_requirement(raw, dim)
    assert requirement.show(requirement.bound.value) == shown


@pytest.mark.parametrize(("value", "text"), [
    (4.1, "4.1"), (10.0, "10"), (20000.0, "20000"), (0.0123, "0.0123"), (0, "0"),
    (123456.7, "123457"), (341.23, "341.2"),
])
def test_format_number(value: float, text: str) -> None:
    assert format_number(value) == text


def test_format_value_uses_the_given_unit() -> None:
    assert format_value(4.1e9, Dim.RATE, "GB/s") == "4.1 GB/s"
    assert format_value(50e9, Dim.RATE, "Gb/s") == "400 Gb/s"
    assert format_value(0.95, Dim.FRACTION) == "95%"
    assert format_value(2**40, Dim.SIZE, "TiB") == "1 TiB"


@given(st.one_of(st.text(max_size=30), st.integers(), st.floats(), st.booleans(), st.none()),
       st.sampled_from(list(Dim)))
def test_arbitrary_input_raises_only_unit_error(raw: object, dim: Dim) -> None:
    try:
        quantity = parse_quantity(raw, dim)
    except UnitError:
        return
    assert quantity.dim is dim


@pytest.mark.parametrize(("text", "shown"), [
    ("3.5 B", "3.5 B"), ("0.1 KiB", "102.4 B"), ("1e-3 B", "0.001 B"),
    ("1.0000001 KB", "1000.0001 B"),
])
def test_a_byte_count_with_a_fraction_is_refused_as_written(text: str, shown: str) -> None:
    """A size that counts bytes (a message, a block, a file) was int() of its value: 3.5 B
    was used as 3 B, 0.1 KiB as 102 B, 1e-3 B as 0, in silence."""
    with pytest.raises(UnitError) as caught:
        parse_bytes(text)
    assert str(caught.value) == (f"expected a whole number of bytes like '4 KiB', got "
                                 f"{text!r} (that is {shown}: a byte count has no fraction)")


@pytest.mark.parametrize(("text", "count"), [
    ("8 B", 8), ("1.5 KiB", 1536), ("1.1 GB", 1_100_000_000), ("0.5 MB", 500_000),
    ("64 KiB", 65536), ("1e3 B", 1000), ("1.000001 MB", 1_000_001), ("2.5 TiB", 5 * 2**39),
])
def test_a_whole_byte_count_is_read_exactly(text: str, count: int) -> None:
    """Whole as written, in exact arithmetic: 1.1 GB is 1,100,000,000 B though 1.1 x 1e9
    is not that in floats."""
    assert parse_bytes(text) == count and isinstance(parse_bytes(text), int)


@pytest.mark.parametrize(("raw", "seconds"), [
    ("24h", 86400.0), ("24 h", 86400.0), ("30 min", 1800.0), ("30min", 1800.0),
    ("90 s", 90.0), ("3600", 3600.0), (" 1e3 ", 1000.0), ("2.5 h", 9000.0),
    ("366 h", 366 * 3600.0),
])
def test_a_duration_is_a_time_with_its_unit_or_plain_seconds(raw: str, seconds: float) -> None:
    assert parse_duration(raw) == seconds


@pytest.mark.parametrize(("raw", "why"), [
    ("", "got an empty value"), ("  ", "got an empty value"), ("0", "got '0'"),
    ("0 s", "got '0 s'"), ("-5 min", "(a time cannot be negative)"),
    ("24 d", "(unknown unit 'd'; known units: ms, s, min, h)"),
    ("2 H", "did you mean 'h'?"), ("nan", "got 'nan'"), ("inf", "got 'inf'"),
    ("1:30", "not a decimal number"), ("367 days", "unknown unit 'days'"),
    (f"{MAX_DURATION_S + 1:.0f}", f"got '{MAX_DURATION_S + 1:.0f}'"),
    ("1e400 s", "too large"), ("\x1b[2J5 s", "\\x1b"),
])
def test_a_duration_that_is_none_says_what_was_expected(raw: str, why: str) -> None:
    with pytest.raises(UnitError, match=r"^expected a duration") as caught:
        parse_duration(raw)
    said = str(caught.value)
    assert said.startswith(EXPECTED_DURATION) and why in said
    assert said.isprintable() and len(said) < 400
