"""Collective benchmarks as distributed jobs: the collective probe on every rank of a job
(jobs.run_job through the cluster's launcher), its per-rank times turned into nccl-tests'
numbers (busbw.aggregate). Every launcher answers the same job the same way, the sim too
(it simulates the ranks' output).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

from pytest_cluster.contract.reading.documents import record_of
from pytest_cluster.contract.sections.busbw import CollectiveRun, aggregate, bus_factor
from pytest_cluster.errors import ClusterError
from pytest_cluster.launchers.jobs import JobSpec, run_job
from pytest_cluster.measure.network import nccl_log
from pytest_cluster.probes.jobs import job_source

if TYPE_CHECKING:
    from pytest_cluster.contract.model import InterconnectSpec
    from pytest_cluster.launchers.base import Launcher


def collective_job(spec: InterconnectSpec, collective: str, nodes: Sequence[str],
                   sizes: Sequence[int], env: tuple[tuple[str, str], ...] = ()) -> JobSpec:
    return JobSpec(nodes=tuple(nodes), program=job_source("collective"), env=env,
                   ranks_per_node=spec.ranks_per_node,
                   args=("--collective", collective, "--sizes", ",".join(map(str, sizes)),
                         "--warmup", str(spec.warmup), "--iterations", str(spec.iterations),
                         "--backend", spec.backend),
                   init_timeout_s=min(120.0, spec.timeout_s), wall_timeout_s=spec.timeout_s)


def run_collective(launcher: Launcher, spec: InterconnectSpec, collective: str,
                   nodes: Sequence[str], sizes: Sequence[int],
                   env: tuple[tuple[str, str], ...] = ()) -> CollectiveRun:
    """Run the benchmark as one distributed job (its ranks' network chosen by `env`: a
    rail); failures become the run's error. The run is simulated when the job's results
    are (the sim launcher's); its details are what the first rank reports of its
    software and device, and the ranks' hosts."""
    base = CollectiveRun(collective, spec.backend, tuple(nodes), spec.ranks_per_node)
    try:
        result = run_job(launcher, collective_job(spec, collective, nodes, sizes, env))
    except (ClusterError, OSError, ValueError) as exc:  # the job's failure is the result
        return replace(base, error=str(exc))
    base = replace(base, simulated=result.simulated)
    if not result.ok:
        return replace(base, error=result.first_failure())
    data = [r.data for r in result.ranks if r.data is not None]
    first = data[0]
    details: dict[str, object] = {k: first[k] for k in ("torch", "nccl", "device", "simulated")
                               if k in first}
    hosts = sorted({str(d["host"]) for d in data if "host" in d})  # none on simulated ranks
    if hosts:
        details["hosts"] = hosts
    used = nccl_log.summary(data)
    if used:
        details["transport"] = used
        lines = next((d["nccl_log"] for d in data if d.get("nccl_log")), None)
        if lines:  # the first rank's lines that say it, for the evidence (bounded)
            details["nccl_log_first_rank"] = lines
    try:
        points = aggregate(collective, data)
    except (KeyError, TypeError, ValueError) as exc:
        return replace(base, error=f"bad benchmark output: {exc!r}")
    return replace(base, points=points, details=details)


@dataclass(frozen=True)
class StressLoop:
    """The stress level's all_reduce loop over the cluster: how many ran, every result
    checked, and busbw over the loop (a window = a hundredth of it, its slowest rank)."""

    nodes: tuple[str, ...]
    ranks_per_node: int
    backend: str
    bytes: int = 0
    iterations: int = 0
    seconds: float = 0.0
    busbw_windows: tuple[float, ...] = ()  # bytes/s
    wrong: int = 0  # elements that came back wrong, over every rank and iteration
    wrong_iterations: int = 0  # the most on any rank
    first_wrong: str = ""  # 'rank 3 at iteration 1234'
    error: str = ""
    simulated: bool = False
    #: why it did not run, as an error kind: 'not_all_nodes' where a node of it did not
    #: answer its host probe (the job was not started: that node's verdict says why);
    #: '' otherwise (the job ran and failed)
    error_kind: str = ""

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, record: Mapping[str, object]) -> StressLoop:
        return record_of(cls, record)


def stress_job(spec: InterconnectSpec, nodes: Sequence[str]) -> JobSpec:
    return JobSpec(nodes=tuple(nodes), program=job_source("collective"),
                   ranks_per_node=spec.ranks_per_node,
                   args=("--collective", "all_reduce", "--sizes", str(spec.search_payload),
                         "--warmup", str(spec.warmup), "--iterations", "1",
                         "--backend", spec.backend, "--seconds", f"{spec.stress_time_s:g}"),
                   init_timeout_s=min(120.0, spec.timeout_s),
                   wall_timeout_s=spec.stress_time_s * 1.5 + min(120.0, spec.timeout_s) + 120)


def run_collective_stress(launcher: Launcher, spec: InterconnectSpec,
                          nodes: Sequence[str]) -> StressLoop:
    base = StressLoop(tuple(nodes), spec.ranks_per_node, spec.backend)
    try:
        result = run_job(launcher, stress_job(spec, nodes))
    except (ClusterError, OSError, ValueError) as exc:
        return replace(base, error=str(exc))
    base = replace(base, simulated=result.simulated)
    if not result.ok:
        return replace(base, error=result.first_failure())
    try:
        loops = [(r.rank, r.data["sizes"][0]) for r in result.ranks if r.data is not None]
        world = len(loops)
        factor = bus_factor("all_reduce", world)
        first = loops[0][1]
        windows = [max(w) for w in zip(*(loop["windows_s"] for _, loop in loops),
                                       strict=False)]
        wrong = [(rank, loop) for rank, loop in loops if loop["wrong_iterations"]]
        earliest = min(wrong, key=lambda pair: pair[1]["first_wrong"]) if wrong else None
        return replace(base, bytes=int(first["bytes"]), iterations=int(first["iterations"]),
                       seconds=max(float(loop["seconds"]) for _, loop in loops),
                       busbw_windows=tuple(int(first["bytes"]) * factor / t
                                           for t in windows if t > 0),
                       wrong=sum(int(loop["wrong"]) for _, loop in loops),
                       wrong_iterations=max(int(loop["wrong_iterations"]) for _, loop in loops),
                       first_wrong=f"rank {earliest[0]} at iteration "
                                   f"{earliest[1]['first_wrong']}" if earliest else "")
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        return replace(base, error=f"bad stress loop output: {exc!r}")
