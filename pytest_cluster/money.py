"""Money as a contract counts it: `decimal`, each amount rounded once, half up, to its
currency's minor unit (ISO 4217: cents for USD and EUR, none for JPY, fils for KWD), and
prices bounded so that no figure becomes infinite or hundreds of digits long."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from pytest_cluster.errors import UnitError
from pytest_cluster.units import foreign_digits

#: The currencies of ISO 4217's list one (2025), funds included, without the codes that
#: name no money a node-hour is priced in (XXX, XTS, the metals XAU/XAG/XPT/XPD, XDR,
#: XSU, XUA and the bond-market units). An allowlist: BTC or a typo is no currency here.
_ISO_4217 = """
AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD
BTN BWP BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK DOP DZD
EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD
IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL
MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN
PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN
SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES
VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG
"""
CURRENCIES = frozenset(_ISO_4217.split())
#: ISO 4217 currencies whose minor unit is not 2 decimal places; every other one has 2.
MINOR_UNIT = {
    **dict.fromkeys(("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF",
                     "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF"), 0),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    **dict.fromkeys(("CLF", "UYW"), 4),
}
#: The dearest node-hour a spec may state; above it the value is a slip, not a price.
MAX_PRICE = Decimal(1_000_000)
_PRICE = re.compile(r"^[0-9]{1,7}(\.[0-9]{1,6})?$")
_DIGITS = re.compile(r"^(0|[1-9][0-9]*)(\.[0-9]+)?$")  # as written: no leading 0 (010)
_CODE = re.compile(r"^[A-Z]{3}$")
#: Decimal places a share may be written with, in percent ('99.999999%').
SHARE_PLACES = 6


def currency(raw: object) -> str:
    """An ISO 4217 code from CURRENCIES."""
    if raw is None:
        raise UnitError("expected an ISO 4217 code like USD or EUR, got no value (leave the "
                        "key out for USD)")
    if isinstance(raw, str) and raw in CURRENCIES:
        return raw
    if isinstance(raw, str) and raw.strip().upper() in CURRENCIES:
        raise UnitError(f"expected an ISO 4217 code like USD or EUR, got {raw[:40]!r} (did "
                        f"you mean {raw.strip().upper()}?)")
    why = (" (not an ISO 4217 currency)" if isinstance(raw, str) and _CODE.match(raw)
           else "")
    shown = repr(raw[:40]) if isinstance(raw, str) else repr(raw)[:40]
    raise UnitError(f"expected an ISO 4217 code like USD or EUR, got {shown}{why}")


def share_of(written: str, percent: bool) -> Decimal:
    """A share as the decimal it was written as: '99.5' with `percent` is 0.995, exactly
    (never through a float). UnitError past SHARE_PLACES decimal places of a percent."""
    value = Decimal(written)
    if percent:
        value = value.scaleb(-2)
    if value.normalize().as_tuple().exponent < -(SHARE_PLACES + 2):  # type: ignore[operator]
        raise UnitError(f"expected at most {SHARE_PLACES} decimal places of a percent, "
                        f"got {written[:40]}{'%' if percent else ''}")
    return value.normalize() if value else Decimal(0)


def percent(share: Decimal) -> str:
    """A share written as a percent, exactly: Decimal('0.995') is '99.5 %'."""
    return text(share.scaleb(2)) + " %"


def minor_unit(currency: str) -> Decimal:
    """The smallest amount of `currency` that is owed: Decimal('0.01') for USD."""
    return Decimal(1).scaleb(-MINOR_UNIT.get(currency, 2))


def rounded(amount: Decimal, currency: str) -> Decimal:
    """`amount` rounded half up to the currency's minor unit (the one rounding)."""
    return amount.quantize(minor_unit(currency), ROUND_HALF_UP)


def text(amount: Decimal) -> str:
    """An exact amount written out in full, never in exponent form: '0.001046', '30'."""
    return format(amount.normalize(), "f")


def price(raw: object) -> Decimal:
    """A price per node-hour from the spec (a number, or a string of digits), above 0 and
    at most MAX_PRICE, with at most 6 decimal places."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise UnitError(f"expected a price above 0 like 2.49, got {raw!r}"[:200])
    written = repr(raw) if isinstance(raw, float) else str(raw).strip()
    if isinstance(raw, str) and not _DIGITS.match(written):
        raise UnitError(f"expected a price written in plain digits like 2.49 (no sign, no "
                        f"exponent, no separator, no leading 0), got {raw[:40]!r}"
                        f"{foreign_digits(raw)}")
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
                        f"{text(value)[:40]}")
    return value
