"""Availability and the SLA credit owed, from each node's timeline.

A timeline is a node's spans over the soak: healthy, failed or unreachable. Failed and
unreachable both count as down, but only in stretches that last at least the spec's
`down_after` (a blip shorter than that is not downtime, as public cloud SLAs count it).
Per node: the seconds down, the node-hours lost, its availability, the credit tier that
applies (the lowest one below which it fell) and the credit owed on its fees; for the
cluster, the same summed. Every figure comes with its arithmetic in words. Pure
functions: the soak records the timelines, the reports show this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from typing import TYPE_CHECKING

from pytest_cluster import money

if TYPE_CHECKING:
    from pytest_cluster.contract.model import CreditTier, SlaSpec

HEALTHY, FAILED, UNREACHABLE = "healthy", "failed", "unreachable"
#: Node-hours are counted to 6 places (3.6 ms).
HOURS = Decimal("0.000001")


@dataclass(frozen=True)
class Span:
    start: float  # seconds since the epoch
    end: float
    state: str  # HEALTHY, FAILED or UNREACHABLE


@dataclass(frozen=True)
class NodeAvailability:
    node: str
    window_s: float  # the seconds of the soak's window the node was observed in
    down_s: float
    outages: tuple[tuple[float, float], ...]  # the stretches counted as down

    @property
    def availability(self) -> Decimal:
        """1 - node-hours down / node-hours observed, both to 6 places as printed, so the
        availability held against the promise is the one the arithmetic shows (a float
        0.995 is below Decimal 0.995)."""
        window = node_hours(self.window_s)
        return 1 - self.node_hours_lost / window if window > 0 else Decimal(1)

    @property
    def node_hours_lost(self) -> Decimal:
        """The downtime in node-hours, to 6 places, as every output prints it."""
        return node_hours(self.down_s)


@dataclass(frozen=True)
class Credit:
    node: str
    availability: Decimal
    tier: CreditTier | None  # None: the uptime was met, or no tier applies
    node_hours: Decimal  # the window in node-hours, to 6 places, as printed
    fees: Decimal  # node_hours x the price, exact
    owed: Decimal  # the tier's share of the fees, rounded once to the minor unit
    arithmetic: str


def outages(spans: Iterable[Span], down_after_s: float) -> list[tuple[float, float]]:
    """The stretches of consecutive failed or unreachable spans that last at least
    `down_after_s` (a gap between spans, when nothing was recorded, breaks a stretch)."""
    stretches: list[list[float]] = []
    joined = False  # whether the next down span may extend the last stretch
    for span in sorted(spans, key=lambda s: s.start):
        if span.state == HEALTHY:
            joined = False
        elif joined and span.start <= stretches[-1][1]:
            stretches[-1][1] = max(stretches[-1][1], span.end)
        else:
            stretches.append([span.start, span.end])
            joined = True
    return [(start, end) for start, end in stretches if end - start >= down_after_s]


def node_availability(node: str, spans: Sequence[Span], window: tuple[float, float],
                      down_after_s: float) -> NodeAvailability:
    """One node over `window` (start, end): its outages clipped to the window, against the
    time its spans cover in it. Time the node was not observed (a stopped soak; a round
    that did not judge it: stopped before every check of it ran) counts neither up nor
    down: it is no part of its window."""
    start, end = window
    clipped = [(max(a, start), min(b, end)) for a, b in outages(spans, down_after_s)]
    counted = tuple((a, b) for a, b in clipped if b > a)
    return NodeAvailability(node, observed_s(spans, window), sum(b - a for a, b in counted),
                            counted)


def observed_s(spans: Iterable[Span], window: tuple[float, float]) -> float:
    """The seconds of `window` that the spans cover (each second once)."""
    covered, reached = 0.0, window[0]
    for span in sorted(spans, key=lambda s: s.start):
        a, b = max(span.start, reached), min(span.end, window[1])
        if b > a:
            covered += b - a
            reached = b
    return covered


def tier_for(availability: Decimal, sla: SlaSpec) -> CreditTier | None:
    """The credit tier an availability falls in (the lowest threshold it is below);
    None when it meets the promised uptime or is above every threshold."""
    if availability >= sla.uptime:
        return None
    below = [t for t in sla.credits if availability < t.below]
    return min(below, key=lambda t: t.below) if below else None


def hours_text(seconds: float) -> str:
    """Hours as every figure of a soak shows them: node-hours to 6 places, the precision
    the credit is computed with ('2', '0.004167'), never a rounding of their own."""
    return money.text(node_hours(seconds))


def _side(value: Decimal, limit: Decimal) -> int:
    return (value > limit) - (value < limit)


def availability_text(availability: Decimal, *against: Decimal) -> str:
    """A measured availability in percent to 3 places ('95.833 %'), or to as many more
    (up to 9) as it takes to stay on the same side of each threshold it is compared with,
    and of 100 %: a node at 99.49996 % is not printed '99.5 %' beside 'below 99.5 %'."""
    exact = availability.scaleb(2)
    for places in range(3, 10):
        shown = exact.quantize(Decimal(1).scaleb(-places), ROUND_HALF_EVEN)
        if all(_side(shown, limit.scaleb(2)) == _side(exact, limit.scaleb(2))
               for limit in (*against, Decimal(1))):
            break
    return money.text(shown) + " %"


def node_hours(seconds: float) -> Decimal:
    """Seconds as the node-hours a credit is computed on: to 6 places (3.6 ms), so that
    the arithmetic printed is the arithmetic done."""
    return (Decimal(repr(seconds)) / 3600).quantize(HOURS, ROUND_HALF_EVEN)


def credit(found: NodeAvailability, sla: SlaSpec) -> Credit:
    """The credit one node is owed: its tier's share of its fees, rounded once, half up,
    to the currency's minor unit (less than half a cent of a 2-decimal currency is
    nothing owed)."""
    hours = node_hours(found.window_s)
    fees = hours * sla.price_per_node_hour
    tier = tier_for(found.availability, sla)
    shown = availability_text(found.availability, sla.uptime,
                              *(t.below for t in sla.credits))
    head = (f"{found.node}: down {hours_text(found.down_s)} h of {hours_text(found.window_s)} "
            f"h = {shown} available")
    zero = money.rounded(Decimal(0), sla.currency)
    if tier is None:
        why = ("meets the promised " + money.percent(sla.uptime)) \
            if found.availability >= sla.uptime \
            else (f"below the promised {money.percent(sla.uptime)}, above every credit tier")
        return Credit(found.node, found.availability, None, hours, fees, zero,
                      f"{head}, {why}: no credit")
    exact = fees * tier.credit
    owed = money.rounded(exact, sla.currency)
    worked = (f"{money.percent(tier.credit)} of {money.text(hours)} node-hours x "
              f"{money.text(sla.price_per_node_hour)} {sla.currency} = ")
    rounded = str(owed) if exact == owed else f"{money.text(exact)}, rounded to {owed}"
    return Credit(found.node, found.availability, tier, hours, fees, owed,
                  f"{head}, below {money.percent(tier.below)}: {worked}{rounded} {sla.currency}")


#: Per-node parts a total line names one by one; above this it names their count.
SHOWN_PARTS = 12


@dataclass(frozen=True)
class Settlement:
    """What the cluster owes over a soak: per node, and in total (the sum of the per-node
    credits as rounded, so the total is the sum of the printed parts)."""

    credits: tuple[Credit, ...]
    currency: str

    @property
    def owed(self) -> Decimal:
        return sum((c.owed for c in self.credits), money.rounded(Decimal(0), self.currency))

    @property
    def owes(self) -> bool:
        """Whether anything is owed (at least the currency's minor unit)."""
        return self.owed > 0

    def total_line(self) -> str:
        owing = [c for c in self.credits if c.owed > 0]
        if not owing:
            tiered = sum(1 for c in self.credits if c.tier is not None)
            if tiered:
                return (f"no credit owed ({self.owed} {self.currency}): {tiered} node(s) fell "
                        f"below a credit tier, but each one's credit rounds to less than "
                        f"{money.minor_unit(self.currency)} {self.currency}")
            return f"no credit owed: no node fell below a credit tier ({self.owed} " \
                   f"{self.currency})"
        parts = (" + ".join(str(c.owed) for c in owing) if len(owing) <= SHOWN_PARTS
                 else f"the sum of {len(owing)} per-node credits (each in its node's "
                      f"test_available)")
        return (f"credit owed: {parts} = {self.owed} {self.currency} "
                f"({len(owing)} of {len(self.credits)} node(s))")


def settle(timelines: Mapping[str, Sequence[Span]], window: tuple[float, float],
           sla: SlaSpec) -> tuple[list[NodeAvailability], Settlement]:
    """Every node's availability over `window`, and the credit the SLA owes for it."""
    found = [node_availability(node, spans, window, sla.down_after_s)
             for node, spans in timelines.items()]
    return found, Settlement(tuple(credit(each, sla) for each in found), sla.currency)


def cluster_availability(found: Sequence[NodeAvailability]) -> Decimal:
    """Node-hours up over node-hours in the window, across the cluster (each to 6 places,
    as printed)."""
    total = sum((node_hours(f.window_s) for f in found), Decimal(0))
    lost = sum((f.node_hours_lost for f in found), Decimal(0))
    return 1 - lost / total if total > 0 else Decimal(1)
