"""What a node's storage figures may claim at most: the physical ceiling a node's rate
cannot pass (the checkpoint burst's, the data loader's). A figure above it is the bad
output of the node that claimed it, never a figure: it fails that node, naming the
figure and the ceiling, and never enters a median or an aggregate.

The ceiling of one node's bytes per second is the least of:
- MOST_NODE_BYTES_PER_S (10 TB/s): above any node's memory bandwidth, so above what any
  filesystem client can move (every byte written or read passes through memory);
- where the spec declares the fabric between nodes (interconnect.inter_node), its line
  rate x its NICs x LINE_RATE_FACTOR (4): a client's storage traffic crosses its NICs,
  and the factor leaves room for storage NICs beside the declared ones and for data a
  node holds itself (a filesystem served from the nodes' own disks).
The spec states no filesystem peak (its bounds are floors: `>= 2 GB/s per GPU`), so no
ceiling is taken from them.

Time is bounded by what the controller saw: a rank cannot have taken longer over its phase
than its whole job ran, from the controller's launch to its answer (OBSERVED_SLACK_S for
the clocks' granularity). Where the launcher's time is real (not simulated), a claim of
more is the bad output of the node that made it: claimed seconds lower the rate a node
reports, and in a median they would move every other node's bar. (The least time a phase
can take is bounded by the ceiling above: its bytes over the ceiling's rate.)

A data loader worker makes one operation at a time, each a system call: it makes at most
MOST_WORKER_OPS_PER_S (1,000,000: one a microsecond) a second.
"""

from __future__ import annotations

from dataclasses import Field, dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from pytest_cluster.units import Dim, format_value

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec

#: Above any node's memory bandwidth (bytes/s): no filesystem client moves more.
MOST_NODE_BYTES_PER_S = 10e12
#: How far above its declared NICs' line rate a node's storage figure may be.
LINE_RATE_FACTOR = 4.0
#: One operation at a time, each a system call of at least a microsecond.
MOST_WORKER_OPS_PER_S = 1e6
#: How much longer than the controller saw its job run a rank may say its phase took (s).
OBSERVED_SLACK_S = 1.0


class Claimed(Protocol):
    """A rank's or a worker's figures: whose, how long it says it took, what was wrong."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # a dataclass's figures

    @property
    def node(self) -> str: ...

    @property
    def seconds(self) -> float: ...

    @property
    def error(self) -> str: ...

    @property
    def bytes(self) -> int: ...


ClaimedT = TypeVar("ClaimedT", bound=Claimed)


@dataclass(frozen=True)
class Ceiling:
    """The most bytes per second one node may claim, and why that much."""

    bytes_per_s: float = MOST_NODE_BYTES_PER_S
    why: str = "above any node's memory bandwidth"

    def above(self, bytes_: float, seconds: float) -> str:
        """What is wrong with a claim of `bytes_` in `seconds` ('' when within it)."""
        if seconds > 0 and bytes_ / seconds <= self.bytes_per_s:
            return ""
        rate = "an infinite rate" if seconds <= 0 else rate_text(bytes_ / seconds)
        return (f"{figure(bytes_)} bytes in {seconds:.3g} s is {rate}, above the ceiling "
                f"{rate_text(self.bytes_per_s)} ({self.why})")


def figure(value: float) -> str:
    """A claimed count as said: whole up to 1e15, else in 4 figures (1e+300, never 301
    digits)."""
    return f"{value:.0f}" if abs(value) < 1e15 else f"{value:.4g}"


def rate_text(bytes_per_s: float) -> str:
    return format_value(bytes_per_s, Dim.RATE, "GB/s")


def node_ceiling(spec: Spec | None) -> Ceiling:
    """The ceiling of one node's storage rate under `spec` (this module's text)."""
    link = spec.interconnect.inter_node if spec is not None and spec.interconnect \
        is not None else None
    if link is None or link.total_bytes_per_s * LINE_RATE_FACTOR >= MOST_NODE_BYTES_PER_S:
        return Ceiling()
    return Ceiling(link.total_bytes_per_s * LINE_RATE_FACTOR,
                   f"{LINE_RATE_FACTOR:g} x interconnect.inter_node's {link.count} NIC(s) "
                   f"x {link.rate_text}")


def ops_above(ops: float, seconds: float, workers: int = 1) -> str:
    """What is wrong with `workers` workers' claim of `ops` operations in `seconds`
    ('' when within MOST_WORKER_OPS_PER_S each)."""
    most = MOST_WORKER_OPS_PER_S * workers
    if seconds > 0 and ops / seconds <= most:
        return ""
    rate = "an infinite rate" if seconds <= 0 else f"{ops / seconds:.3g} operations/s"
    return (f"{figure(ops)} operations in {seconds:.3g} s is {rate}, above the ceiling "
            f"{most:.3g}/s ({workers} worker(s), one system call at a time, each at "
            "least a microsecond)")


def longer_than_observed(seconds: float, observed_s: float) -> str:
    """What is wrong with a claim of `seconds` for a phase whose whole job the controller
    saw run `observed_s` ('' when within it)."""
    if seconds <= observed_s + OBSERVED_SLACK_S:
        return ""
    return (f"it says its part took {seconds:.3g} s, longer than the {observed_s:.3g} s the "
            "controller saw its whole job run, from launch to answer")


def held_to_observed(found: tuple[ClaimedT, ...], phase: str, observed_s: float | None,
                     bad: str) -> tuple[ClaimedT, ...]:
    """`found`, each not yet failed that claims longer than `observed_s` (None: the
    launcher's time is not real, nothing to hold it to) failed as its node's bad output
    (`bad`, the program's prefix of one)."""
    if observed_s is None:
        return found
    return tuple(replace(r, error=f"{bad}{phase}: {why}")
                 if not r.error and (why := longer_than_observed(r.seconds, observed_s))
                 else r for r in found)


def over_ceiling(found: tuple[ClaimedT, ...], phase: str, ceiling: Ceiling,
                 bad: str) -> tuple[ClaimedT, ...]:
    """`found`, those of a node whose bytes over its slowest one's time are above `ceiling`
    each failed as its node's bad output (`bad`, the program's prefix of one)."""
    mine: dict[str, list[ClaimedT]] = {}
    for one in found:
        if not one.error:
            mine.setdefault(one.node, []).append(one)
    wrong = {node: above for node, theirs in mine.items() if (above := ceiling.above(
        sum(r.bytes for r in theirs), max(r.seconds for r in theirs)))}
    return tuple(replace(r, error=f"{bad}the node's {phase}: {wrong[r.node]}")
                 if r.node in wrong and not r.error else r for r in found)
