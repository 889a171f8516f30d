"""Small-message latency between node pairs, one rank of a distributed job (one rank per
node, started by job_node).

The job runs in rounds of disjoint pairs: the round-robin tournament's (the circle
method, `pairs_of_round`), so over every round each node meets every other once; the
controller may pick a few rounds of it (`--rounds`) on a large cluster. In a round, each
rank with a partner plays ping-pong with it on torch.distributed point-to-point (send and
recv on the job's backend: gloo on CPUs, nccl on GPUs): for each message size, `--warmup`
exchanges, then `--iterations` timed ones, the lower rank sending first and timing each
round trip with the host clock (on GPUs after a synchronise of each message). The pair's
round trip is `typical`: the median over bursts of BURST exchanges of each burst's
fastest (a round trip the host slowed does not count; a longer path counts in every
burst). Every
rank waits for the others (a barrier) before the next round, so pairs of one round share
the network with each other only. Prints one JSON line with this rank's pairs, each
size's round trip (typical, median, minimum, 90th percentile; the one-way latency is
half).

Environment from job_node: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT,
PYTEST_CLUSTER_INIT_TIMEOUT. Needs torch.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import sys
import time
from typing import Any, TypedDict

#: Exchanges per burst (see `typical`).
BURST = 10


class RoundTrips(TypedDict):
    """One payload's round trips between a pair (seconds), and how many were timed."""

    typical_rtt_s: float
    median_rtt_s: float
    min_rtt_s: float
    p90_rtt_s: float
    count: int


class Pair(TypedDict):
    """A pair the low rank played: its peer, the round, per payload (bytes, as text) its
    round trips."""

    peer: int
    round: int
    sizes: dict[str, RoundTrips]


class _PingpongData(TypedDict):
    rank: int
    world: int
    backend: str
    warmup: int
    iterations: int
    pairs: list[Pair]  # the pairs this rank was the low one of


class PingpongData(_PingpongData, total=False):
    """What a rank prints (the sim's: `simulated`)."""

    host: str
    torch: str
    device: str  # nccl: the GPU's name
    simulated: bool


def pairs_of_round(count: int, index: int) -> list[tuple[int, int]]:
    """The disjoint pairs of round `index` (0 to rounds_of(count) - 1) of the round-robin
    tournament of `count` players (the circle method: the first stays, the others turn);
    with an odd count one player sits out each round. Each pair (low, high)."""
    players = count + count % 2  # an odd count plays with a bye (the extra index)
    turning = list(range(1, players))
    shift = index % max(len(turning), 1)
    order = [0, *turning[shift:], *turning[:shift]]
    pairs = []
    for i in range(players // 2):
        a, b = order[i], order[players - 1 - i]
        if a < count and b < count:
            pairs.append((min(a, b), max(a, b)))
    return pairs


def rounds_of(count: int) -> int:
    """How many rounds the whole tournament takes: every pair once."""
    return max(count + count % 2 - 1, 0)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def typical(rtt: list[float], burst: int = BURST) -> float:
    """The pair's round trip: the median over bursts of `burst` consecutive exchanges of
    each burst's fastest. A round trip the host slowed (a rank woken late on a busy node)
    does not count; a path that is longer (another switch) counts in every burst."""
    fastest = [min(rtt[at:at + burst]) for at in range(0, len(rtt), burst)]
    return percentile(fastest, 0.5)


def play(torch: Any, dist: Any, peer: int, first: bool, size: int, warmup: int,
         iterations: int, device: Any) -> list[float]:
    """Ping-pong of `size` bytes with `peer`; the round trips the first player timed."""
    buffer = torch.zeros(max(size, 1), dtype=torch.uint8, device=device)
    cuda = device.type == "cuda"
    times = []
    for index in range(warmup + iterations):
        start = time.perf_counter()
        if first:
            dist.send(buffer, peer)
            if cuda:
                torch.cuda.synchronize(device)
            dist.recv(buffer, peer)
        else:
            dist.recv(buffer, peer)
            if cuda:
                torch.cuda.synchronize(device)
            dist.send(buffer, peer)
        if cuda:
            torch.cuda.synchronize(device)
        if first and index >= warmup:
            times.append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", required=True, help="comma-separated sizes in bytes")
    parser.add_argument("--rounds", default="", help="the tournament's rounds to play, "
                        "comma-separated (default: every round)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="gloo")
    args = parser.parse_args(argv)
    import torch  # noqa: PLC0415 - a node without torch fails here, named by job_node
    import torch.distributed as dist  # noqa: PLC0415

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    timeout = datetime.timedelta(seconds=float(os.environ.get("PYTEST_CLUSTER_INIT_TIMEOUT",
                                                              "60")))
    if args.backend == "nccl":
        if not torch.cuda.is_available():
            sys.exit(f"nccl needs CUDA: torch {torch.__version__} sees no GPU on "
                     f"{socket.gethostname()}")
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", timeout=timeout, device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", timeout=timeout)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    rounds = [int(r) for r in args.rounds.split(",") if r] or list(range(rounds_of(world)))
    pairs: list[Pair] = []
    try:
        for index in rounds:
            for low, high in pairs_of_round(world, index):
                if rank not in (low, high):
                    continue
                peer = high if rank == low else low
                measured: dict[str, RoundTrips] = {}
                for size in sizes:
                    rtt = play(torch, dist, peer, rank == low, size, args.warmup,
                               args.iterations, device)
                    if rtt:
                        measured[str(size)] = {
                            "typical_rtt_s": typical(rtt), "median_rtt_s": percentile(rtt, 0.5),
                            "min_rtt_s": min(rtt), "p90_rtt_s": percentile(rtt, 0.9),
                            "count": len(rtt)}
                if rank == low:
                    pairs.append({"peer": peer, "round": index, "sizes": measured})
            dist.barrier()
    finally:
        dist.destroy_process_group()
    info: PingpongData = {"rank": rank, "world": world, "host": socket.gethostname(),
                          "backend": args.backend, "torch": torch.__version__,
                          "warmup": args.warmup, "iterations": args.iterations,
                          "pairs": pairs}
    if args.backend == "nccl":
        info["device"] = torch.cuda.get_device_name(device)
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
