"""Who held a training job up, from what its ranks reported (probes/jobs/train.py): pure
functions over small records, so that each verdict is tested on its own.

A hang (name_hang): the ranks that stopped advancing are named, not the ranks waiting for
them. A rank that gave no sign of life (its heartbeat stopped: stopped or frozen, killed
by its node) is named first; else the ranks that are behind the others (an earlier step,
or an earlier phase of the same step: still in the forward pass while the others wait in
the all-reduce after it). When every rank is at the same point, none is named: the
collective itself does not complete, and the message says so rather than guess.

A slow run (name_straggler): a rank whose forward pass is slow makes the others wait for
it in the all-reduce after the forward pass, while it waits least: it is named from its
forward time and its wait time, when its extra forward time accounts for at least half
of their wait. A rank the others wait for whose forward pass does not explain it comes
late into its steps (it leaves the previous step's gradient all-reduce last): that is
said, not called slow compute, unless the link probe places a slow link, which explains
it (in a ring, a rank next to the slow link may be the one that comes out last).

A slow link shows on every rank alike in the gradient all-reduce (a ring moves at its
slowest link's pace), so the step times cannot place it; the link probe's pairwise
exchanges can: every exchange the node with the slow link is in is slow, while the
exchanges among the other nodes are not. With two nodes every exchange involves both,
and the message says a slow link cannot be placed.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_cluster.measure.plausible import STEP_SECONDS

#: Training phases in their order within a step (probes/jobs/train.py).
PHASES = ("forward", "wait", "backward", "optimiser")
#: What comes before the first step (step -1), in order: the rank started, importing
#: torch, in the rendezvous (init_process_group), in DDP's setup; and after the steps.
BEFORE = ("start", "import torch", "rendezvous", "setup")
AFTER = ("link probe", "final barrier", "done")
#: Where a rank is, for the ranks that wait: "... wait for it in the all-reduce ...".
WHERE = {"forward": "in the forward pass", "wait": "in the all-reduce after the forward "
         "pass", "backward": "in the backward pass's gradient all-reduce",
         "optimiser": "in the optimiser step", "link probe": "in the link probe",
         "final barrier": "in the final barrier", "start": "before the first step",
         "import torch": "while importing torch",
         "rendezvous": "in the rendezvous (init_process_group)",
         "setup": "in DDP's setup"}
#: Phases without a collective in them.
COMPUTING = ("forward", "optimiser", "start", "import torch")
#: A rank is named slowest in compute when its forward pass is this much over the others'
#: median (and over MIN_EXCESS_S); a node's link when its exchanges take LINK_FACTOR times
#: the other nodes' median.
COMPUTE_FACTOR = 1.25
LINK_FACTOR = 2.0
MIN_EXCESS_S = 0.002
#: At most this many ranks are named in one message; the rest are counted.
MAX_NAMED = 8


@dataclass(frozen=True)
class Progress:
    """Where one rank was when it ended: its step and phase, how long it had been in that
    phase and since its last heartbeat, and whether its node killed it for silence."""

    node: str
    rank: int
    step: int
    phase: str
    phase_s: float
    silent_s: float
    stalled: bool = False

    @classmethod
    def of(cls, node: str, rank: int, record: Mapping[str, Any] | None,
           exit_code: object) -> Progress | None:
        """From job_node's progress record of a rank; None when it has none usable."""
        if not record or not isinstance(record.get("step"), int):
            return None
        return cls(node, rank, int(record["step"]), str(record.get("phase", "")),
                   float(record.get("phase_s", 0.0)), float(record.get("silent_s", 0.0)),
                   exit_code == "stalled")

    @property
    def order(self) -> tuple[int, int, int]:
        """How far the rank got: training steps, then the link probe, the final barrier."""
        if self.phase in PHASES:
            return (1, self.step, PHASES.index(self.phase))
        if self.phase in AFTER:
            return (2 + AFTER.index(self.phase), self.step, 0)
        if self.phase in BEFORE:
            return (0, 0, BEFORE.index(self.phase))
        return (0, self.step, 0)

    @property
    def at(self) -> str:
        if self.phase in PHASES:
            return f"step {self.step} ({self.phase})"
        if self.phase == "link probe":
            return f"link probe round {self.step}"
        if self.phase in BEFORE:
            return f"{self.phase} (before its first step)"
        return self.phase


def seconds(value: float) -> str:
    """'8.4 s', '0.42 s', '3.1 ms': a duration with its unit, to a useful precision."""
    if value >= 1:
        return f"{value:.1f} s"
    if value >= 0.1:
        return f"{value:.2f} s"
    return f"{value * 1e3:.2g} ms" if value < 0.01 else f"{value * 1e3:.1f} ms"


def rank_list(ranks: Iterable[int]) -> str:
    """'0-3, 7, 9, 10': ranks in order, runs of three or more shortened."""
    runs: list[list[int]] = []
    for rank in sorted(set(ranks)):
        if runs and rank == runs[-1][-1] + 1:
            runs[-1].append(rank)
        else:
            runs.append([rank])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r))
                     for r in runs)


def _ranks_word(ranks: Sequence[int]) -> str:
    return f"rank{'s' if len(ranks) > 1 else ''} {rank_list(ranks)}"


def name_hang(records: Sequence[Progress], bound_s: float, silent_after_s: float,
              world: Sequence[int] = ()) -> str:
    """Who hung, and who waits for them. `silent_after_s`: a heartbeat older than this
    means the process is stopped or frozen. `world`: every rank of the job (those with
    no record are said to have reported no progress)."""
    live = [p for p in records if p.phase != "done"]
    silent = [p for p in live if p.stalled or p.silent_s > silent_after_s]
    named = silent
    if not named and live:
        least = min(p.order for p in live)
        if least < max(p.order for p in live):
            named = [p for p in live if p.order == least]
    missing = sorted(set(world) - {p.rank for p in records})
    tail = f"; no progress from {_ranks_word(missing)}" if missing else ""
    if not named:
        if not live:
            return "no rank reported where it was" + tail
        longest = max(live, key=lambda p: p.phase_s)
        why = ("the step's own work is slower than the bound"
               if all(p.phase in COMPUTING for p in live) else
               "its collective is slower than the bound or does not complete")
        return (f"no rank is behind: every rank is at {longest.at}, for up to "
                f"{seconds(longest.phase_s)} (bound {bound_s:g} s), each with a heartbeat: "
                f"no single rank holds the others up; {why}" + tail)
    named = sorted(named, key=lambda p: p.rank)
    parts = []
    for p in named[:MAX_NAMED]:
        text = (f"{p.node} rank {p.rank}: stuck at {p.at} for {seconds(p.phase_s)} "
                f"(bound {bound_s:g} s)")
        if p in silent:
            text += f", no sign of life for {seconds(p.silent_s)}: stopped or frozen"
        parts.append(text)
    if len(named) > MAX_NAMED:
        parts.append(f"and {len(named) - MAX_NAMED} more rank(s) like them")
    others: dict[str, list[int]] = {}
    for p in live:
        if p not in named:
            others.setdefault(WHERE.get(p.phase, p.phase), []).append(p.rank)
    it = "it" if len(named) == 1 else "them"
    waiting = "; ".join(f"{_ranks_word(ranks)} wait{'' if len(ranks) > 1 else 's'} for "
                        f"{it} {where}"
                        for where, ranks in sorted(others.items(), key=lambda kv: kv[1][0]))
    return "; ".join(parts) + (f"; {waiting}" if waiting else "") + tail


@dataclass(frozen=True)
class RankTimes:
    """One rank's medians over the measured steps, and its link exchanges."""

    node: str
    rank: int
    forward_s: float
    wait_s: float
    exchange_s: Mapping[int, float] = field(default_factory=dict)  # partner rank: seconds

    @classmethod
    def of(cls, node: str, rank: int, data: Mapping[str, Any]) -> RankTimes:
        """A rank's times as it reported them, each over its plausible figures only
        (plausible.STEP_SECONDS: a negative time or one of 1e300 s is in no median)."""
        link = data.get("link")
        exchange = link.get("exchange_s") if isinstance(link, dict) else None
        return cls(node, rank, _median(data.get("forward_s")), _median(data.get("wait_s")),
                   {int(k): float(v) for k, v in (exchange.items() if isinstance(
                       exchange, dict) else ()) if isinstance(k, str) and k.isdecimal()
                    and len(k) < 10 and STEP_SECONDS.holds(v)})


def _median(values: object) -> float:
    kept = [float(v) for v in values if STEP_SECONDS.holds(v)] \
        if isinstance(values, list) else []
    return float(statistics.median(kept)) if kept else 0.0


def _size(size_bytes: int) -> str:
    return f"{size_bytes / 2**20:g} MiB" if size_bytes >= 2**20 else f"{size_bytes} B"


def _waited_for(ranks: Sequence[RankTimes]) -> tuple[RankTimes, float, float, float] | None:
    """(the rank the others wait for after the forward pass, their median forward time,
    their median wait, how much longer they wait than it), or None when none is."""
    if len(ranks) < 2:
        return None
    last = min(ranks, key=lambda r: (r.wait_s, -r.forward_s))
    others = [r for r in ranks if r is not last]
    forward = statistics.median(r.forward_s for r in others)
    wait = statistics.median(r.wait_s for r in others)
    waited = wait - last.wait_s
    if waited <= MIN_EXCESS_S or waited <= (COMPUTE_FACTOR - 1) * forward:
        return None
    return last, forward, wait, waited


def slow_compute(ranks: Sequence[RankTimes]) -> str:
    """The rank whose slow forward pass the others wait for (its extra forward time
    accounts for at least half of their wait), or ''."""
    found = _waited_for(ranks)
    if found is None:
        return ""
    last, forward, wait, waited = found
    if last.forward_s - forward < waited / 2 or last.forward_s <= COMPUTE_FACTOR * forward:
        return ""
    return (f"{last.node} rank {last.rank} computes slowest: its forward pass takes "
            f"{seconds(last.forward_s)} per step against {seconds(forward)} on the other "
            f"ranks (median), and they wait {seconds(wait)} per step for it after the "
            f"forward pass while it waits {seconds(last.wait_s)}")


def comes_late(ranks: Sequence[RankTimes]) -> str:
    """The rank the others wait for though its forward pass does not explain it, or ''."""
    found = _waited_for(ranks)
    if found is None:
        return ""
    last, forward, wait, _ = found
    return (f"the others wait {seconds(wait)} per step for {last.node} rank {last.rank} "
            f"after the forward pass (it waits {seconds(last.wait_s)}), though its forward "
            f"pass takes {seconds(last.forward_s)} against their {seconds(forward)}: it "
            f"comes late into its steps, out of the previous step's gradient all-reduce "
            f"(not slow compute; a link the link probe could not place, or the host)")


def slow_link(ranks: Sequence[RankTimes], size_bytes: int) -> str:
    """The node whose link is slow, from the pairwise exchanges; '' when none stands out,
    a sentence saying so when the nodes are too few to tell."""
    node_of = {r.rank: r.node for r in ranks}
    nodes = sorted(set(node_of.values()))
    pairs: dict[tuple[int, int], float] = {}  # each off-node exchange, its slower side
    for r in ranks:
        for peer, took in r.exchange_s.items():
            if node_of.get(peer, r.node) != r.node:
                key = (min(r.rank, peer), max(r.rank, peer))
                pairs[key] = max(took, pairs.get(key, 0.0))
    if not pairs:
        return ""
    if len(nodes) == 2:
        return ("two nodes: a slow link cannot be placed on either (every exchange "
                "between them involves both)")

    def split(node: str) -> tuple[list[float], list[float]]:
        """(the exchanges `node` is in, those it is not in)."""
        mine = [t for (a, b), t in pairs.items() if node in (node_of[a], node_of[b])]
        return mine, [t for (a, b), t in pairs.items()
                      if node not in (node_of[a], node_of[b])]

    with_worst = {node: split(node) for node in nodes}
    candidates = [n for n, (mine, rest) in with_worst.items() if mine and rest]
    if not candidates:
        return ""
    worst = max(candidates, key=lambda n: statistics.median(with_worst[n][0]))
    mine, rest = (statistics.median(v) for v in with_worst[worst])
    if mine <= LINK_FACTOR * rest or mine - rest <= MIN_EXCESS_S:
        return ""
    return (f"{worst}'s link is the slowest: exchanging {_size(size_bytes)} each way with "
            f"a rank on another node takes {seconds(mine)} (median of its "
            f"{len(with_worst[worst][0])} exchanges) against {seconds(rest)} between the "
            f"other nodes (median of {len(with_worst[worst][1])}): every exchange {worst} "
            f"is in is slow, the others' among themselves are not (in the gradient "
            f"all-reduce every rank waits alike: a ring moves at its slowest link)")


def name_straggler(ranks: Sequence[RankTimes], size_bytes: int) -> str:
    """Who holds a healthy run up: the slow rank in compute, the node with the slow link,
    both, or a line saying none stands out (with the ranges measured)."""
    compute, link = slow_compute(ranks), slow_link(ranks, size_bytes)
    if link and not link.startswith("two nodes"):  # a ring's late ranks follow from it
        return "; ".join(text for text in (compute, link) if text)
    found = [text for text in (compute or comes_late(ranks), link) if text]
    if any(not text.startswith("two nodes") for text in found):
        return "; ".join(found)
    if not ranks:
        return ""
    forward = sorted(r.forward_s for r in ranks)
    wait = sorted(r.wait_s for r in ranks)
    exchanges = sorted(s for r in ranks for s in r.exchange_s.values())
    text = (f"no rank stands out: forward pass {seconds(forward[0])} to "
            f"{seconds(forward[-1])} per step, wait after it {seconds(wait[0])} to "
            f"{seconds(wait[-1])}")
    if exchanges:
        text += (f", link exchanges of {_size(size_bytes)} "
                 f"{seconds(exchanges[0])} to {seconds(exchanges[-1])}")
    return text + "".join(f"; {t}" for t in found)
