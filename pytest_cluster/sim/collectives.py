"""Simulated collective benchmarks for `launcher: sim`: the numbers a healthy cluster of the
sim's GPU model would measure, changed by the faults (a node down, fewer GPUs, slow GPU
links, `link_factor` for a slow network). Marked simulated; nothing is run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from pytest_cluster.busbw import CollectiveRun, SizePoint, bus_factor, theoretical
from pytest_cluster.gpu_models import MODELS
from pytest_cluster.sim.cluster import describe_node, faults_on, gpu_count, gpu_link_rate, jitter
from pytest_cluster.spec.model import InterconnectSpec, SimSpec

#: What NCCL reaches of the wire (shared/GUIDE.md): ring over NVLink ~370 of 450 GB/s,
#: 46-48 of 50 GB/s per NDR NIC.
INTRA_EFFICIENCY = 0.82
INTER_EFFICIENCY = 0.93
#: Payload at which busbw is half its peak (latency-bound below).
HALF_PEAK_BYTES = {True: 32 * 2**20, False: 64 * 2**20}
DEFAULT_NETWORK = 8 * 50e9  # 8 x 400 Gb/s per node when the spec names no network


def _gpu_links(sim: SimSpec, node: str) -> float:
    """The slowest GPU link of `node` relative to a healthy GPU of the sim's model."""
    healthy = MODELS[sim.gpu_model].p2p_gb_s * 1e9
    rates = [gpu_link_rate(sim, node, index, gpu)
             for index, gpu in enumerate(describe_node(sim, node)["gpus"])]
    return min([1.0, *(rate / healthy for rate in rates)])


def _link_factor(sim: SimSpec, node: str) -> float:
    factors = [f.link_factor for f in faults_on(sim, node) if f.link_factor != 1.0]
    return factors[-1] if factors else 1.0


def simulated_run(sim: SimSpec, spec: InterconnectSpec, collective: str,
                  nodes: Sequence[str], sizes: Sequence[int],
                  ranks_per_node: int) -> CollectiveRun:
    base = CollectiveRun(collective, spec.backend, tuple(nodes), ranks_per_node,
                         simulated=True, details={"simulated": True})
    for node in nodes:  # (a node that is down fails earlier: its host probe)
        have = gpu_count(sim, node)
        if spec.backend == "nccl" and have < ranks_per_node:
            rank = nodes.index(node) * ranks_per_node + have
            return replace(base, error=f"{node} rank {rank} exited with code 1: LOCAL_RANK "
                                       f"{have} but {node} has {have} GPU(s)")
    one = len(nodes) == 1
    theory = theoretical(spec, len(nodes))
    wire = theory.bytes_per_s if theory else (450e9 if one else DEFAULT_NETWORK)
    if one:
        peak = wire * INTRA_EFFICIENCY * _gpu_links(sim, nodes[0])
    else:
        peak = wire * INTER_EFFICIENCY * min(_link_factor(sim, n) for n in nodes)
        peak *= 1 - 0.01 * math.log2(len(nodes))  # a longer ring, a little slower
    world = len(nodes) * ranks_per_node
    factor = bus_factor(collective, world)
    points = []
    for size in sizes:
        busbw = peak * size / (size + HALF_PEAK_BYTES[one]) * jitter(nodes, collective, size)
        iterations = tuple(busbw * jitter(nodes, size, i, spread=0.02)
                           for i in range(spec.iterations))
        time_s = size * factor / busbw if factor else 0.0
        algbw = size / time_s if time_s else 0.0
        points.append(SizePoint(size, time_s, algbw, algbw * factor if factor else 0.0,
                                iterations if factor else (), 0, 0))
    return replace(base, points=tuple(points))
