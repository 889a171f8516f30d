"""The `sla:` section: the availability a contract promises and the credit it owes.

    sla:
      uptime: 99.5%                 # per node, over the soak
      down_after: 5 min             # failed or unreachable this long counts as down
      price_per_node_hour: 2.49     # in `currency`
      currency: USD
      credits:                      # as public cloud SLAs: the lowest tier that applies
        - {below: 99.5%, credit: 10%}
        - {below: 99%, credit: 25%}
        - {below: 95%, credit: 100%}
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, TypeVar

from yaml.nodes import MappingNode, Node, SequenceNode

from pytest_cluster import money
from pytest_cluster.contract.model import CreditTier, SlaSpec
from pytest_cluster.contract.reading.fields import field, or_default, time_between
from pytest_cluster.contract.reading.mapping import Map, section_map
from pytest_cluster.contract.reading.yaml_nodes import kind, written
from pytest_cluster.units import Dim, parse_quantity

T = TypeVar("T")

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.located_errors import Ctx


def share(raw: object) -> Decimal:
    """A share ('99.5%' or 0.995) as the decimal it was written as: the arithmetic of a
    credit uses, and prints, the figure of the contract, not a float near it."""
    quantity = parse_quantity(raw, Dim.FRACTION)  # the checks every share has
    if isinstance(raw, str):
        written = raw.strip()
        percent = quantity.unit == "%"
        return money.share_of(written.removesuffix("%").strip() if percent else written,
                              percent)
    return money.share_of(repr(raw) if isinstance(raw, float) else str(raw), False)


def price(raw: object) -> Decimal:
    return money.price(raw)


def currency(raw: object) -> str:
    return money.currency(raw)


WANTED = {"below": "an availability like '99%'", "credit": "a share of the fees like '10%'"}


def _tiers(ctx: Ctx, node: Node | None, section: Node,
           uptime: object) -> tuple[CreditTier, ...]:
    if node is None:
        ctx.error(section, "sla.credits", "missing: the credit per availability tier, e.g. "
                  "[{below: 99.5%, credit: 10%}, {below: 99%, credit: 25%}]")
        return ()
    if not isinstance(node, SequenceNode) or not node.value:
        got = "an empty list" if isinstance(node, SequenceNode) else kind(node)
        ctx.error(node, "sla.credits", f"expected a list of {{below, credit}} tiers, got "
                  f"{got}")
        return ()
    tiers = []
    for index, item in enumerate(node.value):
        path = f"sla.credits[{index}]"
        table = Map(ctx, item, path, ("below", "credit"))
        if not isinstance(item, MappingNode):
            continue
        below = field(ctx, table.take("below"), f"{path}.below", share)
        credit = field(ctx, table.take("credit"), f"{path}.credit", share)
        table.finish()
        for name, value in (("below", below), ("credit", credit)):
            if value is None and not ctx.failed(f"{path}.{name}"):
                ctx.error(item, f"{path}.{name}", f"missing: {WANTED[name]}")
            elif value is not None and value <= 0:
                ctx.error(item, f"{path}.{name}", "expected " + (
                    "a threshold above 0%: no availability is below 0%, so the tier could "
                    "never apply" if name == "below" else "a credit above 0%: a tier that "
                    "owes nothing is no tier") + f", got {money.percent(value)}")
                below = credit = None
        if below is not None and credit is not None and below > 0 and credit > 0:
            tiers.append((index, item, CreditTier(below, credit)))
    for (index, item, tier), (_, _, before) in zip(tiers[1:], tiers, strict=False):
        if not (tier.below < before.below and tier.credit > before.credit):
            ctx.error(item, f"sla.credits[{index}]", "expected tiers from the highest "
                      "threshold down, each lower threshold owing a larger credit: "
                      f"below {money.percent(tier.below)} credit {money.percent(tier.credit)} "
                      f"comes after below {money.percent(before.below)} credit "
                      f"{money.percent(before.credit)}")
    for index, item, tier in tiers:
        if isinstance(uptime, Decimal) and tier.below > uptime:
            ctx.error(item, f"sla.credits[{index}].below", f"expected at most the promised "
                      f"uptime {money.percent(uptime)}: a tier below "
                      f"{money.percent(tier.below)} can never apply (a node at or above the "
                      f"uptime is owed nothing)")
    return tuple(tier for _, _, tier in tiers)


def parse_sla(ctx: Ctx, node: Node | None) -> SlaSpec | None:
    table = section_map(ctx, node, "sla")
    if table is None:
        return None

    def one(key: str, parse: Callable[[object], T], keep_null: bool = False) -> T | None:
        return field(ctx, table.take(key, keep_null), f"sla.{key}", parse)

    uptime = one("uptime", share)
    down_after = one("down_after", time_between(0, 86400, "from 0 to 24 h"))
    cost = field(ctx, table.take("price_per_node_hour"), "sla.price_per_node_hour", price,
                 written)  # money as written: 1e3, 010 and 2.1000000000000001 are refused
    code = one("currency", currency, keep_null=True)  # money: no silent default
    tiers = _tiers(ctx, table.take("credits"), table.node, uptime)
    table.finish()
    for key, value in (("uptime", uptime), ("price_per_node_hour", cost)):
        if value is None and not ctx.failed(f"sla.{key}"):
            ctx.error(table.node, f"sla.{key}", "missing: " + (
                "the availability promised per node, e.g. 99.5%" if key == "uptime"
                else "what a node-hour costs, e.g. 2.49"))
    if not isinstance(uptime, Decimal) or not isinstance(cost, Decimal):
        return None
    return SlaSpec(uptime, or_default(down_after, 300.0), cost,
                   or_default(code, "USD"), tiers, table.node.start_mark.line + 1)
