"""Quantities with units: parsing, formatting, conversion to base units.

Base units: bytes, bytes/s, seconds, FLOP/s, ops/s, fraction (0..1) and plain counts.
GB/s is 1e9 bytes/s; Gb/s is 1e9 bits/s (1.25e8 bytes/s); GiB is 2**30 bytes.
"""

from __future__ import annotations

import enum
import math
import re
import sys
import time
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

from pytest_cluster.errors import UnitError, log_line


class Dim(enum.Enum):
    """A physical dimension; `example` is shown in error messages; `minimum` is the least
    value there is: 0 for all but a temperature (absolute zero), so a negative size, time,
    rate or count (and any bound on one) is refused wherever it is written."""

    SIZE = ("size", "'1.5 TiB'")
    RATE = ("rate", "'10 GB/s'")
    TIME = ("time", "'5 s'")
    FLOPS = ("compute rate", "'800 TFLOPS'")
    OPS = ("operation rate", "'20000 ops/s'")
    FRACTION = ("fraction", "'95%' or 0.95")
    COUNT = ("count", "192")
    TEMPERATURE = ("temperature", "'85 C'", -273.15)
    POWER = ("power", "'700 W'")
    EVENTS = ("rate of events", "'10 /h'")  # errors counted per second

    def __init__(self, label: str, example: str, minimum: float = 0.0) -> None:
        self.label = label
        self.example = example
        self.minimum = minimum


_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}


def _unit_table() -> dict[str, tuple[Dim, float]]:
    table: dict[str, tuple[Dim, float]] = {}
    for prefix, factor in {**_DECIMAL, **_BINARY}.items():
        table[f"{prefix}B"] = (Dim.SIZE, factor)
        table[f"{prefix}B/s"] = (Dim.RATE, factor)
    for prefix, factor in _DECIMAL.items():
        if prefix:
            table[f"{prefix}b/s"] = (Dim.RATE, factor / 8)
            table[f"{prefix}bps"] = (Dim.RATE, factor / 8)
            table[f"{prefix}bit/s"] = (Dim.RATE, factor / 8)
    table["bit/s"] = (Dim.RATE, 1 / 8)
    for name, seconds in {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
                          "min": 60.0, "h": 3600.0}.items():
        table[name] = (Dim.TIME, seconds)
    for prefix in ("G", "T", "P"):
        table[f"{prefix}FLOPS"] = (Dim.FLOPS, _DECIMAL[prefix])
        table[f"{prefix}FLOP/s"] = (Dim.FLOPS, _DECIMAL[prefix])
    table["ops/s"] = (Dim.OPS, 1.0)
    table["op/s"] = (Dim.OPS, 1.0)
    table["kops/s"] = (Dim.OPS, 1e3)
    table["IOPS"] = (Dim.OPS, 1.0)  # I/O operations per second (a random read's)
    table["kIOPS"] = (Dim.OPS, 1e3)
    table["%"] = (Dim.FRACTION, 0.01)
    table["C"] = (Dim.TEMPERATURE, 1.0)
    table["°C"] = (Dim.TEMPERATURE, 1.0)
    table["W"] = (Dim.POWER, 1.0)
    table["kW"] = (Dim.POWER, 1e3)
    for name, seconds in {"/s": 1.0, "/min": 60.0, "/h": 3600.0, "/day": 86400.0}.items():
        table[name] = (Dim.EVENTS, 1 / seconds)
    return table


UNITS: dict[str, tuple[Dim, float]] = _unit_table()

#: The unit a measured value is shown in when no spec unit is at hand.
DEFAULT_UNIT = {Dim.SIZE: "GiB", Dim.RATE: "GB/s", Dim.TIME: "s", Dim.FLOPS: "TFLOPS",
                Dim.OPS: "ops/s", Dim.FRACTION: "%", Dim.COUNT: "", Dim.TEMPERATURE: "C",
                Dim.POWER: "W", Dim.EVENTS: "/h"}

#: A number of the spec: decimal, in the digits 0-9 (a full-width or Arabic-Indic digit,
#: which float() reads, is not one), no leading 0 (010: YAML 1.1's 8 or YAML 1.2's 10?), no
#: '_' (1_000) or ':' (1:30, YAML 1.1's sexagesimal 90), as contract/reading/compose.py's CORE reads
#: a YAML number.
_NUMBER = r"[+-]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
#: The start of a number written another way than decimal: 010, 0x70, 0o10, 1_000, 1:52.
_NOT_DECIMAL = re.compile(r"\s*[+-]?(?:0[0-9_xXoO]|[0-9]+(?:\.[0-9]*)?[_:][0-9])")
_QUANTITY_RE = re.compile(rf"^\s*({_NUMBER})\s*([A-Za-z%/°]*)\s*$")


@dataclass(frozen=True)
class Quantity:
    """A value in base units, with the unit it was written in (for display)."""

    value: float
    dim: Dim
    unit: str

    def __str__(self) -> str:
        return format_value(self.value, self.dim, self.unit)


#: The most significant digits a number of the spec may have, and the bound its size stays
#: below (as written, before its unit): what a double holds exactly (sys.float_info.dig;
#: every whole number below 1e15 too), so a bound is compared and shown as it was written.
MAX_DIGITS = sys.float_info.dig
LARGEST = 10.0**MAX_DIGITS


def parse_number(text: str) -> float:
    if not re.fullmatch(_NUMBER, text.strip()):
        raise UnitError(f"not a number: {text!r}{misspelled(text)}")
    value = float(text.strip())
    if not math.isfinite(value):
        raise UnitError(f"not a finite number: {text!r}")
    return value


def foreign_digits(text: str) -> str:
    """' (written with U+FF11 FULLWIDTH DIGIT ONE: a number's digits are 0-9)' where `text`
    has digits other than 0-9 (which int() and float() read as theirs), else ''."""
    foreign = list(dict.fromkeys(c for c in text if c.isdigit() and not c.isascii()))
    if not foreign:
        return ""
    named = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'UNNAMED')}" for c in foreign[:3])
    more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
    return f" (written with {named}{more}: a number's digits are 0-9)"


def misspelled(text: str) -> str:
    """Why the number in `text` is not read, where it is written with digits other than
    0-9 (foreign_digits) or not in decimal; else ''."""
    if foreign_digits(text):
        return foreign_digits(text)
    if _NOT_DECIMAL.match(text):
        return " (not a decimal number: write it without a leading 0, 0x, '_' or ':')"
    return ""


def significant_digits(written: str) -> int:
    """The significant digits of a number as written ('0.00120' has 2, '1.5e3' 2)."""
    mantissa = re.split("[eE]", written.strip())[0]
    return len(mantissa.lstrip("+-").replace(".", "").strip("0"))


def _inexact(value: float, written: str, dim: Dim) -> str | None:
    """Why a number of the spec (`value`, spelled `written`, of a quantity of `dim`) would
    not be read as written: at or beyond LARGEST, or more than MAX_DIGITS significant
    digits; None when it is read exactly."""
    if not math.isfinite(value) or abs(value) >= LARGEST:
        larger = any(unit_dim is dim and factor > 1 for unit_dim, factor in UNITS.values())
        return (f"too large: a number of the spec is below 1e{MAX_DIGITS}"
                + ("; write a larger unit" if larger else ""))
    if significant_digits(written) > MAX_DIGITS:
        return (f"more than {MAX_DIGITS} significant digits: a number of the spec is read "
                f"exactly up to {MAX_DIGITS}")
    return None


def parse_quantity(raw: object, dim: Dim) -> Quantity:
    """Parse `raw` (a YAML scalar) as a quantity of dimension `dim`.

    A bare number is accepted only where no unit is needed (counts, fractions).
    """
    expected = f"expected a {dim.label} like {dim.example}"
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise UnitError(f"{expected}, got {raw!r}")
    if isinstance(raw, (int, float)):
        try:
            value = float(raw)
        except OverflowError:  # an int beyond any float
            value = math.inf
        if not math.isfinite(value):
            raise UnitError(f"{expected}, got {raw!r}")
        # an int of a YAML file is exact, a float as Python spells it back (its shortest)
        why = _inexact(value, repr(raw) if abs(value) < LARGEST else "", dim)
        if why is not None:
            raise UnitError(f"{expected}, got {raw!r} ({why})")
        return _unitless(value, dim, raw, expected)
    match = _QUANTITY_RE.match(raw)
    if not match:
        raise UnitError(f"{expected}, got {raw!r}{misspelled(raw)}")
    number_text, unit = match.groups()
    number = float(number_text)  # the pattern matched: a number, or inf
    why = _inexact(number, number_text, dim)
    if why is not None:
        raise UnitError(f"{expected}, got {raw!r} ({why})")
    if not unit:
        return _unitless(number, dim, raw, expected)
    known = UNITS.get(unit)
    if known is None:
        hint = _unit_hint(unit, dim)
        raise UnitError(f"{expected}, got {raw!r} (unknown unit {unit!r}{hint})")
    unit_dim, factor = known
    if unit_dim is not dim:
        raise UnitError(f"{expected}, got {raw!r} (that is a {unit_dim.label})")
    value = number * factor
    if dim is Dim.FRACTION and not 0.0 <= value <= 1.0:
        raise UnitError(f"{expected} (between 0% and 100%), got {raw!r}")
    return _checked(Quantity(value, dim, unit), raw, expected)


#: The longest duration an option takes (--cluster-soak, --cluster-valid-for, the gate's
#: --max-age): beyond a year a value is a slip.
MAX_DURATION_S = 366 * 86400.0
EXPECTED_DURATION = ("expected a duration like '24 h', '30 min' or seconds (3600), above 0 "
                     "and at most 366 days")


def parse_duration(raw: str) -> float:
    """A duration in seconds, written with a unit as the spec writes one ('24h', '30 min',
    '2 h', '90 s': parse_quantity) or as plain seconds ('3600'); above 0 and at most
    MAX_DURATION_S. The one reader of an option's duration; UnitError says what was
    expected and what was given, in one printable line."""
    text = raw.strip()
    if not text:
        raise UnitError(f"{EXPECTED_DURATION}, got an empty value")
    written = f"{text} s" if text[-1].isdigit() or text.endswith(".") else text
    try:
        seconds = parse_quantity(written, Dim.TIME).value
    except UnitError as exc:
        said = str(exc)
        why = said[said.find(" (", said.find(", got")):] if " (" in said else ""
        raise UnitError(f"{EXPECTED_DURATION}, got {log_line(text, 40)!r}"
                        f"{log_line(why, 200)}") from None
    if not 0 < seconds <= MAX_DURATION_S:
        raise UnitError(f"{EXPECTED_DURATION}, got {log_line(text, 40)!r}")
    return seconds


def parse_bytes(raw: object) -> int:
    """A size that counts bytes (a message, a block, a file, memory): parsed as
    parse_quantity does, and a whole number of bytes as written ('3.5 B', '0.1 KiB' and
    '1e-3 B' are refused: read as int() they were 3, 102 and 0 bytes, in silence). Exact:
    the number as written times the unit's factor, in fractions, never in floats."""
    value = parse_quantity(raw, Dim.SIZE).value
    match = _QUANTITY_RE.match(raw) if isinstance(raw, str) else None
    exact = (Fraction(match.group(1)) * Fraction(UNITS[match.group(2)][1])
             if match is not None and match.group(2) in UNITS else Fraction(value))
    if exact.denominator != 1:
        raise UnitError(f"expected a whole number of bytes like '4 KiB', got {raw!r} (that "
                        f"is {float(exact):.15g} B: a byte count has no fraction)")
    return int(exact)


def _unitless(value: float, dim: Dim, raw: object, expected: str) -> Quantity:
    """A number written without a unit: a count or a fraction, else an error."""
    if dim is Dim.COUNT:
        return _checked(Quantity(value, dim, ""), raw, expected)
    if dim is Dim.FRACTION:
        if not 0.0 <= value <= 1.0:
            raise UnitError(f"{expected} (a fraction is between 0 and 1), got {raw!r}")
        return Quantity(value, dim, "")
    raise UnitError(f"{expected}, got {raw!r} (a number needs a unit)")


def _checked(quantity: Quantity, raw: object, expected: str) -> Quantity:
    """The one rule on every quantity's value: finite, not below its dimension's minimum
    (0, or absolute zero), and a count is a whole number."""
    value, dim = quantity.value, quantity.dim
    if not math.isfinite(value):
        raise UnitError(f"{expected}, got {raw!r} (too large)")
    if value < dim.minimum:
        floor = "be negative" if dim.minimum == 0 else "be below absolute zero"
        raise UnitError(f"{expected}, got {raw!r} (a {dim.label} cannot {floor})")
    if dim is Dim.COUNT and value != math.floor(value):
        raise UnitError(f"{expected}, got {raw!r} (a count is a whole number)")
    return quantity


_UNIT_EXAMPLES = {
    Dim.SIZE: "B, kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB",
    Dim.RATE: "MB/s, GB/s, TB/s, MiB/s, GiB/s (bytes); Mb/s, Gb/s, Gbps, Tb/s (bits)",
    Dim.TIME: "ms, s, min, h",
    Dim.FLOPS: "GFLOPS, TFLOPS, PFLOPS",
    Dim.OPS: "ops/s, kops/s",
    Dim.FRACTION: "%",
    Dim.COUNT: "none",
    Dim.TEMPERATURE: "C",
    Dim.POWER: "W, kW",
    Dim.EVENTS: "/s, /min, /h, /day",
}


def _unit_hint(unit: str, dim: Dim) -> str:
    for name, (unit_dim, _) in UNITS.items():
        if unit_dim is dim and name.lower() == unit.lower():
            return f"; did you mean {name!r}?"
    return f"; known units: {_UNIT_EXAMPLES[dim]}"


def format_number(value: float) -> str:
    """Four significant digits, no exponent, no trailing zeros: 4.1, 10, 20000, 0.0123;
    from LARGEST on or below its inverse (no figure of a run, but a value read from
    elsewhere may be), with an exponent (1e+300), never in hundreds of digits."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    if not 1 / LARGEST <= abs(value) < LARGEST:
        return f"{value:.4g}"
    digits = max(0, 3 - math.floor(math.log10(abs(value))))
    text = f"{value:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def format_value(value: float, dim: Dim, unit: str = "") -> str:
    """Format a base-unit value in `unit` (or the dimension's default unit)."""
    unit = unit or DEFAULT_UNIT[dim]
    if not unit:
        return format_number(value)
    factor = UNITS[unit][1]
    sep = "" if unit == "%" else " "
    return f"{format_number(value / factor)}{sep}{unit}"


def format_size(nbytes: float) -> str:
    """A payload for people: 4 GiB, 16 MiB, 512 KiB, 100 B."""
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= factor:
            return f"{format_number(nbytes / factor)} {unit}"
    return f"{format_number(nbytes)} B"


def size_id(nbytes: int) -> str:
    """A payload as a test id: 4GiB, 512MiB, 1536B."""
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes % factor == 0:
            return f"{nbytes // factor}{unit}"
    return f"{nbytes}B"


def utc(stamp: float) -> str:
    """'2026-11-23T21:01:20Z': a time since the epoch, in UTC, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def finite(value: object) -> float | None:
    """`value` as a float when it is a finite real number (not a bool, a string, a list,
    NaN, an infinity or an integer beyond a float), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None
