"""Finding the slow nodes of a fabric: pair the nodes, then test the suspects with
known-good nodes, bisecting, in about log2(N) rounds instead of N^2 pairs. Pure: the
caller's `measure` runs the groups (benchmark jobs, or a fake fabric in the tests)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

#: Runs groups of nodes at once (each group one job) and returns each group's busbw in
#: bytes/s, or NaN where the job failed.
Measure = Callable[[list[list[str]]], list[float]]


@dataclass(frozen=True)
class NodeVerdict:
    node: str
    ok: bool
    busbw: float  # of the group that decided it (NaN: its job failed)
    partners: tuple[str, ...]  # the other nodes of that group
    round: int


@dataclass(frozen=True)
class NodeSearch:
    verdicts: dict[str, NodeVerdict]
    rounds: tuple[tuple[tuple[tuple[str, ...], float], ...], ...]  # per round: (group, busbw)
    bar_bytes_per_s: float
    note: str = ""
    simulated: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"verdicts": {n: asdict(v) for n, v in self.verdicts.items()},
                "rounds": [[[list(g), bw] for g, bw in r] for r in self.rounds],
                "bar_bytes_per_s": self.bar_bytes_per_s, "note": self.note,
                "simulated": self.simulated}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NodeSearch:
        verdicts = {n: NodeVerdict(v["node"], v["ok"], v["busbw"], tuple(v["partners"]),
                                   v["round"]) for n, v in data["verdicts"].items()}
        rounds = tuple(tuple((tuple(g), float(bw)) for g, bw in r) for r in data["rounds"])
        return cls(verdicts, rounds, float(data["bar_bytes_per_s"]), data.get("note", ""),
                   bool(data.get("simulated")))


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

    def __init__(self, measure: Measure, bar: float) -> None:
        self.measure, self.bar = measure, bar
        self.verdicts: dict[str, NodeVerdict] = {}
        self.rounds: list[tuple[tuple[tuple[str, ...], float], ...]] = []
        self.good: list[str] = []
        self.last: dict[str, tuple[float, tuple[str, ...]]] = {}

    def run(self, groups: list[list[str]]) -> list[float]:
        values = self.measure(groups)
        self.rounds.append(tuple((tuple(g), v) for g, v in zip(groups, values, strict=True)))
        return values

    def judge(self, members: list[str], group: list[str], busbw: float) -> bool:
        """Members clear if the group reached the bar; else they stay suspects for now."""
        for member in members:
            partners = tuple(m for m in group if m != member)
            if busbw >= self.bar:
                self.verdicts[member] = NodeVerdict(member, True, busbw, partners,
                                                    len(self.rounds))
            else:
                self.last[member] = (busbw, partners)
        if busbw >= self.bar:
            self.good.extend(m for m in members if m not in self.good)
        return busbw >= self.bar

    def slow(self, member: str) -> None:
        busbw, partners = self.last[member]
        self.verdicts[member] = NodeVerdict(member, False, busbw, partners, len(self.rounds))

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


def find_slow_nodes(nodes: Sequence[str], measure: Measure, bar: float,
                    max_rounds: int = 32) -> NodeSearch:
    """Which nodes hold the network back, in about log2(N) rounds instead of N^2 pairs.

    Round 1 pairs the nodes (each once; an odd one out joins the last pair): nodes of a
    pair at or above `bar` are known good, the others suspects. Each later round splits
    the suspects into groups, twice as many as the round before (bisection) and at least
    one per known-good node; a group gets a known-good node while there are some, else
    runs alone (a single suspect without a partner waits). A group at the bar clears its
    members; a lone suspect below it with a good partner is slow. The suspects are
    ordered so that the two members of a slow pair land in different halves."""
    order = list(nodes)
    if len(order) < 2:
        return NodeSearch({}, (), bar, "fewer than 2 nodes: no pair to test")
    search = _Search(measure, bar)
    pairs = [order[i:i + 2] for i in range(0, len(order) - 1, 2)]
    if len(order) % 2:
        pairs[-1].append(order[-1])
    failed = [g for g, bw in zip(pairs, search.run(pairs), strict=True)
              if not search.judge(g, g, bw)]
    # first members of every slow pair, then the second ones: halves split the pairs
    suspects = [g[i] for i in range(3) for g in failed if i < len(g)]
    chunks_before, note = 1, ""
    while suspects:
        if len(search.rounds) >= max_rounds:
            note = f"stopped after {max_rounds} rounds"
            break
        chunks_before = min(len(suspects), max(len(search.good), 2 * chunks_before))
        chunks = _chunks(suspects, chunks_before)
        groups, tested = search.groups_for(chunks)
        if not groups:
            note = ("no group reached the bar, so no node is known good to compare with: "
                    "the nodes left are named (the whole fabric may be slow)")
            break
        suspects = [m for chunk in chunks if chunk not in tested for m in chunk]
        for chunk, group, busbw in zip(tested, groups, search.run(groups), strict=True):
            if search.judge(chunk, group, busbw):
                continue
            if len(chunk) == 1 and len(group) == 2:
                search.slow(chunk[0])
            else:
                suspects.extend(chunk)
    for member in suspects:
        search.slow(member)
    return NodeSearch({n: search.verdicts[n] for n in order}, tuple(search.rounds), bar, note)
