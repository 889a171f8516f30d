"""The ping-pong (probes/jobs/pingpong.py) on simulated nodes: what each rank would print. A
healthy pair's one-way latency is a fixed start-up cost of its backend (NCCL over
InfiniBand a few microseconds, gloo over TCP some tens) plus the message's time on one
NIC of the spec's network, with a small jitter of its own per pair and size; a pair with a
far node (`latency_factor`: another spine) takes that many times as long, a slow network
(`link_factor`) moves the bytes slower. Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_cluster.probes.jobs.pingpong import pairs_of_round, rounds_of
from pytest_cluster.sim.cluster import jitter, latency_factor, link_factor

if TYPE_CHECKING:
    from pytest_cluster.contract.model import InterconnectSpec
    from pytest_cluster.contract.sections.sim_records import SimSpec
    from pytest_cluster.probes.job_node import RankEntry
    from pytest_cluster.probes.jobs.pingpong import Pair, RoundTrips

#: One-way start-up latency of a small message, by backend (seconds).
BASE_S = {"nccl": 3e-6, "gloo": 25e-6}
DEFAULT_NIC = 50e9  # bytes/s: one 400 Gb/s NIC when the spec names no network
_OPTIONS = ("--sizes", "--rounds", "--warmup", "--iterations", "--backend")


def read_args(args: Sequence[str]) -> dict[str, str]:
    """The ping-pong's `--option value` arguments; ValueError if they are not."""
    if len(args) % 2 or any(name not in _OPTIONS for name in args[::2]):
        raise ValueError(f"not the ping-pong's arguments: {list(args)}")
    given = dict(zip(args[::2], args[1::2], strict=True))
    if "--sizes" not in given:
        raise ValueError(f"not the ping-pong's arguments: {list(args)}")
    return given


def one_way(sim: SimSpec, spec: InterconnectSpec | None, backend: str, a: str, b: str,
            size: int) -> float:
    """The simulated one-way latency between nodes `a` and `b` for `size` bytes."""
    nic = spec.inter_node.rate_bytes_per_s if spec is not None and \
        spec.inter_node is not None else DEFAULT_NIC
    wire = size / (nic * min(link_factor(sim, a), link_factor(sim, b)))
    far = max(latency_factor(sim, a), latency_factor(sim, b))
    return (BASE_S.get(backend, BASE_S["gloo"]) * far + wire) * \
        jitter(min(a, b), max(a, b), size, spread=0.05)


def pingpong_ranks(sim: SimSpec, spec: InterconnectSpec | None, nodes: Sequence[str],
                   args: Sequence[str]) -> list[list[RankEntry]]:
    """Every node's one rank as job_node reports it, in node order."""
    given = read_args(args)
    sizes = [int(s) for s in given["--sizes"].split(",") if s]
    count = len(nodes)
    rounds = [int(r) for r in given.get("--rounds", "").split(",") if r] or \
        list(range(rounds_of(count)))
    backend = given.get("--backend", "gloo")
    iterations = int(given.get("--iterations", 100))
    pairs: list[list[Pair]] = [[] for _ in nodes]
    for index in rounds:
        for low, high in pairs_of_round(count, index):
            figures: dict[str, RoundTrips] = {}
            for size in sizes:
                rtt = 2 * one_way(sim, spec, backend, nodes[low], nodes[high], size)
                figures[str(size)] = {"typical_rtt_s": rtt, "median_rtt_s": rtt * 1.02,
                                      "min_rtt_s": rtt * 0.95, "p90_rtt_s": rtt * 1.1,
                                      "count": iterations}
            pairs[low].append({"peer": high, "round": index, "sizes": figures})
    return [[{"rank": rank, "local_rank": 0, "exit_code": 0, "ended_at": None,
              "stderr_tail": "",
              "data": {"rank": rank, "world": count, "backend": backend, "simulated": True,
                       "warmup": int(given.get("--warmup", 10)), "iterations": iterations,
                       "pairs": pairs[rank]}}] for rank in range(count)]
