"""The training loop as a distributed job: probes/train.py on every rank of one job over
the chosen nodes (jobs.run_job through the cluster's launcher), its ranks' step times
turned into what the contract's `training:` clauses compare: the slowest step, the step
time's spread, tokens per second; a hang named by the rank(s) that stopped advancing, and
in a run that finished, the rank or node that held it up (stragglers.py says how).

DDP synchronises every step, so a step's time is its slowest rank's; tokens per second
are every rank's tokens over the sum of those step times. The job has a stall timeout
(the step bound, at least STALL_FLOOR_S): a rank that stops beating that long (SIGSTOP, a
frozen process) is killed by its node, so the job ends at the bound, not at
`training.timeout`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_cluster.errors import ClusterError
from pytest_cluster.launchers.jobs import JobResult, JobSpec, run_job
from pytest_cluster.measure.stragglers import Progress, RankTimes, name_hang, name_straggler
from pytest_cluster.probes import probe_source

if TYPE_CHECKING:
    from pytest_cluster.launchers.base import Launcher
    from pytest_cluster.spec.model import TrainingSpec

#: A rank's heartbeat comes every 0.5 s at most; its node kills it after this much
#: silence at the least (the step bound when that is longer).
STALL_FLOOR_S = 2.0


@dataclass(frozen=True)
class TrainingRun:
    nodes: tuple[str, ...]
    ranks_per_node: int
    backend: str
    bound_s: float  # a step longer than this is a hang
    step_s: tuple[float, ...] = ()  # per measured step, its slowest rank's time
    slowest: str = ""  # who held the run up: 'node4's link is the slowest: ...'
    tokens_per_s: float = 0.0
    loss_first: float | None = None
    loss_last: float | None = None
    finite: bool = True
    hang: str = ""  # 'node3 rank 2: stuck at step 8 (forward) for 8.4 s, ...'
    error: str = ""  # the job did not finish (no hang found): why
    details: dict[str, Any] = field(default_factory=dict)
    simulated: bool = False

    @property
    def ok(self) -> bool:
        return not self.error and not self.hang and bool(self.step_s)

    @property
    def longest_s(self) -> float:
        return max(self.step_s) if self.step_s else 0.0

    @property
    def spread(self) -> float:
        """The step time's coefficient of variation over the measured steps."""
        if len(self.step_s) < 2:
            return 0.0
        mean = statistics.fmean(self.step_s)
        return statistics.pstdev(self.step_s) / mean if mean else 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> TrainingRun:
        return cls(**{**record, "nodes": tuple(record["nodes"]),
                      "step_s": tuple(record["step_s"])})


def step_bound(spec: TrainingSpec) -> float:
    clause = spec.clause("step_time")
    return clause.requirement.bound.value if clause is not None else 60.0


def stall_timeout(bound_s: float) -> float:
    return max(bound_s, STALL_FLOOR_S)


def training_job(spec: TrainingSpec, nodes: Sequence[str]) -> JobSpec:
    bound = step_bound(spec)
    return JobSpec(nodes=tuple(nodes), program=probe_source("train"),
                   ranks_per_node=spec.ranks_per_node,
                   args=("--steps", str(spec.steps), "--warmup", str(spec.warmup),
                         "--step-bound", f"{bound:g}", "--backend", spec.backend),
                   init_timeout_s=min(120.0, spec.timeout_s), wall_timeout_s=spec.timeout_s,
                   stall_timeout_s=stall_timeout(bound))


def hang_text(base: TrainingRun, result: JobResult) -> str:
    """Who hung, from the ranks' last progress ('' when no rank hung or stalled)."""
    hung = [r for r in result.ranks if r.exit_code == "stalled"
            or (r.data and isinstance(r.data.get("hang"), dict))]
    if not hung:
        return ""
    records = [p for p in (Progress.of(r.node, r.rank, r.progress, r.exit_code)
                           for r in result.ranks) if p is not None]
    if records:
        return name_hang(records, base.bound_s, stall_timeout(base.bound_s) / 2,
                         [r.rank for r in result.ranks])
    # no progress files (an older node side): what the first watchdog said
    first = min(hung, key=lambda r: (r.ended_at or 0.0, r.rank))
    hang = first.data.get("hang", {}) if first.data else {}
    return (f"{first.node} rank {first.rank}: step {hang.get('step')} still running after "
            f"{hang.get('waited_s')} s (bound {base.bound_s:g} s); no rank reported its "
            f"progress, so which rank holds it up is not known")


def summarise(base: TrainingRun, result: JobResult) -> TrainingRun:
    """The run from its ranks' lines: a hang first (named by the ranks' progress), else
    the job's failure, else the figures and who held the run up."""
    hang = hang_text(base, result)
    if hang:
        return TrainingRun(**{**asdict(base), "hang": hang})
    if not result.ok:
        return TrainingRun(**{**asdict(base), "error": result.first_failure()})
    data = [(r, r.data) for r in result.ranks if r.data is not None]
    steps = min(len(d["step_s"]) for _, d in data)
    if steps == 0:
        return TrainingRun(**{**asdict(base), "error": "no step was measured"})
    per_step = [max(float(d["step_s"][index]) for _, d in data) for index in range(steps)]
    link_bytes = int((data[0][1].get("link") or {}).get("bytes", 0))
    slowest = name_straggler([RankTimes.of(r.node, r.rank, d) for r, d in data], link_bytes)
    tokens = sum(int(d["tokens_per_step"]) for _, d in data) * steps
    lead = data[0][1]
    details = {k: lead[k] for k in ("torch", "device", "model", "parameters") if k in lead}
    return TrainingRun(**{**asdict(base), "step_s": tuple(per_step), "slowest": slowest,
                          "tokens_per_s": tokens / sum(per_step),
                          "loss_first": lead.get("loss_first"),
                          "loss_last": lead.get("loss_last"),
                          "finite": all(bool(d.get("finite", True)) for _, d in data),
                          "details": details, "simulated": result.simulated})


def run_training(launcher: Launcher, spec: TrainingSpec, nodes: Sequence[str]) -> TrainingRun:
    """One training job over `nodes`; its failure is the run's error."""
    base = TrainingRun(tuple(nodes), spec.ranks_per_node, spec.backend, step_bound(spec))
    try:
        result = run_job(launcher, training_job(spec, nodes))
    except (ClusterError, OSError, ValueError) as exc:
        return TrainingRun(**{**asdict(base), "error": str(exc)})
    return summarise(base, result)
