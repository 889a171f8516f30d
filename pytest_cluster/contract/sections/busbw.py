"""Collective bandwidth, pure: nccl-tests' formulas, the theoretical busbw a spec's links
allow, and a benchmark's result (CollectiveRun). No launcher, no job: benchmark.py runs the
jobs, the simulated cluster (sim/) answers them with these same formulas.

nccl-tests (doc/PERFORMANCE.md): algbw = bytes / time; busbw = algbw x 2(n-1)/n for
all_reduce, x (n-1)/n for all_gather, reduce_scatter and alltoall (whose bytes are the
whole array); time is the mean over ranks of each rank's back-to-back loop / iterations.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pytest_cluster.contract.reading.documents import record_of
from pytest_cluster.contract.requirement import Requirement
from pytest_cluster.units import Dim, Quantity, format_number

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Clause, InterconnectSpec


def bus_factor(collective: str, ranks: int) -> float:
    """busbw / algbw for `ranks` ranks (nccl-tests)."""
    if ranks < 2:
        return 0.0
    if collective == "all_reduce":
        return 2 * (ranks - 1) / ranks
    if collective in ("all_gather", "reduce_scatter", "alltoall"):
        return (ranks - 1) / ranks
    raise ValueError(f"unknown collective {collective!r}")


@dataclass(frozen=True)
class Theory:
    """The busbw the links allow, and how it was derived (shown in the report)."""

    bytes_per_s: float
    derivation: str


def gbs(value: float) -> str:
    return f"{format_number(value / 1e9)} GB/s"


def theoretical(spec: InterconnectSpec, nodes: int) -> Theory | None:
    """One node: the intra-node link's rate per GPU per direction. Several nodes: a ring
    crosses each node's NICs once per direction, so busbw is bounded by the node's total
    NIC rate (and by the intra-node link, if slower). None: no link in the spec."""
    intra, inter = spec.intra_node, spec.inter_node
    if nodes == 1:
        if intra is None:
            return None
        return Theory(intra.rate_bytes_per_s,
                      f"{intra.kind} {intra.rate_text} per GPU per direction "
                      f"= {gbs(intra.rate_bytes_per_s)}")
    if inter is None:
        return None
    total = inter.total_bytes_per_s
    text = (f"{inter.kind} {inter.count} NIC(s) x {inter.rate_text} per node = {gbs(total)}"
            " (a ring crosses each node's NICs once)")
    if intra is not None and intra.rate_bytes_per_s < total:
        return Theory(intra.rate_bytes_per_s, f"{text}; capped by {intra.kind} "
                      f"{gbs(intra.rate_bytes_per_s)}")
    return Theory(total, text)


def bound(spec: InterconnectSpec, scope: str) -> Clause:
    """The busbw clause of `scope` (intra_node, inter_node or node_network, its key
    'interconnect.busbw[scope]') as the spec wrote it: a share of theoretical or a rate.
    The parser refuses a spec that runs a scope without one: none here is our bug."""
    key = f"interconnect.busbw[{scope}]"
    found = next((clause for clause in spec.busbw if clause.key == key), None)
    if found is None:
        raise ValueError(f"the spec promises no busbw for {scope}")
    return found


def is_share(clause: Clause) -> bool:
    """Whether a busbw bound is a share of theoretical ('>= 80%'), not a rate."""
    return clause.requirement.bound.dim is Dim.FRACTION


def required_busbw(spec: InterconnectSpec, nodes: int,
                   scope: str) -> tuple[Clause, Theory | None]:
    """The busbw clause for one kind of test (`scope`: intra_node, inter_node or
    node_network, each with its own bound) as a rate: a share of theoretical becomes
    share x theoretical, its text saying both ('>= 80% of 450 GB/s = 360 GB/s'). The theory
    is None when none is derivable (no link given for this case)."""
    clause = bound(spec, scope)
    theory = theoretical(spec, nodes)
    if not is_share(clause) or theory is None:
        return clause, theory
    req = clause.requirement
    value = req.bound.value * theory.bytes_per_s
    share = f"{format_number(100 * req.bound.value)}%"
    text = f"{req.op} {share} of {gbs(theory.bytes_per_s)} = {gbs(value)}"
    return replace(clause, requirement=Requirement(req.op, Quantity(value, Dim.RATE, "GB/s"),
                                                   text)), theory


@dataclass(frozen=True)
class SizePoint:
    """One payload of a benchmark: nccl-tests' numbers and the spread over iterations."""

    bytes: int
    time_s: float  # mean over ranks of (back-to-back loop / iterations)
    algbw: float  # bytes/s
    busbw: float  # bytes/s
    busbw_iterations: tuple[float, ...]  # per iteration, slowest rank's time
    wrong: int
    slowest_rank: int | None  # the rank whose loop took longest; None: none took longer
    # than the others, or the engine times no rank of its own (nccl-tests)

    @property
    def spread(self) -> tuple[float, float, float]:
        """(min, median, max) busbw over iterations."""
        values = self.busbw_iterations or (self.busbw,)
        return min(values), statistics.median(values), max(values)


@dataclass(frozen=True)
class CollectiveRun:
    """One benchmark job: a collective over `nodes` x ranks_per_node ranks, a payload sweep."""

    collective: str
    backend: str
    nodes: tuple[str, ...]
    ranks_per_node: int
    points: tuple[SizePoint, ...] = ()
    error: str = ""
    simulated: bool = False
    details: dict[str, Any] = field(default_factory=dict)  # torch/nccl versions, devices
    #: why it did not run, as an error kind: 'not_all_nodes' where a node of it did not
    #: answer its host probe (the job was not started: that node's verdict says why);
    #: '' otherwise (the job ran and failed)
    error_kind: str = ""
    #: the job's measurement ended with an exception in our own code (`error` says which):
    #: a fault of the tool, no node's
    crashed: bool = False
    #: the nodes a hung job's evidence singles out (NCCL RAS's dead ranks' nodes,
    #: measure/nccl_ras.py): its failure fails them too; none where nothing singles one out
    culprits: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.error and bool(self.points)

    def at(self, nbytes: int) -> SizePoint | None:
        """The point measured for the payload `nbytes` (buffers round to whole elements)."""
        best = min(self.points, key=lambda p: abs(p.bytes - nbytes), default=None)
        if best is None or abs(best.bytes - nbytes) > max(64, nbytes // 1000):
            return None
        return best

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> CollectiveRun:
        return record_of(cls, data)


def slowest_rank(ranks: Sequence[dict[str, Any]], sizes: Sequence[dict[str, Any]]) -> int | None:
    """The rank (its number) whose loop over one payload (`sizes`, in `ranks`' order) took
    longest; None when every rank took as long (no rank to name)."""
    times = [float(s["time_s"]) for s in sizes]
    slowest = max(range(len(times)), key=times.__getitem__, default=None)
    if slowest is None or times[slowest] <= min(times):
        return None
    return int(ranks[slowest]["rank"])


def aggregate(collective: str, ranks: Sequence[dict[str, Any]]) -> tuple[SizePoint, ...]:
    """Per-rank results of the collective probe -> one point per payload (nccl-tests)."""
    world = len(ranks)
    factor = bus_factor(collective, world)
    points = []
    for index, first in enumerate(ranks[0]["sizes"]):
        sizes = [r["sizes"][index] for r in ranks]
        nbytes = int(first["bytes"])
        mean_time = statistics.fmean(float(s["time_s"]) for s in sizes)
        per_iteration = [max(column) for column in zip(*(s["iteration_s"] for s in sizes),
                                                       strict=True)]
        algbw = nbytes / mean_time if mean_time > 0 else 0.0
        points.append(SizePoint(
            nbytes, mean_time, algbw, algbw * factor,
            tuple(nbytes / t * factor for t in per_iteration if t > 0),
            sum(int(s["wrong"]) for s in sizes), slowest_rank(ranks, sizes)))
    return tuple(points)
