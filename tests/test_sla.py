"""The `sla:` section and the arithmetic of availability and credits (issue 15, item 6):
outages shorter than down_after do not count, the lowest tier that applies is owed, every
figure comes with its arithmetic."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_cluster.errors import SpecError
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
        == (0.995, 300.0, 2.5, "EUR", 5)
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
])
def test_bad_sla_sections_are_named(text: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(BASE + text, "t.yaml")
    assert str(caught.value) == message


SPEC = SlaSpec(0.995, 300.0, 2.5, "EUR", (CreditTier(0.995, 0.10), CreditTier(0.99, 0.25),
                                          CreditTier(0.95, 1.0)))
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
    assert second.owed == pytest.approx(0.25 * 48 * 2.5)
    assert second.arithmetic == ("n2: down 2.00 h of 48.00 h = 95.833 % available, below "
                                 "99 %: 25 % of 48.00 node-hours x 2.5 EUR = 30.00 EUR")
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
