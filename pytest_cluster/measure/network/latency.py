"""Small-message latency between node pairs as one distributed job (probes/jobs/pingpong.py on
one rank per node, jobs.run_job through the cluster's launcher), and what the
`interconnect.latency` and `interconnect.colocation` clauses read of it: each node's
one-way latency to each peer it met (half the pair's typical round trip: the median over
bursts of 10 of each burst's fastest, so a rank the host woke late does not count), its
median over its peers, and the median between the other nodes (the pairs it is not in).

The pairs come in rounds of disjoint pairs, the round-robin tournament's
(pingpong.pairs_of_round): up to FULL_UP_TO nodes every round, so every node meets every
other; above, SAMPLE_PER_LOG2 x log2(N) rounds spread over the tournament, so each node
meets as many peers in O(log N) rounds. A node on another spine or switch is farther from
every peer: its median to its peers stands out of the latency between the other nodes (the
pairs it is not in), while a near node's does not (`LatencyRun.ratio`); a node that stands
out so (`far`) is counted in no near node's figure, since its distance is its own
(placement.py): with three nodes, one far, the two near ones keep their latency to each
other. With two nodes nothing singles one out (no pair without either). A node that stands
out is measured again before it is blamed (`run_latency`): a pair measured twice counts its
smaller figure, since a busy host only adds to a round trip while a longer path adds to
both. Nodes the caller knows cannot take part (their host probe did not answer) are left
out, as the slow-node search leaves them out (node_search.find_slow_nodes): the others are
measured among themselves. A node that stops answering during the ping-pong fails its job;
the caller's `recheck` (the host probe read again) finds it, and the ping-pong is played
once more without it.
"""

from __future__ import annotations

import bisect
import functools
import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pytest_cluster.contract.reading.documents import record_of
from pytest_cluster.errors import ClusterError
from pytest_cluster.launchers.jobs import JobSpec, run_job
from pytest_cluster.measure import plausible
from pytest_cluster.measure.network.collectives import key, section
from pytest_cluster.probes.jobs import job_source
from pytest_cluster.probes.jobs.pingpong import rounds_of
from pytest_cluster.units import finite

if TYPE_CHECKING:
    from pytest_cluster.contract.model import InterconnectSpec
    from pytest_cluster.launchers.base import Launcher
    from pytest_cluster.measure.network.node_search import Recheck
    from pytest_cluster.measure.prober import Prober

#: Up to this many nodes, every pair is measured (the whole tournament).
FULL_UP_TO = 64
#: Above, this many rounds per doubling of the node count.
SAMPLE_PER_LOG2 = 2
#: At most this many suspects of a sample are tested again (with as many good nodes).
RETEST_MOST = 32
#: Exchanges per pair and size: warm-up (NCCL's communicator, caches), then timed.
WARMUP = 10
ITERATIONS = 100


def schedule(count: int) -> tuple[int, ...]:
    """The tournament's rounds played for `count` nodes: all of them up to FULL_UP_TO,
    else SAMPLE_PER_LOG2 x ceil(log2 count), spread evenly over the tournament."""
    total = rounds_of(count)
    if count <= FULL_UP_TO:
        return tuple(range(total))
    picked = min(total, SAMPLE_PER_LOG2 * math.ceil(math.log2(count)))
    return tuple(sorted({index * total // picked for index in range(picked)}))


def latency_job(spec: InterconnectSpec, nodes: Sequence[str]) -> JobSpec:
    return JobSpec(nodes=tuple(nodes), program=job_source("pingpong"), ranks_per_node=1,
                   args=("--sizes", ",".join(map(str, spec.latency_sizes())),
                         "--rounds", ",".join(map(str, schedule(len(nodes)))),
                         "--warmup", str(WARMUP), "--iterations", str(ITERATIONS),
                         "--backend", spec.backend),
                   init_timeout_s=min(120.0, spec.timeout_s), wall_timeout_s=spec.timeout_s)


@dataclass(frozen=True)
class LatencyRun:
    nodes: tuple[str, ...]
    backend: str
    sizes: tuple[int, ...]
    rounds: tuple[int, ...] = ()  # the tournament's rounds played
    of_rounds: int = 0  # of how many
    #: per pair met, per size: [low node, high node, size in bytes, one-way seconds]
    links: tuple[tuple[str, str, int, float], ...] = ()
    #: per pair and size, its round trips as the rank reported them: [low node, high
    #: node, size, median s, minimum s, 90th percentile s]
    round_trips: tuple[tuple[str, str, int, float, float, float], ...] = ()
    #: nodes tested again with known-good peers (a sample's suspects, at scale)
    retested: tuple[str, ...] = ()
    #: nodes of the cluster left out of the ping-pong (node -> why): their host probe
    #: did not answer
    left_out: dict[str, str] = field(default_factory=dict)
    #: nodes whose rank reported a round trip shorter than any wire gives (node -> what
    #: it claimed, plausible.MIN_ROUND_TRIP_S): bad output, their figures in no median
    implausible: dict[str, str] = field(default_factory=dict)
    error: str = ""
    details: dict[str, object] = field(default_factory=dict)
    simulated: bool = False

    @property
    def ok(self) -> bool:
        return not self.error and bool(self.links)

    @functools.cached_property
    def _table(self) -> dict[int, dict[str, dict[str, float]]]:
        """Per size, per node, its peers' one-way latency (a pair measured again: the
        smaller figure); built once per run object."""
        table: dict[int, dict[str, dict[str, float]]] = {}
        for a, b, at, seconds in self.links:
            per = table.setdefault(at, {})
            for me, peer in ((a, b), (b, a)):
                mine = per.setdefault(me, {})
                mine[peer] = min(seconds, mine.get(peer, seconds))
        return table

    @functools.cached_property
    def _medians(self) -> dict[int, dict[str, float]]:
        return {size: {node: statistics.median(peers.values())
                       for node, peers in per.items() if peers}
                for size, per in self._table.items()}

    @functools.cached_property
    def _pair_figures(self) -> dict[int, list[float]]:
        """Per size, every pair's figure (each pair once), sorted."""
        return {size: sorted(seconds for node, peers in per.items()
                             for peer, seconds in peers.items() if node < peer)
                for size, per in self._table.items()}

    def others_median(self, node: str, size: int) -> float | None:
        """The median latency between the other nodes (of the pairs `node` is not in) at
        `size`; None where there is no such pair (two nodes)."""
        return median_without(self._pair_figures.get(size, []),
                              sorted(self.peers(node, size).values()))

    def ratio(self, node: str, size: int) -> float | None:
        """How far `node` stands out: its median to its peers over the median between the
        other nodes; None where nothing could single it out (it met fewer than 2 peers, or
        no pair is without it: two nodes)."""
        peers = self.peers(node, size)
        rest = self.others_median(node, size)
        if len(peers) < 2 or rest is None:
            return None
        mine = statistics.median(peers.values())
        return mine / rest if rest > 0 else math.inf

    def far(self, size: int, factor: float) -> dict[str, float]:
        """The nodes that stand out above `factor` (ratio), each with its ratio."""
        key = (size, factor)
        if key not in self._far:
            self._far[key] = {node: r for node in self._table.get(size, {})
                              if (r := self.ratio(node, size)) is not None and r > factor}
        return self._far[key]

    @functools.cached_property
    def _far(self) -> dict[tuple[int, float], dict[str, float]]:
        return {}

    def peers(self, node: str, size: int) -> dict[str, float]:
        """`node`'s one-way latency (s) to each peer it met, at `size`."""
        return dict(self._table.get(size, {}).get(node, {}))

    def median(self, node: str, size: int) -> float | None:
        return self._medians.get(size, {}).get(node)

    def cluster_median(self, size: int) -> float | None:
        """The median of every node's median: what a node is compared with."""
        found = list(self._medians.get(size, {}).values())
        return statistics.median(found) if found else None

    def matrix(self, size: int) -> list[list[float | None]]:
        """One-way latency in microseconds, row and column in `nodes` order (None: the
        pair was not measured)."""
        index = {node: i for i, node in enumerate(self.nodes)}
        rows: list[list[float | None]] = [[None] * len(self.nodes) for _ in self.nodes]
        for a, peers in self._table.get(size, {}).items():
            for b, seconds in peers.items():
                if a in index and b in index:
                    rows[index[a]][index[b]] = round(seconds * 1e6, 3)
        return rows

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, record: Mapping[str, object]) -> LatencyRun:
        return record_of(cls, record)


def round_trips_of(nodes: Sequence[str], data: Sequence[dict[str, Any]]) -> list[
        tuple[str, str, int, float, float, float]]:
    """Each pair's plain round trips (median, minimum, 90th percentile), for the record."""
    trips = []
    for rank in data:
        for pair in rank["pairs"]:
            if _peer(pair, rank, nodes) < 0:  # said by links_of
                continue
            for size, figures in pair["sizes"].items():
                median, low, high = (finite(figures.get(key)) if isinstance(figures, dict)
                                     else None for key in ("median_rtt_s", "min_rtt_s",
                                                           "p90_rtt_s"))
                if median is not None and low is not None and high is not None:
                    trips.append((nodes[int(rank["rank"])], nodes[int(pair["peer"])],
                                  int(size), median, low, high))
    return trips


def _peer(pair: object, rank: dict[str, Any], nodes: Sequence[str]) -> int:
    """The rank a pair names as its peer: one of this job's ranks above the reporting
    one (the lower rank of a pair reports it), else -1 (a negative index would name the
    last node; a pair the higher rank reports is a second word on its peer's pair)."""
    peer = pair.get("peer") if isinstance(pair, dict) else None
    return peer if isinstance(peer, int) and not isinstance(peer, bool) \
        and rank["rank"] < peer < len(nodes) else -1


def links_of(nodes: Sequence[str], data: Sequence[dict[str, Any]],
             implausible: dict[str, str] | None = None) -> list[tuple[str, str, int, float]]:
    """The pairs each rank timed (the lower rank of a pair reports it), one-way = half
    the pair's typical round trip (pingpong.typical: the median over bursts of each
    burst's fastest). Rank r runs on nodes[r] (one rank per node). A round trip shorter
    than any wire's (plausible.MIN_ROUND_TRIP_S) is the reporting node's bad output: left
    out, and said in `implausible` (node -> what it claimed)."""
    found = []
    for rank in data:
        me = nodes[int(rank["rank"])]
        for pair in rank["pairs"]:
            if _peer(pair, rank, nodes) < 0:  # the node's claim: no pair of this job
                if implausible is not None:
                    named = pair.get("peer") if isinstance(pair, dict) else pair
                    implausible.setdefault(me, f"a pair with rank {repr(named)[:20]}, no "
                                           "other rank of this job (bad output of the node)")
                continue
            peer = nodes[int(pair["peer"])]
            for size, figures in pair["sizes"].items():
                rtt = finite(figures.get("typical_rtt_s")) if isinstance(figures, dict) \
                    else None
                if rtt is None or rtt < 0:  # its bad output, as one under the floor
                    if implausible is not None:
                        said = figures.get("typical_rtt_s") if isinstance(
                            figures, dict) else figures
                        implausible.setdefault(me, f"a round trip to {peer} at "
                                               f"{str(size)[:20]} B of {repr(said)[:40]}: "
                                               "not a time (bad output of the node)")
                    continue
                if rtt < plausible.MIN_ROUND_TRIP_S:
                    if implausible is not None:
                        implausible.setdefault(me, plausible.floor_refused(
                            f"round trip to {peer} at {int(size)} B", rtt))
                    continue
                found.append((me, peer, int(size), rtt / 2))
    return found


def _one_job(launcher: Launcher, spec: InterconnectSpec, nodes: Sequence[str],
             base: LatencyRun) -> LatencyRun:
    """One ping-pong job over `nodes`: `base` with its pairs, or with why it failed."""
    try:
        result = run_job(launcher, latency_job(spec, nodes))
    except (ClusterError, OSError, ValueError) as exc:
        return replace(base, error=str(exc))
    base = replace(base, simulated=base.simulated or result.simulated)
    if not result.ok:
        return replace(base, error=result.first_failure())
    # each rank's figures under the rank the job ran it as, never the one it claims (a
    # node saying it is rank 0 would put its pairs and its bad output on rank 0's node)
    data = [{**r.data, "rank": r.rank} for r in result.ranks if r.data is not None]
    kept = ("torch", "device", "warmup", "iterations")
    details: dict[str, object] = {k: data[0][k] for k in kept if k in data[0]}
    refused: dict[str, str] = {}
    try:
        links = links_of(nodes, data, refused)
        trips = round_trips_of(nodes, data)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        return replace(base, error=f"bad ping-pong output: {exc!r}")
    base = replace(base, implausible={**refused, **base.implausible})
    if not links:
        return replace(base, error="no pair was measured")
    return replace(base, links=(*base.links, *links),
                   round_trips=(*base.round_trips, *trips),
                   details={**details, **base.details})


def median_without(every: Sequence[float], mine: Sequence[float]) -> float | None:
    """The median of `every` (sorted) less the values of `mine` (sorted, each one of
    `every`'s), in O(m log m + log n log m); None where nothing is left."""
    left = len(every) - len(mine)
    if left <= 0:
        return None

    def kth(k: int) -> float:  # the k-th smallest (from 0) of what is left
        low, high = 0, len(every) - 1
        while low < high:  # the first value with more than k of what is left at or below
            mid = (low + high) // 2
            at = every[mid]
            if bisect.bisect_right(every, at) - bisect.bisect_right(mine, at) > k:
                high = mid
            else:
                low = mid + 1
        return every[low]

    return (kth((left - 1) // 2) + kth(left // 2)) / 2


def suspects(run: LatencyRun, size: int, factor: float) -> list[str]:
    """The nodes that stand out above `factor` (LatencyRun.far), the worst first (at most
    RETEST_MOST)."""
    found = run.far(size, factor)
    return sorted(found, key=lambda n: (-found[n], n))[:RETEST_MOST]


def _with_good_peers(run: LatencyRun, spec: InterconnectSpec, far: list[str]) -> list[str]:
    """The suspects `far` and as many nodes nearest the cluster's median."""
    middle = run.cluster_median(spec.latency_size) or 0.0
    near = sorted((abs(m - middle), n) for n in run.nodes if n not in far
                  and (m := run.median(n, spec.latency_size)) is not None)
    return [*far, *(n for _, n in near[:len(far)])]


def run_latency(launcher: Launcher, spec: InterconnectSpec, nodes: Sequence[str],
                leave_out: Mapping[str, str] | None = None,
                recheck: Recheck | None = None) -> LatencyRun:
    """The ping-pong over `nodes` as one job; its failure is the run's error. `leave_out`
    names nodes that cannot take part (node -> why: their host probe did not answer):
    the job runs without them (a rank of theirs would fail it for every node), and the
    run lists them (`left_out`); fewer than 2 nodes left is the run's error. `recheck`,
    when given, is asked after a failed job with its nodes: those it names (node -> why:
    they stopped answering) are left out too and the ping-pong is played once more
    without them (`details.first_error`: why the first job failed). Where it
    found nodes that stand out (above colocation_factor: LatencyRun.far),
    they are measured again in a second job before any is blamed: up to FULL_UP_TO nodes
    the whole tournament again, above it the worst with as many nodes nearest the
    cluster's median, every pair of them. The second job's pairs join the run's
    (`retested`; a pair measured twice counts its smaller figure), so a far node is judged
    on more peers, known-good ones among them, and a node a busy host slowed in the first
    job only is not blamed."""
    left = {node: why for node, why in (leave_out or {}).items() if node in nodes}
    nodes = [node for node in nodes if node not in left]
    base = LatencyRun(tuple(nodes), spec.backend, spec.latency_sizes(),
                      schedule(len(nodes)), rounds_of(len(nodes)), left_out=left)
    if len(nodes) < 2:
        return replace(base, error=f"fewer than 2 nodes could take part, no pair to "
                                   f"measure (left out: {', '.join(left)})" if left
                       else "fewer than 2 nodes: no pair to measure")
    run = _one_job(launcher, spec, nodes, base)
    if not run.ok and recheck is not None:
        gone = {node: f"{why} (read again after the ping-pong failed: {run.error})"
                for node, why in recheck(list(nodes)).items() if node in nodes}
        if gone:
            again = run_latency(launcher, spec, nodes, gone)
            return replace(again, left_out={**left, **again.left_out},
                           simulated=again.simulated or run.simulated,
                           details={**again.details, "first_error": run.error})
    if not run.ok:
        return run
    far = suspects(run, spec.latency_size, spec.colocation_factor)
    if not far:
        return run
    group = list(nodes) if len(nodes) <= FULL_UP_TO else _with_good_peers(run, spec, far)
    again = _one_job(launcher, spec, group, replace(run, links=(), round_trips=()))
    if not again.ok:  # the first job's figures stand; the re-test's failure is said
        return replace(run, details={**run.details, "retest_error": again.error})
    return replace(run, links=(*run.links, *again.links),
                   round_trips=(*run.round_trips, *again.round_trips),
                   retested=tuple(far))


def document_id(prober: Prober) -> str:
    """The ping-pong's document in the run's probes/ directory (`<id>.json`)."""
    return key(prober, "latency")


def run(prober: Prober) -> LatencyRun:
    """The ping-pong over every node of the spec that answers its host probe (one rank
    each), as one job, run once per run, read once per process; the others are left out
    (Prober.left_out), as the slow-node search leaves them out."""
    spec = section(prober)

    def compute() -> dict[str, object]:
        hosts = prober.host_all()
        started = time.time()
        found = run_latency(prober.launcher, spec, prober.nodes, prober.left_out(),
                            prober.stopped_answering)
        return replace(found, simulated=found.simulated or any(
            result.simulated for result in hosts.values()),
            details={**found.details, "started_at": started,
                     "ended_at": time.time()}).to_json()

    def read() -> LatencyRun:
        prober.host_all()  # read before the measuring lock is taken (ProbeCache.alone)
        return LatencyRun.from_json(prober.cache.document(document_id(prober), compute))

    return prober.cache.kept(("record", document_id(prober)), read)
