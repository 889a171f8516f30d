"""The `sla:` section and the arithmetic of availability and credits (issue 15, item 6):
outages shorter than down_after do not count, the lowest tier that applies is owed, every
figure comes with its arithmetic."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.model import CreditTier, SlaSpec
from pytest_cluster.errors import SpecError
from pytest_cluster.evidence.sla import (
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
        == (Decimal("0.995"), 300.0, Decimal("2.5"), "EUR", 5)
    assert [(str(t.below), str(t.credit)) for t in sla.credits] == [
        ("0.995", "0.1"), ("0.99", "0.25"), ("0.95", "1")]
    assert parse_spec(BASE, "t.yaml").sla is None


@pytest.mark.parametrize(("text", "message"), [
    ("sla: {uptime: 99.5%, credits: [{below: 99%, credit: 10%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: missing: what a node-hour costs, e.g. 2.49"),
    ("sla: {uptime: 99.5%, price_per_node_hour: -1, credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price written in plain digits like 2.49 "
     "(no sign, no exponent, no separator, no leading 0), got '-1'"),
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
     "threshold owing a larger credit: below 99.5 % credit 10 % comes after below 99 % "
     "credit 25 %"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1, credits: [{below: 99%}]}\n",
     "t.yaml:4: sla.credits[0].credit: missing: a share of the fees like '10%'"),
    ("sla: {uptime: 99.5%, price_per_node_hour: .inf, credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price written in plain digits like 2.49 "
     "(no sign, no exponent, no separator, no leading 0), got '.inf'"),
    ("sla: {uptime: 99.5%, price_per_node_hour: .nan, credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price written in plain digits like 2.49 "
     "(no sign, no exponent, no separator, no leading 0), got '.nan'"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1.0e+308, credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price written in plain digits like 2.49 "
     "(no sign, no exponent, no separator, no leading 0), got '1.0e+308'"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 0.0000001, "
     "credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price with at most 6 decimal places like "
     "2.49, got 0.0000001"),
    ("sla: {uptime: 99.5%, price_per_node_hour: '1e3', credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price written in plain digits like 2.49 "
     "(no sign, no exponent, no separator, no leading 0), got '1e3'"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1e3, credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price written in plain digits like 2.49 "
     "(no sign, no exponent, no separator, no leading 0), got '1e3'"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 010, credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price written in plain digits like 2.49 "
     "(no sign, no exponent, no separator, no leading 0), got '010'"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 02.5, credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price written in plain digits like 2.49 "
     "(no sign, no exponent, no separator, no leading 0), got '02.5'"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 2.1000000000000001, "
     "credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.price_per_node_hour: expected a price with at most 6 decimal places like "
     "2.49, got 2.1000000000000001"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1, currency: BTC, "
     "credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.currency: expected an ISO 4217 code like USD or EUR, got 'BTC' (not an "
     "ISO 4217 currency)"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1, currency: XXX, "
     "credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.currency: expected an ISO 4217 code like USD or EUR, got 'XXX' (not an "
     "ISO 4217 currency)"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1, currency: eur, "
     "credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.currency: expected an ISO 4217 code like USD or EUR, got 'eur' (did you "
     "mean EUR?)"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1, currency: , "
     "credits: [{below: 99%, credit: 1%}]}\n",
     "t.yaml:4: sla.currency: expected an ISO 4217 code like USD or EUR, got no value (leave "
     "the key out for USD)"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1, credits: [{below: 0%, credit: 10%}]}\n",
     "t.yaml:4: sla.credits[0].below: expected a threshold above 0%: no availability is below "
     "0%, so the tier could never apply, got 0 %"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1, credits: [{below: 99%, credit: 0%}]}\n",
     "t.yaml:4: sla.credits[0].credit: expected a credit above 0%: a tier that owes nothing is "
     "no tier, got 0 %"),
    ("sla: {uptime: 99.5%, price_per_node_hour: 1, "
     "credits: [{below: 99%, credit: 12.12345678%}]}\n",
     "t.yaml:4: sla.credits[0].credit: expected at most 6 decimal places of a percent, got "
     "12.12345678%"),
    ("sla: {uptime: 99%, price_per_node_hour: 1, credits: [{below: 99.5%, credit: 10%}, "
     "{below: 95%, credit: 50%}]}\n",
     "t.yaml:4: sla.credits[0].below: expected at most the promised uptime 99 %: a tier "
     "below 99.5 % can never apply (a node at or above the uptime is owed nothing)"),
])
def test_bad_sla_sections_are_named(text: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(BASE + text, "t.yaml")
    assert str(caught.value) == message


def d(text: str) -> Decimal:
    return Decimal(text)


SPEC = SlaSpec(d("0.995"), 300.0, d("2.5"), "EUR",
               (CreditTier(d("0.995"), d("0.10")), CreditTier(d("0.99"), d("0.25")),
                CreditTier(d("0.95"), d("1"))))
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
    assert (n1.down_s, n1.availability) == (0.0, Decimal(1))
    assert n2.node_hours_lost == 2 and n2.availability == 1 - Decimal(2) / 48
    first, second = settlement.credits
    assert first.owed == 0 and first.arithmetic == (
        "n1: down 0 h of 48 h = 100 % available, meets the promised 99.5 %: no credit")
    assert second.tier == CreditTier(d("0.99"), d("0.25"))  # 95.83 %: below 99 %, not below 95 %
    assert second.owed == Decimal("30.00")
    assert second.arithmetic == ("n2: down 2 h of 48 h = 95.833 % available, below "
                                 "99 %: 25 % of 48 node-hours x 2.5 EUR = 30.00 EUR")
    assert settlement.total_line() == "credit owed: 30.00 = 30.00 EUR (1 of 2 node(s))"
    assert cluster_availability(found) == 1 - Decimal(2) / 96


def test_shares_are_used_and_printed_as_written() -> None:
    """12.3456 % of the fees is 12.3456 %, not a float near it printed as '12.346 %';
    a credit of 0.0296 % is no '0 %'; a node just below the uptime is not printed at it."""
    sla = parse_spec(BASE + SLA.replace("credit: 10%", "credit: 12.3456%").replace(
        "credit: 25%", "credit: 25.0296%"), "t.yaml").sla
    assert sla is not None and sla.credits[0].credit == Decimal("0.123456")
    hour = [Span(0, 3599.99, HEALTHY), Span(3599.99, 3600, FAILED)]
    quick = SlaSpec(d("0.999999"), 0.0, d("100"), "USD", (CreditTier(d("0.999999"),
                                                                      d("0.000296")),))
    _, settlement = settle({"n1": hour}, (0.0, 3600.0), quick)
    assert settlement.credits[0].arithmetic == (
        "n1: down 0.000003 h of 1 h = 99.9997 % available, below 99.9999 %: 0.0296 % of 1 "
        "node-hours x 100 USD = 0.0296, rounded to 0.03 USD")
    _, settlement = settle({"n1": hour}, (0.0, 3600.0), sla)
    assert settlement.credits[0].arithmetic.startswith(
        "n1: down 0 h of 1 h = 100 % available")  # 10 ms is no downtime under down_after
    near = [Span(0, 3582, HEALTHY), Span(3582, 3600, FAILED)]  # 99.5 % exactly: met
    no_blip = SlaSpec(d("0.995"), 0.0, d("1"), "EUR", sla.credits)
    _, settlement = settle({"n1": near}, (0.0, 3600.0), no_blip)
    assert settlement.credits[0].arithmetic == (
        "n1: down 0.005 h of 1 h = 99.5 % available, meets the promised 99.5 %: no credit")
    under = [Span(0, 3581.99, HEALTHY), Span(3581.99, 3600, FAILED)]
    _, settlement = settle({"n1": under}, (0.0, 3600.0), no_blip)
    assert settlement.credits[0].arithmetic.startswith(
        "n1: down 0.005003 h of 1 h = 99.4997 % available, below 99.5 %: 12.3456 % of")


def test_an_outage_is_clipped_to_the_window() -> None:
    found = node_availability("n1", [Span(-HOUR, HOUR, FAILED)], (0.0, 10 * HOUR), 300)
    assert found.outages == ((0.0, HOUR),) and found.down_s == HOUR


def test_a_node_is_judged_over_the_time_it_was_observed_only() -> None:
    """The soak stopped for 2 h and a round that did not judge the node (1 h) count
    neither up nor down: 1 h down of the 7 h observed, not of the 10 h window."""
    spans = [Span(0, 3 * HOUR, HEALTHY), Span(5 * HOUR, 6 * HOUR, FAILED),
             Span(7 * HOUR, 10 * HOUR, HEALTHY)]
    found = node_availability("n1", spans, (0.0, 10 * HOUR), 0)
    assert (found.window_s, found.down_s) == (7 * HOUR, HOUR)
    assert found.availability == 1 - Decimal(1) / 7


@given(st.floats(min_value=0.0, max_value=1.0, allow_subnormal=False))
def test_the_tier_is_the_lowest_that_applies(share: float) -> None:
    availability = Decimal(repr(share))
    tier = tier_for(availability, SPEC)
    if availability >= 0.995:
        assert tier is None
    else:
        assert tier is not None and availability < tier.below
        assert all(not availability < t.below for t in SPEC.credits if t.below < tier.below)


def test_two_half_cents_are_each_a_cent_and_the_total_is_their_sum() -> None:
    """The tester's 0.01 + 0.01 = 0.01 EUR: each node rounded once, the total their sum."""
    sla = SlaSpec(d("0.999"), 0.0, d("0.1"), "EUR", (CreditTier(d("0.999"), d("0.5")),))
    hour = [Span(0, 3000, HEALTHY), Span(3000, 3600, FAILED)]  # 83.3 %: 0.05 x 0.1 h
    _, settlement = settle({"n1": hour, "n2": hour}, (0.0, 3600.0), sla)
    assert [c.owed for c in settlement.credits] == [Decimal("0.05"), Decimal("0.05")]
    assert settlement.total_line() == "credit owed: 0.05 + 0.05 = 0.10 EUR (2 of 2 node(s))"
    third = SlaSpec(d("0.999"), 0.0, d("0.03"), "EUR", (CreditTier(d("0.999"), d("0.5")),))
    _, settlement = settle({"n1": hour, "n2": hour}, (0.0, 3600.0), third)
    assert settlement.credits[0].arithmetic.endswith(
        "below 99.9 %: 50 % of 1 node-hours x 0.03 EUR = 0.015, rounded to 0.02 EUR")
    assert settlement.total_line() == "credit owed: 0.02 + 0.02 = 0.04 EUR (2 of 2 node(s))"


_PART = re.compile(r"^credit owed: (?P<parts>.+) = (?P<total>[0-9.]+) (?P<cur>[A-Z]{3}) ")

TIERS = st.lists(st.tuples(st.integers(1, 9999), st.integers(1, 100)), min_size=1,
                 max_size=4, unique_by=lambda t: t[0])


@st.composite
def _contracts(draw: st.DrawFn) -> SlaSpec:
    raw = sorted(draw(TIERS), reverse=True)  # thresholds in basis points, highest first
    credits = sorted({c for _, c in raw})
    tiers = tuple(CreditTier(Decimal(below).scaleb(-4), Decimal(credit).scaleb(-2))
                  for (below, _), credit in zip(raw, credits, strict=False))
    uptime = Decimal(draw(st.integers(raw[0][0], 10000))).scaleb(-4)
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
            exact = each.node_hours * sla.price_per_node_hour * (
                each.tier.credit if each.tier else 0)
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
    sla = SlaSpec(d("0.999"), 0.0, d("0.01"), "USD", (CreditTier(d("0.999"), d("0.1")),))
    short = [Span(0, 3000, HEALTHY), Span(3000, 3600, FAILED)]
    _, settlement = settle({"n1": short, "n2": [Span(0, 3600, HEALTHY)]}, (0.0, 3600.0), sla)
    assert not settlement.owes
    assert settlement.total_line() == (
        "no credit owed (0.00 USD): 1 node(s) fell below a credit tier, but each one's credit "
        "rounds to less than 0.01 USD")
    _, settlement = settle({"n2": [Span(0, 3600, HEALTHY)]}, (0.0, 3600.0), sla)
    assert settlement.total_line() == "no credit owed: no node fell below a credit tier " \
                                      "(0.00 USD)"
