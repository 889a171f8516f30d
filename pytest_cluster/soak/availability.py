"""What a soak says of each node's availability over its rounds and of the SLA: the
cases `soak.availability` (per node) and `soak.sla` (the credit owed), and the terminal's
lines for them; nothing (no figure, no verdict) where no round observed a node."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from pytest_cluster import money
from pytest_cluster.contract.model import SlaSpec
from pytest_cluster.evidence.derived_cases import Case
from pytest_cluster.evidence.sla import (
    NodeAvailability,
    Settlement,
    availability_text,
    cluster_availability,
    hours_text,
)
from pytest_cluster.evidence.timelines import clock
from pytest_cluster.units import utc

if TYPE_CHECKING:
    from pytest_cluster.contract import Spec

#: Without an `sla:` section: every failed or unreachable round counts as down, and a
#: node is available as promised only at 100 %.
NO_SLA = SlaSpec(uptime=Decimal(1), down_after_s=0.0, price_per_node_hour=Decimal(0),
                 currency="USD", credits=())
#: What a soak whose rounds judged no node (its only round stopped before any node's
#: checks all ran) says of its availability and of its SLA: no figure, no verdict.
NOT_OBSERVED = "not observed: no round judged a node"
SLA_NOT_JUDGED = "not judged: no node was observed"


def observed(availability: list[NodeAvailability]) -> bool:
    """Whether the rounds observed any node for any time: else there is no availability
    to state (not 100 %) and no credit to settle (not 'none owed')."""
    return any(found.window_s > 0 for found in availability)


def availability_cases(spec: Spec, availability: list[NodeAvailability],
                       settlement: Settlement) -> list[Case]:
    """Each observed node's availability against the SLA's uptime (without an `sla:`
    section, 100 %), then the credit owed over the cluster (`sla:` only)."""
    sla = spec.sla or NO_SLA
    cases = []
    for found, owed in zip(availability, settlement.credits, strict=True):
        if found.window_s <= 0:
            continue  # no time of it observed: no availability to judge
        met = found.availability >= sla.uptime
        shown = availability_text(found.availability, sla.uptime,
                                  *(t.below for t in sla.credits))
        text = owed.arithmetic if spec.sla is not None else (
            f"{found.node}: down {hours_text(found.down_s)} h of "
            f"{hours_text(found.window_s)} h = {shown} available "
            "(no sla: section: every failed or unreachable round counts as down)")
        props = {"measured": shown,
                 "availability": float(round(found.availability, 6)),
                 "down_s": round(found.down_s, 3), "observed_s": round(found.window_s, 3),
                 "node_hours_lost": hours_text(found.down_s),
                 "outages": [[utc(a), utc(b)] for a, b in found.outages],
                 "outages_at": [[round(a, 3), round(b, 3)] for a, b in found.outages],
                 "requirement": f">= {money.percent(sla.uptime)} available",
                 "arithmetic": text}
        if spec.sla is not None:
            props.update(credit=str(owed.owed), currency=sla.currency)
        cases.append(Case(found.node, "soak.availability", found.node, met,
                          "" if met else text, props=props))
    if spec.sla is not None and not observed(availability):
        cases.append(Case("cluster", "soak.sla", "cluster", False, "",
                          props={"measured": NOT_OBSERVED,
                                 "requirement": "no credit owed"},
                          not_judged=f"{SLA_NOT_JUDGED} (availability {NOT_OBSERVED})"))
    elif spec.sla is not None:
        total = settlement.total_line()
        share = cluster_availability(availability)
        owes = settlement.owes
        cases.append(Case("cluster", "soak.sla", "cluster", not owes,
                          total if owes else "",
                          props={"measured": f"{settlement.owed} {sla.currency}",
                                 "cluster_availability": float(round(share, 6)),
                                 "requirement": "no credit owed", "arithmetic": total}))
    return cases


def availability_lines(spec: Spec, availability: list[NodeAvailability],
                       settlement: Settlement | None) -> list[str]:
    """The terminal's lines for them: the cluster's availability, the nodes down the
    longest (8 at most), the SLA's credit; or that nothing was observed."""
    if not observed(availability):
        return [f"  availability: {NOT_OBSERVED}",
                *([f"  SLA: {SLA_NOT_JUDGED}"] if spec.sla is not None else [])]
    found = []
    down = [a for a in availability if a.down_s > 0]
    share = cluster_availability(availability)
    lost = sum((a.node_hours_lost for a in down), Decimal(0))
    found.append(f"  availability: cluster {availability_text(share)}; "
                 f"{len(down)} node(s) down at some time, "
                 f"{money.text(lost)} node-hours lost")
    uptime = (spec.sla or NO_SLA).uptime
    for each in sorted(down, key=lambda a: a.availability)[:8]:
        found.append(f"    {each.node}: {availability_text(each.availability, uptime)} "
                     f"available, down {clock(each.down_s)} "
                     f"({hours_text(each.down_s)} node-hours)")
    if settlement is not None and spec.sla is not None:
        found.append(f"  SLA: {settlement.total_line()}")
    return found
