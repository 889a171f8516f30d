"""The `sla:` section and the arithmetic of availability and credits (issue 15, item 6):
outages shorter than down_after do not count, the lowest tier that applies is owed, every
figure comes with its arithmetic."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_cluster.errors import SpecError, UnitError
from pytest_cluster.money import price, rounded
from pytest_cluster.sla import (
    FAILED,
    HEALTHY,
    UNREACHABLE,
    Span,
    cluster_availability,
    node_availability,
    outages,
    settle,
    tier_for,
)
from pytest_cluster.spec import parse_spec
from pytest_cluster.spec.model import CreditTier, SlaSpec

BASE = "cluster: {name: c, nodes: 'n[1-2]', launcher: sim}\nhost: {cpu_cores: 1}\nsim: {}\n"
SLA = """\
sla:
  uptime: 99.5%
  down_after: 5 min
  price_per_node_hour: 2.5
  currency: EUR
  credits:
    - {below: 99.5%, credit: 10%}
    - {below: 99%, credit: 25%}
    - {below: 95%, credit: 100%}
"""


def test_the_section_parses_as_written() -> None:
    sla = parse_spec(BASE + SLA, "t.yaml").sla
    assert sla is not None
    assert (sla.uptime, sla.down_after_s, sla.price_per_node_hour, sla.currency, sla.line) \
        == (0.995, 300.0, Decimal("2.5"), "EUR", 5)
    assert [(t.below, t.credit) for t in sla.credits] == [
        (0.995, 0.10), (0.99, 0.25), (pytest.approx(0.95), 1.0)]
    assert parse_spec(BASE, "t.yaml").sla is None


@pytest.mark.parametrize(("text", "message"), [
    ("sla: {uptime: 99.5%, credits: [{below: 99%, credit: 10%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: missing: what a node-hour costs, e.g. 2.49"),
    ("sla: {uptime: 99.5%, price_per_node_hour: -1, credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price above 0 like 2.49, got -1"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1, currency: dollars, "
     "credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.currency: expected an ISO 4217 code like USD or EUR, got 'dollars'"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1}\n",
     "t.yaml:4: sla.credits: missing: the credit per availability tier, e.g. [{below: "
     "99.5%, credit: 10%}, {below: 99%, credit: 25%}]"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1, credits: []}\n",
     "t.yaml:4: sla.credits: expected a list of {below, credit} tiers, got an empty list"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1, credits: [{below: 99%, credit: 25%}, "
     "{below: 99.5%, credit: 10%}]}\n",
     "t.yaml:4: sla.credits[1]: expected tiers from the highest threshold down, each lower "
     "threshold owing a larger credit: below 99.50% credit 10% comes after below 99.00% "
     "credit 25%"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1, credits: [{below: 99%}]}\n",
     "t.yaml:4: sla.credits[0].credit: missing: a share of the fees like '10%'"),
    ("sla: {uptime: 99.5%, price_per_node_hour: .inf, credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price above 0 like 2.49, got inf"),
    ("sla: {uptime: 99.5%, price_per_node_hour: .nan, credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price above 0 like 2.49, got nan"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1.0e+308, credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price of at most 1000000 per node-hour, "
     "got 1e+308"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 0.0000001, "
     "credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price with at most 6 decimal places like "
     "2.49, got 1e-07"),
    ("sla: {uptime: 99%, price_per_node_hour: 1, credits: [{below: 99.5%, credit: 10%}, "
     "{below: 95%, credit: 50%}]}\n",
     "t.yaml:4: sla.credits[0].below: expected at most the promised uptime 99.00%: a tier "
     "below 99.50% can never apply (a node at or above the uptime is owed nothing)"),
])
def test_bad_sla_sections_are_named(text: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(BASE + text, "t.yaml")
    assert str(caught.value) == message


SPEC = SlaSpec(0.995, 300.0, Decimal("2.5"), "EUR",
               (CreditTier(0.995, 0.10), CreditTier(0.99, 0.25), CreditTier(0.95, 1.0)))
HOUR = 3600.0


def test_short_blips_are_not_downtime_and_adjacent_failures_join() -> None:
    spans = [Span(0, 100, HEALTHY), Span(100, 200, FAILED),  # 100 s: a blip
             Span(200, 1000, HEALTHY), Span(1000, 1200, UNREACHABLE),
             Span(1200, 1400, FAILED),  # 400 s down in one stretch
             Span(1400, 2000, HEALTHY)]
    assert outages(spans, 300) == [(1000, 1400)]
    assert outages(spans, 0) == [(100, 200), (1000, 1400)]
    gap = [Span(0, 200, FAILED), Span(500, 700, FAILED)]  # nothing recorded between
    assert outages(gap, 300) == []


def test_a_node_down_two_hours_of_48_owes_its_tier_with_the_arithmetic() -> None:
    window = (0.0, 48 * HOUR)
    timelines = {"n1": [Span(0, 48 * HOUR, HEALTHY)],
                 "n2": [Span(0, 10 * HOUR, HEALTHY), Span(10 * HOUR, 12 * HOUR, UNREACHABLE),
                        Span(12 * HOUR, 48 * HOUR, HEALTHY)]}
    found, settlement = settle(timelines, window, SPEC)
    n1, n2 = found
    assert (n1.down_s, n1.availability) == (0.0, 1.0)
    assert n2.node_hours_lost == 2.0 and n2.availability == pytest.approx(46 / 48)
    first, second = settlement.credits
    assert first.owed == 0 and first.arithmetic == (
        "n1: down 0.00 h of 48.00 h = 100 % available, meets the promised 99.5 %: no credit")
    assert second.tier == CreditTier(0.99, 0.25)  # 95.83 %: below 99 %, not below 95 %
    assert second.owed == Decimal("30.00")
    assert second.arithmetic == ("n2: down 2.00 h of 48.00 h = 95.833 % available, below "
                                 "99 %: 25 % of 48 node-hours x 2.5 EUR = 30.00 EUR")
    assert settlement.total_line() == "credit owed: 30.00 = 30.00 EUR (1 of 2 node(s))"
    assert cluster_availability(found) == pytest.approx(94 / 96)


def test_an_outage_is_clipped_to_the_window() -> None:
    found = node_availability("n1", [Span(-HOUR, HOUR, FAILED)], (0.0, 10 * HOUR), 300)
    assert found.outages == ((0.0, HOUR),) and found.down_s == HOUR


@given(st.floats(min_value=0.0, max_value=1.0))
def test_the_tier_is_the_lowest_that_applies(availability: float) -> None:
    tier = tier_for(availability, SPEC)
    if availability >= 0.995:
        assert tier is None
    else:
        assert tier is not None and availability < tier.below
        assert all(not availability < t.below for t in SPEC.credits if t.below < tier.below)


def test_two_half_cents_are_each_a_cent_and_the_total_is_their_sum() -> None:
    """The tester's 0.01 + 0.01 = 0.01 EUR: each node rounded once, the total their sum."""
    sla = SlaSpec(0.999, 0.0, Decimal("0.1"), "EUR", (CreditTier(0.999, 0.5),))
    hour = [Span(0, 3000, HEALTHY), Span(3000, 3600, FAILED)]  # 83.3 %: 0.05 x 0.1 h
    _, settlement = settle({"n1": hour, "n2": hour}, (0.0, 3600.0), sla)
    assert [c.owed for c in settlement.credits] == [Decimal("0.05"), Decimal("0.05")]
    assert settlement.total_line() == "credit owed: 0.05 + 0.05 = 0.10 EUR (2 of 2 node(s))"
    third = SlaSpec(0.999, 0.0, Decimal("0.03"), "EUR", (CreditTier(0.999, 0.5),))
    _, settlement = settle({"n1": hour, "n2": hour}, (0.0, 3600.0), third)
    assert settlement.credits[0].arithmetic.endswith(
        "below 99.9 %: 50 % of 1 node-hours x 0.03 EUR = 0.015, rounded to 0.02 EUR")
    assert settlement.total_line() == "credit owed: 0.02 + 0.02 = 0.04 EUR (2 of 2 node(s))"


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


_PART = re.compile(r"^credit owed: (?P<parts>.+) = (?P<total>[0-9.]+) (?P<cur>[A-Z]{3}) ")

TIERS = st.lists(st.tuples(st.integers(1, 9999), st.integers(1, 100)), min_size=1,
                 max_size=4, unique_by=lambda t: t[0])


@st.composite
def _contracts(draw: st.DrawFn) -> SlaSpec:
    raw = sorted(draw(TIERS), reverse=True)  # thresholds in basis points, highest first
    credits = sorted({c for _, c in raw})
    tiers = tuple(CreditTier(below / 10000, credit / 100)
                  for (below, _), credit in zip(raw, credits, strict=False))
    uptime = draw(st.integers(raw[0][0], 10000)) / 10000
    cents = draw(st.integers(1, 10**8))  # up to 1,000,000.00 a node-hour
    currency = draw(st.sampled_from(["USD", "EUR", "JPY", "KWD"]))
    return SlaSpec(uptime, draw(st.sampled_from([0.0, 60.0, 300.0])),
                   Decimal(cents).scaleb(-2), currency, tiers)


@st.composite
def _timelines(draw: st.DrawFn) -> dict[str, list[Span]]:
    nodes = draw(st.integers(1, 15))
    found = {}
    for index in range(nodes):
        cuts = sorted(draw(st.lists(st.floats(0, 172800, allow_nan=False), max_size=8)))
        edges = [0.0, *cuts, 172800.0]
        states = draw(st.lists(st.sampled_from([HEALTHY, FAILED, UNREACHABLE]),
                               min_size=len(edges) - 1, max_size=len(edges) - 1))
        found[f"n{index}"] = [Span(a, b, s) for a, b, s in zip(edges, edges[1:], states,
                                                                strict=False)]
    return found


@given(_contracts(), _timelines())
def test_every_printed_sum_adds_up(sla: SlaSpec, timelines: dict[str, list[Span]]) -> None:
    """Whatever the timelines, tiers and price: each node's credit is its arithmetic's
    last figure, rounded once to the currency's unit, and the total line's parts add up
    to its total exactly as printed."""
    _, settlement = settle(timelines, (0.0, 172800.0), sla)
    unit = Decimal(1).scaleb(-{"JPY": 0, "KWD": 3}.get(sla.currency, 2))
    for each in settlement.credits:
        assert each.owed == each.owed.quantize(unit)
        assert each.arithmetic.endswith(f" {sla.currency}") or each.owed == 0
        if each.owed:
            assert each.arithmetic.rsplit(" ", 2)[-2] == str(each.owed)
            exact = each.node_hours * sla.price_per_node_hour * Decimal(repr(
                each.tier.credit if each.tier else 0))
            assert abs(exact - each.owed) <= unit / 2
    line = settlement.total_line()
    assert len(line) < 400
    match = _PART.match(line)
    if match is None:
        assert not settlement.owes and line.startswith("no credit owed")
        return
    total = Decimal(match["total"])
    assert total == settlement.owed == sum(c.owed for c in settlement.credits)
    if "+" in match["parts"] or match["parts"].replace(".", "").isdigit():
        assert sum(Decimal(p) for p in match["parts"].split(" + ")) == total


def test_credits_that_round_to_nothing_say_so() -> None:
    sla = SlaSpec(0.999, 0.0, Decimal("0.01"), "USD", (CreditTier(0.999, 0.1),))
    short = [Span(0, 3000, HEALTHY), Span(3000, 3600, FAILED)]
    _, settlement = settle({"n1": short, "n2": [Span(0, 3600, HEALTHY)]}, (0.0, 3600.0), sla)
    assert not settlement.owes
    assert settlement.total_line() == (
        "no credit owed (0.00 USD): 1 node(s) fell below a credit tier, but each one's credit "
        "rounds to less than 0.01 USD")
    _, settlement = settle({"n2": [Span(0, 3600, HEALTHY)]}, (0.0, 3600.0), sla)
    assert settlement.total_line() == "no credit owed: no node fell below a credit tier " \
                                      "(0.00 USD)"
