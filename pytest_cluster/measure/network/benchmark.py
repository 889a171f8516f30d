"""Collective benchmarks as distributed jobs: the collective probe on every rank of a job
(jobs.run_job through the cluster's launcher), its per-rank times turned into nccl-tests'
numbers (busbw.aggregate). Every launcher answers the same job the same way, the sim too
(it simulates the ranks' output).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, TypedDict

from pytest_cluster.contract.reading.documents import record_of
from pytest_cluster.contract.sections.busbw import CollectiveRun, aggregate, bus_factor
from pytest_cluster.errors import ClusterError
from pytest_cluster.launchers.jobs import JobResult, JobSpec, run_job
from pytest_cluster.measure import nccl_ras
from pytest_cluster.measure.network import nccl_log
from pytest_cluster.probes.jobs import job_source

if TYPE_CHECKING:
    from pytest_cluster.contract.model import InterconnectSpec
    from pytest_cluster.launchers.base import Launcher


#: How long before the job's wall clock a rank still measuring is a hang: time for its
#: watchdog to ask NCCL's RAS (probes/_lib/nccl_ras.HANG_QUERY_S) and say so.
HANG_MARGIN_S = 30.0


def hang_bound(wall_timeout_s: float) -> float:
    """A rank's hang bound in a job of this wall clock: HANG_MARGIN_S before it (at least
    half of it)."""
    return max(wall_timeout_s / 2, wall_timeout_s - HANG_MARGIN_S)


def collective_job(spec: InterconnectSpec, collective: str, nodes: Sequence[str],
                   sizes: Sequence[int], env: tuple[tuple[str, str], ...] = ()) -> JobSpec:
    return JobSpec(nodes=tuple(nodes), program=job_source("collective"), env=env,
                   ranks_per_node=spec.ranks_per_node,
                   args=("--collective", collective, "--sizes", ",".join(map(str, sizes)),
                         "--warmup", str(spec.warmup), "--iterations", str(spec.iterations),
                         "--backend", spec.backend,
                         "--hang-bound", f"{hang_bound(spec.timeout_s):g}"),
                   init_timeout_s=min(120.0, spec.timeout_s), wall_timeout_s=spec.timeout_s)


def hang_failure(result: JobResult, nodes: Sequence[str],
                 ranks_per_node: int) -> tuple[str, nccl_ras.RasFinding | None]:
    """('the job hung: ...; NCCL RAS: ...', what RAS said: the nodes its dead ranks single
    out, its answer) when ranks' watchdogs ended them past their bound
    (probes/jobs/collective.py); ('', None) otherwise."""
    hung = [r for r in result.ranks if r.data is not None
            and isinstance(r.data.get("hang"), dict)]
    if not hung:
        return "", None
    first = hung[0]
    hang = first.data["hang"] if first.data is not None else {}
    others = f", as were {len(hung) - 1} other rank(s)" if len(hung) > 1 else ""
    quiet = [r for r in result.ranks if r.data is None]
    silent = ""
    if quiet:
        named = ", ".join(f"rank {r.rank} ({r.node})" for r in quiet[:nccl_ras.MAX_NAMED])
        more = f" and {len(quiet) - nccl_ras.MAX_NAMED} more" if len(quiet) > \
            nccl_ras.MAX_NAMED else ""
        silent = f"; no line from {named}{more}"
    text = (f"the job hung: rank {first.rank} ({first.node}) was still at "
            f"{str(hang.get('phase'))[:80]} after {_seconds(hang.get('waited_s'))} s (bound "
            f"{_seconds(hang.get('bound_s'))} s){others}{silent}")
    found = nccl_ras.finding(result.ranks, nodes, ranks_per_node)
    return (f"{text}; {found.text}" if found is not None else text), found


def _seconds(value: object) -> str:
    """A rank's figure as it said it, where it is a finite number ('?' otherwise)."""
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) else "?"


class Failed(TypedDict, total=False):
    """The fields of a run whose job failed (failed_run)."""

    error: str
    culprits: tuple[str, ...]
    details: dict[str, object]


def failed_run(result: JobResult, nodes: Sequence[str], ranks_per_node: int) -> Failed:
    """A failed job's fields of its run: its error (a hang said as hang_failure says it,
    unless a rank's own end failed the job first, JobResult.own_failure: then the first
    failure, with RAS's words), the nodes RAS singles out, RAS's answer in `details`."""
    hung, ras = hang_failure(result, nodes, ranks_per_node)
    error = hung
    if not hung or result.own_failure() is not None:
        error = result.first_failure() + (f"; {ras.text}" if ras is not None else "")
    if ras is None:
        return {"error": error}
    return {"error": error, "culprits": ras.culprits, "details": {"nccl_ras": ras.report}}


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
        return replace(base, **failed_run(result, nodes, spec.ranks_per_node))
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
    #: the nodes a hung loop's evidence singles out (CollectiveRun.culprits)
    culprits: tuple[str, ...] = ()
    details: dict[str, object] = field(default_factory=dict)  # a hang's: NCCL RAS's answer

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
                         "--backend", spec.backend, "--seconds", f"{spec.stress_time_s:g}",
                         "--hang-bound", f"{hang_bound(stress_wall(spec)):g}"),
                   init_timeout_s=min(120.0, spec.timeout_s),
                   wall_timeout_s=stress_wall(spec))


def stress_wall(spec: InterconnectSpec) -> float:
    """The stress loop's wall clock: its time and a half, its init timeout, 120 s."""
    return spec.stress_time_s * 1.5 + min(120.0, spec.timeout_s) + 120


def run_collective_stress(launcher: Launcher, spec: InterconnectSpec,
                          nodes: Sequence[str]) -> StressLoop:
    base = StressLoop(tuple(nodes), spec.ranks_per_node, spec.backend)
    try:
        result = run_job(launcher, stress_job(spec, nodes))
    except (ClusterError, OSError, ValueError) as exc:
        return replace(base, error=str(exc))
    base = replace(base, simulated=result.simulated)
    if not result.ok:
        return replace(base, **failed_run(result, nodes, spec.ranks_per_node))
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
