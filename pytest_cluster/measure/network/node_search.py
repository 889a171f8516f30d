"""Finding the slow nodes of a fabric: pair the nodes, then test the suspects with
known-good nodes, bisecting, in about log2(N) rounds instead of N^2 pairs. The search
(find_slow_nodes) is pure: the caller's `measure` runs the groups (benchmark jobs, or a
fake fabric in the tests); `run` searches the cluster with all_reduce jobs
(measure/network/collectives.py), once per run.

A node is named slow only on evidence that holds: it ran alone with a node that reached
the bar with others (a known-good partner) and the pair stayed below the bar. A group's
busbw is its slowest member's pace: a node's figure is its own only where its partners
were known good when it ran (a slow node's, a suspect cleared with a good partner); where
they were not (the first round's pairs), the verdict names them (`bounded_by`), and the
figure speaks for the group, not for the node alone. Nodes the
caller already knows cannot take part (their probes failed) are left out and listed with
why; a node whose job failed with a known-good partner is "failed", not slow (where
that job hung and NCCL's RAS was asked, its words go with it, and whether the dead
ranks it named single the node out: `ras`); when no group reaches the bar, no node is
known good and the nodes left are "undecided".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from pytest_cluster.contract.reading.documents import record_of
from pytest_cluster.contract.sections.busbw import CollectiveRun, required_busbw, theoretical
from pytest_cluster.measure import plausible
from pytest_cluster.measure.nccl_ras import RANK_DEAD
from pytest_cluster.measure.network.collectives import collective, key, section
from pytest_cluster.units import format_number

if TYPE_CHECKING:
    from pytest_cluster.measure.prober import Prober

#: Runs groups of nodes at once (each group one job) and returns each group's busbw in
#: bytes/s, or NaN where the job failed.
Measure = Callable[[list[list[str]]], list[float]]
#: Asked after a round with the nodes of its groups whose job failed: those of them now
#: known unable to take part (node -> why, e.g. its port was seen down), left out of
#: every later round. A node it cannot tell about is not among them.
Recheck = Callable[[list[str]], Mapping[str, str]]

OK = "ok"
SLOW = "slow"
FAILED = "failed"  # its job with a known-good partner failed: not measured
#: its group with a known-good partner claimed a busbw above the physical ceiling (the
#: links' theoretical rate x plausible.CEILING_FACTOR): bad output, never a pass
IMPLAUSIBLE = "implausible"
UNDECIDED = "undecided"  # no known-good partner to compare with
NOT_SEARCHED = "not_searched"  # left out by the caller (its probes failed, its port down)
#: Rounds spent re-pairing suspects when no pair reached the bar, before giving up.
REMATCH_ROUNDS = 3
#: How a node's case says the search left it UNDECIDED (before why).
COULD_NOT_DECIDE = "the slow-node search could not decide"
NO_GOOD = ("no group reached the bar, so no node is known good to compare with: the "
           "search cannot tell which node is slow (the whole fabric may be slow)")


@dataclass(frozen=True)
class SearchVerdict:
    node: str
    status: str  # OK, SLOW, FAILED, IMPLAUSIBLE, UNDECIDED or NOT_SEARCHED
    busbw: float  # of the group that decided it (NaN: its job failed, or none ran)
    partners: tuple[str, ...]  # the other nodes of that group
    round: int
    why: str = ""  # for FAILED, UNDECIDED and NOT_SEARCHED
    #: the partners not known good when the group ran: its busbw is as much theirs as
    #: this node's (the slower bounds it), so it is no figure of this node alone
    bounded_by: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == OK


@dataclass(frozen=True)
class RasSaid:
    """What NCCL's RAS said of the hung job that failed a node with its known-good
    partner (measure/nccl_ras.py)."""

    #: its words, as the job's error ends with them ('NCCL RAS: rank 9 (gpu-003, GPU 1)
    #: DEAD (asked on gpu-001 by rank 0)')
    text: str
    #: the ranks it calls DEAD single this node out (RANK_DEAD, the node among the job's
    #: culprits): the node's failure is a dead rank's, not a failed measurement's
    rank_dead: bool = False


@dataclass(frozen=True)
class NodeSearch:
    verdicts: dict[str, SearchVerdict]
    rounds: tuple[tuple[tuple[tuple[str, ...], float], ...], ...]  # per round: (group, busbw)
    bar_bytes_per_s: float
    note: str = ""
    simulated: bool = False
    not_searched: dict[str, str] = field(default_factory=dict)  # node -> why
    #: node -> why, for a node the search left FAILED or UNDECIDED after the job that
    #: decided it ended with an exception in our own code: a fault of the tool, no node's
    crashed: dict[str, str] = field(default_factory=dict)
    #: node -> what NCCL's RAS said, for a node the search left FAILED after the job that
    #: decided it hung and its ranks asked RAS (with_ras)
    ras: dict[str, RasSaid] = field(default_factory=dict)

    def named(self, status: str) -> list[str]:
        return [n for n, v in self.verdicts.items() if v.status == status]

    def to_json(self) -> dict[str, object]:
        return {"verdicts": {n: asdict(v) for n, v in self.verdicts.items()},
                "rounds": [[[list(g), bw] for g, bw in r] for r in self.rounds],
                "bar_bytes_per_s": self.bar_bytes_per_s, "note": self.note,
                "simulated": self.simulated, "not_searched": self.not_searched,
                "crashed": self.crashed,
                "ras": {n: asdict(said) for n, said in self.ras.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> NodeSearch:
        return record_of(cls, data)


def with_crashes(search: NodeSearch, crashed: Mapping[frozenset[str], str]) -> NodeSearch:
    """`search` with each node whose verdict (FAILED or UNDECIDED) its group's job decided
    by crashing in our code (`crashed`: group -> why) named in its `crashed`."""
    named = {node: crashed[group] for node, verdict in search.verdicts.items()
             if verdict.status in (FAILED, UNDECIDED)
             and (group := frozenset((node, *verdict.partners))) in crashed}
    return replace(search, crashed=named)


def with_ras(search: NodeSearch, hung: Mapping[frozenset[str], CollectiveRun]) -> NodeSearch:
    """`search` with what NCCL's RAS said for each node left FAILED by a job that hung
    and asked it (`hung`: group -> its failed run, CollectiveRun.ras): its words, and
    whether its dead ranks single the node out (RANK_DEAD, the node among its culprits)."""
    said = {node: RasSaid(run.ras, run.error_kind == RANK_DEAD and node in run.culprits)
            for node, verdict in search.verdicts.items() if verdict.status == FAILED
            and (run := hung.get(frozenset((node, *verdict.partners)))) is not None}
    return replace(search, ras=said)


def _chunks(items: list[str], count: int) -> list[list[str]]:
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        out.append(items[start:end])
        start = end
    return [c for c in out if c]


class _Search:
    """The state of one slow-node search: verdicts so far, known-good nodes, rounds."""

    def __init__(self, measure: Measure, bar: float, recheck: Recheck | None = None,
                 ceiling: float = math.inf) -> None:
        self.measure, self.bar, self.recheck = measure, bar, recheck
        self.ceiling = ceiling
        self.out: dict[str, SearchVerdict] = {}  # left out after a failed job (recheck)
        self.verdicts: dict[str, SearchVerdict] = {}
        self.rounds: list[tuple[tuple[tuple[str, ...], float], ...]] = []
        self.good: list[str] = []
        self.last: dict[str, tuple[float, tuple[str, ...]]] = {}
        self.tried: set[frozenset[str]] = set()  # pairs that ran together, below the bar

    def run(self, groups: list[list[str]]) -> list[float]:
        values = self.measure(groups)
        self.rounds.append(tuple((tuple(g), v) for g, v in zip(groups, values, strict=True)))
        failed = {m: g for g, v in zip(groups, values, strict=True) if math.isnan(v)
                  for m in g if m not in self.out}
        if failed and self.recheck is not None:
            for node, why in self.recheck(list(failed)).items():
                if node in failed:
                    self.out[node] = SearchVerdict(
                        node, NOT_SEARCHED, math.nan,
                        tuple(m for m in failed[node] if m != node), len(self.rounds), why)
                    self.verdicts.pop(node, None)
                    self.good = [m for m in self.good if m != node]
        return values

    def left(self, nodes: list[str]) -> list[str]:
        """`nodes` but those left out after a failed job."""
        return [m for m in nodes if m not in self.out]

    def judge(self, members: list[str], group: list[str], busbw: float) -> bool:
        """Members clear if the group reached the bar; else they stay suspects for now. A
        cleared member's figure is bounded by its partners not yet known good."""
        passed = not math.isnan(busbw) and self.bar <= busbw <= self.ceiling
        for member in members:
            partners = tuple(m for m in group if m != member)
            if passed:
                self.verdicts[member] = SearchVerdict(
                    member, OK, busbw, partners, len(self.rounds),
                    bounded_by=tuple(m for m in partners if m not in self.good))
            else:
                self.last[member] = (busbw, partners)
        if passed:
            self.good.extend(m for m in members if m not in self.good)
        elif len(group) == 2:
            self.tried.add(frozenset(group))
        return passed

    def decide(self, member: str, partner: str) -> None:
        """A lone suspect below the bar with a known-good partner: slow, or failed when
        its job failed (no number: not evidence of slowness)."""
        busbw, partners = self.last[member]
        if math.isnan(busbw):
            self.verdicts[member] = SearchVerdict(
                member, FAILED, busbw, partners, len(self.rounds),
                f"the all_reduce with {partner}, known good, failed")
        elif busbw > self.ceiling:
            self.verdicts[member] = SearchVerdict(
                member, IMPLAUSIBLE, busbw, partners, len(self.rounds),
                f"the all_reduce with {partner}, known good, claimed "
                f"{format_number(busbw / 1e9)} GB/s, above the physical ceiling of "
                f"{format_number(self.ceiling / 1e9)} GB/s (bad output of the node)")
        else:
            self.verdicts[member] = SearchVerdict(member, SLOW, busbw, partners,
                                                len(self.rounds))

    def undecided(self, member: str, why: str) -> None:
        busbw, partners = self.last.get(member, (math.nan, ()))
        self.verdicts[member] = SearchVerdict(member, UNDECIDED, busbw, partners,
                                            len(self.rounds), why)

    def groups_for(self, chunks: list[list[str]]) -> tuple[list[list[str]], list[list[str]]]:
        """(groups to run, the chunks they test): a known-good partner while there are
        some, else the chunk alone; a lone suspect with no partner waits."""
        groups, tested, partners = [], [], iter(self.good[:])
        for chunk in chunks:
            partner = next(partners, None)
            if partner is None and len(chunk) == 1:
                continue
            groups.append([*chunk, partner] if partner is not None else list(chunk))
            tested.append(chunk)
        return groups, tested

    def rematch(self, suspects: list[str]) -> list[list[str]]:
        """Pairs of suspects that have not yet run as a pair (greedy, in order): while no
        node is known good, a pair that reaches the bar makes two."""
        pairs: list[list[str]] = []
        free = list(suspects)
        while free:
            first = free.pop(0)
            other = next((n for n in free if frozenset((first, n)) not in self.tried), None)
            if other is not None:
                free.remove(other)
                pairs.append([first, other])
        return pairs


def find_slow_nodes(nodes: Sequence[str], measure: Measure, bar: float,
                    max_rounds: int = 32,
                    leave_out: Mapping[str, str] | None = None,
                    recheck: Recheck | None = None, ceiling: float = math.inf) -> NodeSearch:
    """Which nodes hold the network back, in about log2(N) rounds instead of N^2 pairs.

    `leave_out` names nodes that cannot take part (node -> why, e.g. its host probe
    failed): they run in no group and are reported NOT_SEARCHED. Round 1 pairs the others
    (each once; an odd one out joins the last pair): nodes of a pair at or above `bar` are
    known good, the others suspects. While no node is known good, suspects are paired
    anew (pairs not yet tried, up to REMATCH_ROUNDS rounds). Each later round splits the
    suspects into groups, twice as many as the round before (bisection) and at least one
    per known-good node; a group gets a known-good node while there are some, else runs
    alone (a single suspect without a partner waits). A group at the bar clears its
    members; a lone suspect below it with a good partner is slow (or failed, if its job
    failed). The suspects are ordered so that the two members of a slow pair land in
    different halves. Suspects left without a known-good partner are UNDECIDED: never
    named slow without evidence. `recheck`, when given, is asked after each round about
    the nodes of its failed jobs: a node it names (its port seen down) is NOT_SEARCHED
    from then on, with why, and runs in no later group (a job with it would fail again,
    after waiting out its timeout), its partners tested on. A group above `ceiling` (what
    its links cannot carry) clears no one: its members stay suspects, and a lone suspect
    that claims it again with a good partner is IMPLAUSIBLE (bad output), never OK."""
    excluded = dict(leave_out or {})
    order = [n for n in nodes if n not in excluded]
    skipped = {n: SearchVerdict(n, NOT_SEARCHED, math.nan, (), 0, why)
               for n, why in excluded.items() if n in nodes}

    def result(search: _Search | None, note: str) -> NodeSearch:
        out = {**(search.out if search else {}), **skipped}
        verdicts = {**(search.verdicts if search else {}), **out}
        return NodeSearch({n: verdicts[n] for n in nodes if n in verdicts},
                          tuple(search.rounds) if search else (), bar, note,
                          not_searched={n: out[n].why for n in nodes if n in out})

    if len(order) < 2:
        search = _Search(measure, bar)
        why = ("fewer than 2 nodes could take part: no pair to test" if excluded
               else "fewer than 2 nodes: no pair to test")
        for node in order:
            search.undecided(node, why)
        return result(search, why)
    search = _Search(measure, bar, recheck, ceiling)
    pairs = [order[i:i + 2] for i in range(0, len(order) - 1, 2)]
    if len(order) % 2:
        pairs[-1].append(order[-1])
    failed = [g for g, bw in zip(pairs, search.run(pairs), strict=True)
              if not search.judge(g, g, bw)]
    # first members of every slow pair, then the second ones: halves split the pairs
    suspects = search.left([g[i] for i in range(3) for g in failed if i < len(g)])
    for _ in range(REMATCH_ROUNDS):
        if search.good or len(search.rounds) >= max_rounds:
            break
        groups = search.rematch(suspects)
        if not groups:
            break
        for group, busbw in zip(groups, search.run(groups), strict=True):
            search.judge(group, group, busbw)
        suspects = search.left([m for m in suspects if m not in search.good])
    chunks_before, note = 1, ""
    while suspects:
        if not search.good:
            note = NO_GOOD
            break
        if len(search.rounds) >= max_rounds:
            note = f"stopped after {max_rounds} rounds"
            break
        chunks_before = min(len(suspects), max(len(search.good), 2 * chunks_before))
        chunks = _chunks(suspects, chunks_before)
        groups, tested = search.groups_for(chunks)
        suspects = [m for chunk in chunks if chunk not in tested for m in chunk]
        for chunk, group, busbw in zip(tested, groups, search.run(groups), strict=True):
            if search.judge(chunk, group, busbw):
                continue
            still = search.left(chunk)
            if len(still) == 1 and len(group) == 2 and group[1] not in search.out:
                search.decide(still[0], group[1])
            else:
                suspects.extend(still)
    for member in suspects:
        search.undecided(member, note)
    return result(search, note)


def bar(prober: Prober) -> float:
    """The busbw a group of nodes must reach in the slow-node search (bytes/s): the
    node_network clause's bound."""
    clause, _ = required_busbw(section(prober), 2, "node_network")
    return clause.requirement.bound.value


def ceiling(prober: Prober) -> float:
    """The most busbw a pair of nodes can reach (bytes/s): plausible.CEILING_FACTOR x
    the theoretical rate of the spec's links (no bound where it declares none)."""
    theory = theoretical(section(prober), 2)
    return plausible.CEILING_FACTOR * theory.bytes_per_s if theory else math.inf


def document_id(prober: Prober) -> str:
    """The slow-node search's id: it is stored once per run as `<id>.json` in the
    run's probes/ directory, and each node's case refers to it by this id."""
    return key(prober, "search", section(prober).search_payload)


def run(prober: Prober) -> NodeSearch:
    """Pairs, then suspects with known-good nodes (all_reduce at search_payload); run
    once per run, read once per process."""
    return prober.cache.kept(("record", document_id(prober)), lambda: _search(prober))


def _search(prober: Prober) -> NodeSearch:
    size = section(prober).search_payload
    crashed: dict[frozenset[str], str] = {}  # a group whose job crashed in our code
    hung: dict[frozenset[str], CollectiveRun] = {}  # ... whose hung job asked NCCL's RAS

    def measure(groups: list[list[str]]) -> list[float]:
        def one(group: list[str]) -> float:
            found = collective(prober, "all_reduce", group, [size])
            if found.crashed:
                crashed[frozenset(group)] = found.error
            if found.ras:
                hung[frozenset(group)] = found
            point = found.at(size) if found.ok else None
            return point.busbw if point is not None else math.nan
        with ThreadPoolExecutor(max_workers=prober.jobs_at_once(len(groups))) as pool:
            return list(pool.map(one, groups))

    hosts = prober.host_all()
    # a node whose host probe failed is left out: paired, it would fail its partner
    simulated = any(result.simulated for result in hosts.values())
    document = prober.cache.document(
        document_id(prober),
        lambda: replace(with_ras(with_crashes(find_slow_nodes(
            prober.nodes, measure, bar(prober), leave_out=prober.left_out(),
            ceiling=ceiling(prober)), crashed), hung),
            simulated=simulated).to_json())
    return NodeSearch.from_json(document)
