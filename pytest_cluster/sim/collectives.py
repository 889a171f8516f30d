"""Simulated collective benchmarks: what each rank of the collective benchmark (the
collective probe, run by job_node) would print on the sim's nodes: the times a healthy
cluster of the sim's GPU model would measure, changed by the faults (fewer GPUs, slow GPU
links, `link_factor` for a slow network). The controller turns them into busbw with
nccl-tests' formulas (busbw.aggregate) as it does for real ranks. Pure functions.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_cluster.contract.sections.busbw import bus_factor, theoretical
from pytest_cluster.contract.sections.gpu_models import MODELS
from pytest_cluster.contract.sections.sim_records import NICS_PER_NODE
from pytest_cluster.probes.jobs.collective import HANG_EXIT, sweep_phase
from pytest_cluster.probes.nccl_tests import COLLECTIVE_BINARY
from pytest_cluster.sim.cluster import (
    PEAK_LIE_FACTOR,
    describe_node,
    faults_on,
    gpu_count,
    gpu_link_rate,
    jitter,
    lies,
    link_factor,
)
from pytest_cluster.sim.nccl_ras import hang_report
from pytest_cluster.sim.nics import device, network_share, port_gbit, rail_of

if TYPE_CHECKING:
    from pytest_cluster.contract.model import InterconnectSpec
    from pytest_cluster.contract.sections.sim_records import SimSpec
    from pytest_cluster.probes.job_node import RankEntry
    from pytest_cluster.probes.jobs.collective import CollectiveData, SizeResult
    from pytest_cluster.probes.nccl_tests import NcclTestsData

#: What NCCL reaches of the wire (shared/GUIDE.md): ring over NVLink ~370 of 450 GB/s,
#: 46-48 of 50 GB/s per NDR NIC.
INTRA_EFFICIENCY = 0.82
INTER_EFFICIENCY = 0.93
#: Payload at which busbw is half its peak (latency-bound below).
HALF_PEAK_BYTES = {True: 32 * 2**20, False: 64 * 2**20}
DEFAULT_NETWORK = 8 * 50e9  # 8 x 400 Gb/s per node when the spec names no network


@dataclass(frozen=True)
class Benchmark:
    """What every rank of the job runs: the collective probe's arguments."""

    collective: str
    sizes: tuple[int, ...]
    warmup: int = 5
    iterations: int = 20
    backend: str = "gloo"
    seconds: float = 0.0  # the stress level's sustained loop (collective.py --seconds)
    hang_bound: float = 0.0  # a rank still measuring after this is a hang (--hang-bound)

    @classmethod
    def from_args(cls, args: Sequence[str]) -> Benchmark:
        """The collective probe's `--option value` arguments; ValueError if they are not."""
        if len(args) % 2 or not all(a.startswith("--") for a in args[::2]):
            raise ValueError(f"not the collective benchmark's arguments: {list(args)}")
        given = dict(zip(args[::2], args[1::2], strict=True))
        unknown = set(given) - {"--collective", "--sizes", "--warmup", "--iterations",
                                "--backend", "--seconds", "--hang-bound"}
        if unknown or "--sizes" not in given:
            raise ValueError(f"not the collective benchmark's arguments: {list(args)}")
        return cls(given.get("--collective", "all_reduce"),
                   tuple(int(s) for s in given["--sizes"].split(",") if s),
                   int(given.get("--warmup", 5)), int(given.get("--iterations", 20)),
                   given.get("--backend", "gloo"), float(given.get("--seconds", 0.0)),
                   float(given.get("--hang-bound", 0.0)))


def _gpu_links(sim: SimSpec, node: str) -> float:
    """The slowest GPU link of `node` relative to a healthy GPU of the sim's model."""
    healthy = MODELS[sim.gpu_model].p2p_gb_s * 1e9
    rates = [gpu_link_rate(sim, node, index, gpu)
             for index, gpu in enumerate(describe_node(sim, node)["gpus"])]
    return min([1.0, *(rate / healthy for rate in rates)])


def intra_peak(sim: SimSpec, spec: InterconnectSpec | None, node: str) -> float:
    """The busbw `node`'s GPUs reach among themselves: NCCL's share of the spec's
    intra-node link (NVLink's 450 GB/s without one), at the pace of its slowest GPU link."""
    inside = theoretical(spec, 1) if spec is not None else None
    return (inside.bytes_per_s if inside else 450e9) * INTRA_EFFICIENCY * _gpu_links(sim, node)


def missing_gpu(sim: SimSpec, benchmark: Benchmark, nodes: Sequence[str],
                ranks_per_node: int) -> tuple[int, int, str] | None:
    """(node index, local rank, its message) of the job's first rank that has no GPU of
    its own (nccl: one GPU per rank), as the collective probe says it; None if none."""
    if benchmark.backend != "nccl":
        return None
    for index, node in enumerate(nodes):
        have = gpu_count(sim, node)
        if have < ranks_per_node:
            return index, have, f"LOCAL_RANK {have} but {node} has {have} GPU(s)"
    return None


def dead_ranks(sim: SimSpec, nodes: Sequence[str], ranks_per_node: int) -> set[int]:
    """The job's ranks whose GPU has the `nccl_dead` fault (LOCAL_RANK is its GPU)."""
    return {index * ranks_per_node + local for index, node in enumerate(nodes)
            for local in range(ranks_per_node)
            if any(f.nccl_dead for f in faults_on(sim, node, local))}


def hung_ranks(benchmark: Benchmark, nodes: Sequence[str], ranks_per_node: int,
               dead: set[int]) -> list[list[RankEntry]]:
    """A job that hangs on its `dead` ranks: they print nothing and are killed by their
    node at the wall clock; every other rank's watchdog ends it past the hang bound,
    printing where it was and what NCCL's RAS says (sim/nccl_ras.py), as collective.py
    does."""
    world = len(nodes) * ranks_per_node
    bound = benchmark.hang_bound or 60.0
    size = benchmark.sizes[0] if benchmark.sizes else 0
    doing = (f"the sustained all_reduce of {size} bytes" if benchmark.seconds > 0
             else sweep_phase(benchmark.collective, size, 0, len(benchmark.sizes)))
    report = hang_report(benchmark.backend, nodes, ranks_per_node, dead,
                         benchmark.collective)
    ranks: list[list[RankEntry]] = []
    for index, node in enumerate(nodes):
        mine: list[RankEntry] = []
        for local in range(ranks_per_node):
            rank = index * ranks_per_node + local
            if rank in dead:
                mine.append({"rank": rank, "local_rank": local, "exit_code": "killed",
                             "ended_at": None, "data": None, "stderr_tail": ""})
                continue
            line = {"rank": rank, "world": world, "host": node, "backend": benchmark.backend,
                    "collective": benchmark.collective, "simulated": True,
                    "hang": {"phase": doing, "waited_s": round(bound + 0.5, 3),
                             "bound_s": bound}, "ras": report}
            mine.append({"rank": rank, "local_rank": local, "exit_code": HANG_EXIT,
                         "ended_at": None, "data": line,
                         "stderr_tail": ""})
        ranks.append(mine)
    return ranks


def size_results(sim: SimSpec, spec: InterconnectSpec | None, benchmark: Benchmark,
                 nodes: Sequence[str], ranks_per_node: int,
                 rail_gbit: float | None = None) -> list[SizeResult]:
    """One rank's measurements (the collective probe's `sizes`), the same on every rank of
    the job: busbw near the wire's rate (the spec's links, see busbw.theoretical) for large
    payloads, latency-bound for small ones, at the pace of the job's slowest link, with a
    small jitter of its own per job (its nodes, collective and payload) and iteration.
    A job bound to one rail (`rail_gbit`: its slowest node's port) runs at that port's
    rate."""
    key = list(nodes)  # the job's nodes in rank order: one job, one jitter
    one = len(nodes) == 1
    theory = theoretical(spec, len(nodes)) if spec is not None else None
    wire = theory.bytes_per_s if theory else (450e9 if one else DEFAULT_NETWORK)
    if rail_gbit is not None and not one:
        peak = rail_gbit * 1e9 / 8 * INTER_EFFICIENCY
    elif one:  # a liar (`lies: busbw`) claims 10x what its GPUs reached
        peak = intra_peak(sim, spec, nodes[0]) * (
            PEAK_LIE_FACTOR if "busbw" in lies(sim, nodes[0]) else 1.0)
    else:
        peak = wire * INTER_EFFICIENCY * min(network_share(sim, spec, n) for n in nodes)
        peak *= 1 - 0.01 * math.log2(len(nodes))  # a longer ring, a little slower
        # the ring crosses each node's GPU links too: never faster than the slowest node
        peak = min(peak, *(intra_peak(sim, spec, n) for n in nodes))
    factor = bus_factor(benchmark.collective, len(nodes) * ranks_per_node)
    results: list[SizeResult] = []
    if benchmark.seconds > 0 and benchmark.sizes:
        size = benchmark.sizes[0]
        busbw = peak * size / (size + HALF_PEAK_BYTES[one]) * jitter(key, "stress", size)
        each = size * factor / busbw if factor else 1e-3
        count = max(1, int(benchmark.seconds / each))
        windows = [each / jitter(key, size, i, spread=0.02) for i in range(min(100, count))]
        return [{"bytes": size, "time_s": each, "iteration_s": [], "iterations": count,
                 "seconds": count * each, "windows_s": windows, "wrong": 0,
                 "wrong_iterations": 0, "first_wrong": None}]
    for size in benchmark.sizes:
        busbw = peak * size / (size + HALF_PEAK_BYTES[one]) * jitter(key, benchmark.collective,
                                                                     size)
        iterations = [busbw * jitter(key, size, i, spread=0.02)
                      for i in range(benchmark.iterations)]
        results.append({"bytes": size, "time_s": size * factor / busbw if factor else 0.0,
                        "iteration_s": [size * factor / b for b in iterations] if factor
                        else [], "wrong": 0})
    return results


#: How much longer than the job's mean a rank's loop takes per unit of its lag (a rank
#: on a GPU at 80 % of its model's link rate lags 0.25): the slow rank finishes last by a
#: hair, as real ranks of one collective do; the mean over ranks (busbw) is unchanged.
RANK_SKEW = 0.01
#: The most lag a rank's stretch counts (a rank 11 times slower than a healthy one): the
#: stretch stays a hair, within 1 +- RANK_SKEW * MAX_LAG, whatever the factor fault.
MAX_LAG = 10.0


def rank_lags(sim: SimSpec, nodes: Sequence[str], ranks_per_node: int,
              rail_bound: bool = False) -> list[float]:
    """Per rank of the job, how far its own link is below a healthy one (0: healthy;
    healthy / its rate - 1): inside one node its GPU's link (LOCAL_RANK is its GPU), across
    nodes its node's network (link_factor); none for a job bound to one rail."""
    if rail_bound and len(nodes) > 1:
        return [0.0] * (len(nodes) * ranks_per_node)
    if len(nodes) > 1:
        return [1 / link_factor(sim, node) - 1 for node in nodes
                for _ in range(ranks_per_node)]
    healthy = MODELS[sim.gpu_model].p2p_gb_s * 1e9
    gpus = describe_node(sim, nodes[0])["gpus"]
    rates = [gpu_link_rate(sim, nodes[0], local, gpus[local]) if local < len(gpus)
             else healthy for local in range(ranks_per_node)]
    return [healthy / rate - 1 if rate > 0 else 0.0 for rate in rates]


def rank_sizes(sizes: list[SizeResult], lags: Sequence[float]) -> list[list[SizeResult]]:
    """Each rank's copy of the job's measurements, its times stretched by its lag against
    the job's mean lag (RANK_SKEW), so that the slowest rank is the one on the slowest
    link; the same list for every rank when no rank lags."""
    lags = [min(lag, MAX_LAG) for lag in lags]
    mean = sum(lags) / len(lags) if lags else 0.0
    if not any(lags):
        return [sizes] * len(lags)
    found: list[list[SizeResult]] = []
    for lag in lags:
        stretch = 1 + RANK_SKEW * (lag - mean)
        found.append([{**size, "time_s": size["time_s"] * stretch,
                       "iteration_s": [t * stretch for t in size["iteration_s"]]}
                      for size in sizes])
    return found


def nccl_lines(sim: SimSpec, nodes: Sequence[str], index: int, local: int,
               ranks_per_node: int) -> list[str]:
    """What NCCL's INFO log says on a simulated rank (measure/network/nccl_log.py reads it): IB
    with GPUDirect RDMA over the node's NICs between nodes (the node's `transport:
    socket` fault: a fallback to sockets; `gdr: false`: no GPUDirect), P2P inside the
    node, and NVLS where the GPU model has NVLink."""
    node = nodes[index]
    rank = index * ranks_per_node + local
    head = f"{node}:1:1 [{local}] NCCL INFO"
    faults = faults_on(sim, node)
    socket_ = any(f.transport == "socket" for f in faults)
    gdr = not any(f.gdr is False for f in faults)
    nics = NICS_PER_NODE
    if socket_:
        lines = [f"{head} NET/Socket : Using [0]eno1:10.0.0.{index + 1}<0>",
                 f"{head} Using network Socket"]
    else:
        devices = " ".join(f"[{i}]{device(sim, i)}:1/IB" for i in range(nics))
        lines = [f"{head} NET/IB : Using {devices} ; OOB eno1:10.0.0.{index + 1}<0>",
                 f"{head} Using network IB"]
    if MODELS[sim.gpu_model].nvlinks and ranks_per_node > 1:
        lines.append(f"{head} NVLS multicast support is available on dev {local}")
    if ranks_per_node > 1:
        nxt = (local + 1) % ranks_per_node
        lines.append(f"{head} Channel 00/0 : {rank}[{local}] -> "
                     f"{index * ranks_per_node + nxt}[{nxt}] via P2P/IPC")
    if len(nodes) > 1:
        peer = (index + 1) % len(nodes) * ranks_per_node + local
        via = "NET/Socket/0" if socket_ else \
            f"NET/IB/{local % nics}" + ("/GDRDMA" if gdr else "")
        lines.append(f"{head} Channel 00/0 : {rank}[{local}] -> {peer}[{local}] [send] "
                     f"via {via}")
    return lines


def missing_rail(sim: SimSpec, spec: InterconnectSpec | None, nodes: Sequence[str],
                 rail: int | None) -> tuple[int, str] | float | None:
    """A job bound to NIC `rail` (sim/nics.rail_of): the slowest node's port rate in
    Gb/s, or (node index, what its first rank says) when a node's port is down; None
    without a rail."""
    if rail is None:
        return None
    rates = []
    for index, node in enumerate(nodes):
        gbit = port_gbit(sim, node, spec, rail)
        if gbit is None:
            return index, f"simulated: {node}'s {device(sim, rail)} is down: no route to the peers"
        rates.append(gbit)
    return min(rates)


def job_ranks(sim: SimSpec, spec: InterconnectSpec | None, benchmark: Benchmark,
              nodes: Sequence[str], ranks_per_node: int,
              env: Sequence[tuple[str, str]] = ()) -> list[list[RankEntry]]:
    """Every node's ranks as job_node reports them (rank, local_rank, exit_code, data,
    ...), in node order. A job with a rank that has no GPU fails at that rank (exit code
    1 and the probe's message), the first one only, as before any rank measured; so does
    a job bound to a rail (`env`) whose port is down on a node, at that node's first
    rank."""
    world = len(nodes) * ranks_per_node
    dead = dead_ranks(sim, nodes, ranks_per_node)
    if dead:
        return hung_ranks(benchmark, nodes, ranks_per_node, dead)
    missing = missing_gpu(sim, benchmark, nodes, ranks_per_node)
    rail = missing_rail(sim, spec, nodes, rail_of(sim, env))
    if isinstance(rail, tuple) and missing is None:
        missing = (rail[0], 0, rail[1])
    sizes = size_results(sim, spec, benchmark, nodes, ranks_per_node,
                         rail if isinstance(rail, float) else None) \
        if missing is None else []
    per_rank = rank_sizes(sizes, rank_lags(sim, nodes, ranks_per_node,
                                           isinstance(rail, float))) \
        if sizes and benchmark.seconds <= 0 else [sizes] * world
    ranks = []
    for index in range(len(nodes)):
        mine: list[RankEntry] = []
        for local in range(ranks_per_node):
            rank = index * ranks_per_node + local
            if missing is not None and missing[:2] == (index, local):
                mine.append({"rank": rank, "local_rank": local, "exit_code": 1,
                             "ended_at": None, "data": None, "stderr_tail": missing[2]})
                continue
            data: CollectiveData = {"rank": rank, "world": world,
                                    "backend": benchmark.backend,
                                    "collective": benchmark.collective,
                                    "sizes": per_rank[rank], "simulated": True}
            if benchmark.backend == "nccl":
                data["nccl_log"] = nccl_lines(sim, nodes, index, local, ranks_per_node)
            else:
                data["gloo"] = {"interface": "eno1", "address": f"10.0.{index // 250}."
                                                                f"{index % 250 + 1}"}
            mine.append({"rank": rank, "local_rank": local, "exit_code": 0, "ended_at": None,
                         "data": data, "stderr_tail": ""})
        ranks.append(mine)
    return ranks


# -- nccl-tests on a simulated node (interconnect.engine: nccl-tests) ---------------------------

#: The collective each of nccl-tests' binaries the sim runs measures (the probe's mapping).
NCCL_TESTS = {binary: collective for collective, binary in COLLECTIVE_BINARY.items()}


def _float_text(value: float, width: int) -> str:
    """nccl-tests' getFloatStr: 2 decimals, fewer when the column is too narrow."""
    for pattern in ("{:>{w}.2f}", "{:>{w}.1f}", "{:>{w}.0f}"):
        text = pattern.format(value, w=width)
        if len(text) <= width:
            return text
    return f"{value:>{width}.1e}"


@dataclass(frozen=True)
class NcclTestsRun:
    """What a simulated nccl-tests run printed and wrote."""

    exit_code: int
    stdout: str
    stderr: str
    document: dict[str, Any] | None  # its -J file


def nccl_tests_run(sim: SimSpec, spec: InterconnectSpec | None, binary: str,
                   nodes: Sequence[str], sizes: Sequence[int], tasks_per_node: int,
                   gpus_per_task: int, iterations: int = 20) -> NcclTestsRun:
    """nccl-tests 2.19 on simulated nodes: its table (as src/util.cu formats it) and its
    -J file, from the same simulated times as the torch engine's, for every rank of the
    job (`tasks_per_node` x `gpus_per_task` GPUs per node). A node with fewer GPUs fails
    as nccl-tests does."""
    if binary not in NCCL_TESTS:
        raise ValueError(f"the sim does not simulate nccl-tests' {binary[:40]!r}")
    collective = NCCL_TESTS[binary]
    per_node = tasks_per_node * gpus_per_task
    for node in nodes:
        have = gpu_count(sim, node)
        if have < per_node:
            return NcclTestsRun(1, "", f"Invalid number of GPUs: {per_node} requested but "
                                       f"only {have} were found.\nPlease check the number "
                                       f"of processes and GPUs per process.\n", None)
    benchmark = Benchmark(collective, tuple(sizes), 5, iterations, "nccl")
    factor = bus_factor(collective, len(nodes) * per_node)
    lines = ["# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803",
             f"# Collective test starting: {binary}", "#",
             "#                                                              out-of-place  "
             "                     in-place          ",
             "#       size         count      type   redop    root     time   algbw   busbw "
             "#wrong     time   algbw   busbw #wrong"]
    results: list[dict[str, Any]] = []
    busbws: list[float] = []
    for measured in size_results(sim, spec, benchmark, list(nodes), per_node):
        size, time_s = int(measured["bytes"]), float(measured["time_s"])
        algbw = size / time_s / 1e9 if time_s else 0.0
        busbw = algbw * factor
        sides = "".join(f"  {_float_text(time_s * 1e6, 7)}  {_float_text(algbw, 6)}  "
                        f"{_float_text(busbw, 6)}  {0:6g}" for _ in range(2))
        lines.append(f"{size:12d}  {size // 4:12d}  {'float':>8}  {'sum':>6}  {-1:6d}{sides}")
        busbws.append(busbw)
        side = {"time": time_s * 1e6, "alg_bw": algbw, "bus_bw": busbw, "nwrong": 0.0}
        results.append({"size": size, "count": size // 4, "type": "float", "redop": "sum",
                        "root": "    -1", "out_of_place": side, "in_place": side,
                        "actual_iterations": iterations, "experiment_name": binary})
    average = sum(busbws) / max(1, len(busbws))
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {average:g} ", "#",
              f"# Collective test concluded: {binary}"]
    document = {"version": 1, "nccl_version": 22803, "results": results,
                "out_of_bounds": {"count": 0, "okay": "true"},
                "average_bus_bandwidth": {"bandwidth": average, "okay": "unchecked"},
                "errors": []}
    return NcclTestsRun(0, "\n".join(lines) + "\n", "", document)


def doubling(first: int, last: int) -> tuple[int, ...]:
    """nccl-tests' payloads for -b first -e last -f 2."""
    sizes, size = [], max(1, first)
    while size <= last:
        sizes.append(size)
        size *= 2
    return tuple(sizes)


def nccl_tests_payload(sim: SimSpec, spec: InterconnectSpec | None,
                       node: str, args: Sequence[str]) -> NcclTestsData:
    """The nccl_tests probe's answer on a simulated node (one process, `--gpus` GPUs)."""
    options = dict(zip(args[::2], args[1::2], strict=False))
    binary = options.get("--binary", "")
    sizes = tuple(int(s) for s in options.get("--sizes", "").split(",") if s)
    gpus = int(options.get("--gpus", "1"))
    path = f"{options.get('--dir', '')}/{binary}"
    argv = [path, "-b", str(min(sizes)), "-e", str(max(sizes)), "-f", "2", "-g", str(gpus)]
    run = nccl_tests_run(sim, spec, binary, [node], sizes, 1, gpus,
                         int(options.get("--iterations", "20")))
    return {"binary": path, "json_output": True, "runs": [{
        "argv": argv, "exit_code": run.exit_code, "stdout": run.stdout,
        "stderr_tail": run.stderr,
        "json": json.dumps(run.document, allow_nan=False) if run.document is not None else None}]}
