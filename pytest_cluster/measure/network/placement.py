"""Where one node stands in the latency ping-pong (measure/network/latency.py's run): its median
to its peers against the median between the other nodes, what `interconnect.colocation`
judges, and its own latency, what `interconnect.latency` judges: its median to the peers
that do not stand out (a far peer's distance is its own)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_cluster.measure.network.latency import LatencyRun


@dataclass(frozen=True)
class Placement:
    """Where one node stands: its median to its peers against the median between the other
    nodes (`ratio`, what colocation judges), and its own latency (`own_s`, what the latency
    bound judges): its median to its peers but those that stand out (`far_peers`: their
    distance is theirs)."""

    node: str
    median_s: float
    others_median_s: float | None  # None: no pair without it (two nodes)
    ratio: float | None  # None: nothing singles it out
    peers: int
    nearest: tuple[str, float]
    farthest: tuple[str, float]
    own_s: float = math.nan
    far_peers: tuple[str, ...] = ()

    def text(self) -> str:
        """'median 9.1 us to its 2 peer(s), 3.00 x the median between the other nodes
        3.0 us; nearest ..., farthest ...': what colocation judges."""
        against = (f"{self.ratio:.2f} x the median between the other nodes "
                   f"{us(self.others_median_s)}" if self.ratio is not None
                   and self.others_median_s is not None else
                   "no pair without it to compare with")
        return (f"median {us(self.median_s)} to its {self.peers} peer(s), {against}; "
                f"nearest {self.nearest[0]} {us(self.nearest[1])}, farthest "
                f"{self.farthest[0]} {us(self.farthest[1])}")

    def own_text(self) -> str:
        """What the latency bound judges: its own median, and the far peers left out."""
        if not self.far_peers:
            return self.text()
        kept = self.peers - len(self.far_peers)
        return (f"median {us(self.own_s)} to its {kept} peer(s) that do not stand out "
                f"({', '.join(self.far_peers)} left out: far from every peer, its distance "
                f"is its own); with them {self.text()}")


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us"


def placement(run: LatencyRun, node: str, size: int,
              factor: float) -> Placement | None:
    """`node`'s place at `size`: its median to its peers against the median between the
    other nodes, and its own latency: its median to the peers that do not stand out above
    `factor` (all of them where every one does, or where it stands out itself); None when
    it met no peer."""
    peers = run.peers(node, size)
    if not peers:
        return None
    far = run.far(size, factor)
    mine = statistics.median(peers.values())
    left_out = () if node in far else tuple(sorted(p for p in peers if p in far))
    kept = [seconds for peer, seconds in peers.items() if peer not in left_out]
    own = statistics.median(kept) if kept else mine
    return Placement(node, mine, run.others_median(node, size), run.ratio(node, size),
                     len(peers), min(peers.items(), key=lambda p: (p[1], p[0])),
                     max(peers.items(), key=lambda p: (p[1], p[0])), own,
                     left_out if kept else ())
