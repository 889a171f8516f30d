"""money.py: amounts in Decimal, each rounded once to its currency's minor unit; prices bounded."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pytest_cluster.errors import UnitError
from pytest_cluster.money import (
    currency,
    minor_unit,
    percent,
    price,
    rounded,
    share_of,
    text,
)


def test_a_currency_without_cents_is_rounded_to_its_own_unit() -> None:
    assert rounded(Decimal("1234.5"), "JPY") == Decimal("1235")
    assert str(rounded(Decimal("0.0005"), "KWD")) == "0.001"
    assert str(rounded(Decimal("0.004"), "USD")) == "0.00"


@pytest.mark.parametrize("raw", [True, None, [], "2,49", "1e3", float("inf"), -0.0, 0])
def test_a_price_is_a_plain_positive_number(raw: object) -> None:
    with pytest.raises(UnitError):
        price(raw)


def test_a_price_keeps_the_digits_it_was_written_with() -> None:
    assert price(2.49) == Decimal("2.49") and price("0.1") == Decimal("0.1")
    assert price(20000) == Decimal(20000)


@pytest.mark.parametrize(("amount", "currency", "owed"), [
    ("0.005", "USD", "0.01"), ("0.015", "EUR", "0.02"), ("0.025", "USD", "0.03"),
    ("0.0049999", "USD", "0.00"), ("2.5", "JPY", "3"), ("0.0015", "KWD", "0.002"),
    ("0.00005", "CLF", "0.0001")])
def test_an_amount_is_rounded_half_up_never_to_even(amount: str, currency: str,
                                                     owed: str) -> None:
    assert str(rounded(Decimal(amount), currency)) == owed


def test_the_minor_unit_is_the_currencys_own() -> None:
    assert [str(minor_unit(code)) for code in ("USD", "JPY", "KWD", "CLF")] == [
        "0.01", "1", "0.001", "0.0001"]


@pytest.mark.parametrize(("raw", "message"), [
    (None, "expected an ISO 4217 code like USD or EUR, got no value (leave the key out for "
           "USD)"),
    ("usd ", "expected an ISO 4217 code like USD or EUR, got 'usd ' (did you mean USD?)"),
    ("BTC", "expected an ISO 4217 code like USD or EUR, got 'BTC' (not an ISO 4217 "
            "currency)"),
    ("dollars", "expected an ISO 4217 code like USD or EUR, got 'dollars'"),
    (840, "expected an ISO 4217 code like USD or EUR, got 840"),
])
def test_a_currency_that_is_not_an_iso_code_is_refused_saying_why(raw: object,
                                                                    message: str) -> None:
    with pytest.raises(UnitError) as info:
        currency(raw)
    assert str(info.value) == message


def test_a_currency_of_the_list_is_kept() -> None:
    assert currency("JPY") == "JPY"


def test_a_share_is_the_decimal_it_was_written_as() -> None:
    assert share_of("99.5", percent=True) == Decimal("0.995")
    assert share_of("0.25", percent=False) == Decimal("0.25")
    assert share_of("0", percent=True) == Decimal(0)
    assert percent(Decimal("0.995")) == "99.5 %"
    assert share_of("99.999999", percent=True) == Decimal("0.99999999")
    with pytest.raises(UnitError) as info:
        share_of("99.9999999", percent=True)
    assert str(info.value) == ("expected at most 6 decimal places of a percent, got "
                               "99.9999999%")


@pytest.mark.parametrize(("raw", "message"), [
    ("1000001", "expected a price of at most 1000000 per node-hour, got 1000001"),
    ("0.1234567", "expected a price with at most 6 decimal places like 2.49, got 0.1234567"),
    ("02.5", "expected a price written in plain digits like 2.49 (no sign, no exponent, no "
             "separator, no leading 0), got '02.5'"),
])
def test_a_price_out_of_bounds_is_refused_saying_the_bound(raw: str, message: str) -> None:
    with pytest.raises(UnitError) as info:
        price(raw)
    assert str(info.value) == message


def test_an_amount_is_written_in_full_never_in_exponent_form() -> None:
    assert text(Decimal("1.046E-3")) == "0.001046"
    assert text(Decimal("3E+1")) == "30"
