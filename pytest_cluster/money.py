"""Money as a contract counts it: `decimal`, each amount rounded once, half up, to its
currency's minor unit (ISO 4217: cents for USD and EUR, none for JPY, fils for KWD), and
prices bounded so that no figure becomes infinite or hundreds of digits long."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from pytest_cluster.errors import UnitError

#: ISO 4217 currencies whose minor unit is not 2 decimal places; every other one has 2.
MINOR_UNIT = {
    **dict.fromkeys(("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF",
                     "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF"), 0),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    **dict.fromkeys(("CLF", "UYW"), 4),
}
#: The dearest node-hour a spec may state; above it the value is a slip, not a price.
MAX_PRICE = Decimal(1_000_000)
_PRICE = re.compile(r"^\d{1,7}(\.\d{1,6})?$")
_DIGITS = re.compile(r"^\d+(\.\d+)?$")


def minor_unit(currency: str) -> Decimal:
    """The smallest amount of `currency` that is owed: Decimal('0.01') for USD."""
    return Decimal(1).scaleb(-MINOR_UNIT.get(currency, 2))


def rounded(amount: Decimal, currency: str) -> Decimal:
    """`amount` rounded half up to the currency's minor unit (the one rounding)."""
    return amount.quantize(minor_unit(currency), ROUND_HALF_UP)


def text(amount: Decimal) -> str:
    """An exact amount written out in full, never in exponent form: '0.001046', '30'."""
    return format(amount.normalize(), "f")


def share(fraction: float) -> Decimal:
    """A share of the spec (10 % is 0.1) as the decimal it was written as."""
    return Decimal(repr(fraction))


def price(raw: object) -> Decimal:
    """A price per node-hour from the spec (a number, or a string of digits), above 0 and
    at most MAX_PRICE, with at most 6 decimal places."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise UnitError(f"expected a price above 0 like 2.49, got {raw!r}"[:200])
    written = repr(raw) if isinstance(raw, float) else str(raw).strip()
    if isinstance(raw, str) and not _DIGITS.match(written):
        raise UnitError(f"expected a price above 0 like 2.49, got {raw[:40]!r}")
    try:
        value = Decimal(written)
    except InvalidOperation:
        value = Decimal("NaN")
    if not value.is_finite() or not value > 0:
        raise UnitError(f"expected a price above 0 like 2.49, got {raw!r}"[:200])
    if value > MAX_PRICE:
        raise UnitError(f"expected a price of at most {MAX_PRICE} per node-hour, got "
                        f"{written[:40]}")
    if not _PRICE.match(text(value)):
        raise UnitError(f"expected a price with at most 6 decimal places like 2.49, got "
                        f"{written[:40]}")
    return value
