"""A soak's rounds as time: each round as its directory tells it (`Round`), each node's
state over the soak as spans on one time axis (`Timelines`: healthy, failed, unreachable;
the time no round ran, and a node's time in a round that did not judge it, not observed),
and how they are written ('1:02:03', round ranges '5-18, 22'). Pure: soak/rounds.py reads
the rounds, report/soak.py draws them."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_cluster.evidence.sinks.results import INTERRUPTED
from pytest_cluster.evidence.verdict.sla import Span
from pytest_cluster.hostlist import spans_of


def ranges(numbers: Iterable[int], most: int = 40) -> str:
    """Round numbers as ranges: '5-18, 22' (at most `most` ranges, then how many more)."""
    found = spans_of(numbers)
    shown = ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in found[:most])
    return shown + (f" and {len(found) - most} more range(s)" if len(found) > most else "")


def clock(seconds: float) -> str:
    """'1:02:03' (h:mm:ss)."""
    whole = max(0, round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


@dataclass(frozen=True)
class Round:
    """One finished (or stopped) round as its directory tells it."""

    number: int
    path: Path
    started: float
    ended: float
    status: str  # the round's end record: complete, partial, interrupted, ...
    states: dict[str, str]  # node -> healthy, failed or unreachable (nodes it checked)
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Timelines:
    """Each node's spans over the soak, the soak's window, and the time in it when no round
    ran (a stopped soak, resumed later): not observed, so counted neither up nor down."""

    spans: dict[str, list[Span]]
    window: tuple[float, float]
    unobserved_s: float

    @property
    def observed_s(self) -> float:
        return max(0.0, self.window[1] - self.window[0] - self.unobserved_s)


def timelines(rounds: Sequence[Round], join_s: float = 120.0,
              firsts: Collection[int] = ()) -> Timelines:
    """A round's state holds from its start until the next round starts when that is the
    pause between rounds of one session: the round ran to its end (it was not interrupted),
    the next one is no session's first (`firsts`: the rounds a resumed soak began with)
    and it started within `join_s` of the end. Else the state holds until the round's own
    end, and what lies between (the soak stopped, then resumed) is not observed. A node
    a round did not judge (its state absent) is not observed in that round."""
    ordered = sorted(rounds, key=lambda r: r.started)
    spans: dict[str, list[Span]] = {}
    unobserved = 0.0
    for index, each in enumerate(ordered):
        end = each.ended
        after = ordered[index + 1] if index + 1 < len(ordered) else None
        if after is not None:
            if after.started - each.ended <= join_s and each.status != INTERRUPTED \
                    and after.number not in firsts:
                end = max(each.ended, after.started)
            else:
                unobserved += max(0.0, after.started - each.ended)
        for node, state in each.states.items():
            spans.setdefault(node, []).append(Span(each.started, end, state))
    window = (ordered[0].started, ordered[-1].ended) if ordered else (0.0, 0.0)
    return Timelines(spans, window, unobserved)
