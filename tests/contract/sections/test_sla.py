"""contract/sections/sla.py: the `sla:` section, its shares as written and its credit tiers."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pytest_cluster.contract.model import CreditTier, SlaSpec
from pytest_cluster.contract.reading.compose import compose
from pytest_cluster.contract.reading.located_errors import Ctx
from pytest_cluster.contract.sections.sla import parse_sla, share

TIERS = "credits: [{below: 99.5%, credit: 10%}, {below: 99%, credit: 25%}]"


def parsed(text: str | None) -> tuple[SlaSpec | None, list[str]]:
    ctx = Ctx("t.yaml")
    spec = parse_sla(ctx, None if text is None else compose(text, "t.yaml"))
    return spec, [str(error) for error in ctx.errors]


@pytest.mark.parametrize(("raw", "decimal"), [("99.5%", "0.995"), (" 10 % ", "0.10"),
                                              (0.995, "0.995"), (1, "1")])
def test_a_share_is_the_decimal_written_never_a_float_near_it(raw: object,
                                                             decimal: str) -> None:
    assert share(raw) == Decimal(decimal)
    assert share("0.1") + share("0.2") == Decimal("0.3")  # a float says 0.30000000000000004


def test_a_whole_section_and_its_defaults() -> None:
    spec, errors = parsed("{uptime: 99.5%, price_per_node_hour: 2.49, " + TIERS + "}")
    assert errors == []
    assert spec == SlaSpec(Decimal("0.995"), 300.0, Decimal("2.49"), "USD",
                           (CreditTier(Decimal("0.995"), Decimal("0.10")),
                            CreditTier(Decimal("0.99"), Decimal("0.25"))), 1)
    written, _ = parsed("{uptime: 99.5%, price_per_node_hour: 2.49, currency: EUR, "
                        "down_after: 10 min, " + TIERS + "}")
    assert written is not None and (written.currency, written.down_after_s) == ("EUR", 600.0)


def test_without_uptime_price_or_tiers_each_is_said_missing() -> None:
    assert parsed(None) == (None, [])
    spec, errors = parsed("{credits: []}")
    assert spec is None
    assert errors == [
        "t.yaml:1: sla.credits: expected a list of {below, credit} tiers, got an empty list",
        "t.yaml:1: sla.uptime: missing: the availability promised per node, e.g. 99.5%",
        "t.yaml:1: sla.price_per_node_hour: missing: what a node-hour costs, e.g. 2.49"]


@pytest.mark.parametrize(("uptime", "tiers", "message"), [
    ("99.5%", "[{below: 99.5%, credit: 10%}, {below: 99%, credit: 5%}]",
     "t.yaml:1: sla.credits[1]: expected tiers from the highest threshold down, each lower "
     "threshold owing a larger credit: below 99 % credit 5 % comes after below 99.5 % "
     "credit 10 %"),
    ("99%", "[{below: 99.5%, credit: 10%}]",
     "t.yaml:1: sla.credits[0].below: expected at most the promised uptime 99 %: a tier "
     "below 99.5 % can never apply (a node at or above the uptime is owed nothing)"),
    ("99.5%", "[{below: 0%, credit: 10%}]",
     "t.yaml:1: sla.credits[0].below: expected a threshold above 0%: no availability is "
     "below 0%, so the tier could never apply, got 0 %"),
    ("99.5%", "[{below: 99%, credit: 0%}]",
     "t.yaml:1: sla.credits[0].credit: expected a credit above 0%: a tier that owes nothing "
     "is no tier, got 0 %"),
    ("99.5%", "[{below: 99%}]", "t.yaml:1: sla.credits[0].credit: missing: a share of the "
                                "fees like '10%'"),
])
def test_a_tier_that_could_never_apply_or_is_out_of_order_is_named(
        uptime: str, tiers: str, message: str) -> None:
    _, errors = parsed(f"{{uptime: {uptime}, price_per_node_hour: 2.49, credits: {tiers}}}")
    assert errors == [message]
