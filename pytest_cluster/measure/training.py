"""The training loop as a distributed job: probes/jobs/train.py on every rank of one job over
the chosen nodes (jobs.run_job through the cluster's launcher), its ranks' step times
turned into what the contract's `training:` clauses compare: the slowest step, the step
time's spread, tokens per second; a hang named by the rank(s) that stopped advancing, and
in a run that finished, the rank or node that held it up (stragglers.py says how).

DDP synchronises every step, so a step's time is its slowest rank's; tokens per second
are every rank's tokens over the sum of those step times. The job has a stall timeout
(the step bound, at least STALL_FLOOR_S): a rank that stops beating that long (SIGSTOP, a
frozen process) is killed by its node, so the job ends at the bound, not at
`training.timeout`. Every rank is known from its start: one frozen in its rendezvous or
setup is found the same way, and the others' own watchdogs end their rendezvous at the
start bound (the step bound, at least START_FLOOR_S): the job ends then, not when the
rendezvous store would have timed out. Each node's longest rank silence is kept
(`silence`): the figure of its `training.ranks` case. A rank that died first on its own
(a signal, an error: JobResult.own_failure) is kept with its node (`died`): that node's
case fails, not those of the nodes whose ranks were ended with the job. A run ended by its
wall clock says so, at which step, with the steps that ran and who was behind. A hang's
message ends with what NCCL's RAS said to the ranks that hung (measure/nccl_ras.py), or
why it could not be asked; the nodes of the ranks RAS calls dead are its `culprits`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pytest_cluster.contract.reading.documents import record_of
from pytest_cluster.errors import ClusterError
from pytest_cluster.launchers.jobs import (
    JobResult,
    JobSpec,
    RankResult,
    how_ended,
    reason_line,
    run_job,
)
from pytest_cluster.measure import nccl_ras
from pytest_cluster.measure.cache import document_key
from pytest_cluster.measure.stragglers import (
    PHASES,
    Progress,
    RankTimes,
    name_hang,
    name_straggler,
)
from pytest_cluster.probes.jobs import job_source

if TYPE_CHECKING:
    from pytest_cluster.contract.model import TrainingSpec
    from pytest_cluster.launchers.base import Launcher
    from pytest_cluster.measure.prober import Prober

#: A rank's heartbeat comes every 0.5 s at most; its node kills it after this much
#: silence at the least (the step bound when that is longer).
STALL_FLOOR_S = 2.0
#: The rendezvous and DDP's setup may take the step bound, at least this long: importing
#: torch on a loaded node and ranks starting apart are no hang.
START_FLOOR_S = 10.0


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
    hang_s: float = 0.0  # the longest a hung rank was stuck or silent, as measured
    error: str = ""  # the job did not finish (no hang found): why
    #: the watchdog's limit on a rank's silence (the stall timeout), and per node the
    #: longest silence of its ranks its node saw (nodes whose part did not answer: none)
    stall_s: float = 0.0
    silence: dict[str, float] = field(default_factory=dict)
    #: per node whose rank's own end failed the job (JobResult.own_failure: a signal, an
    #: error, while the others were healthy), what became of it: its training.ranks case
    #: fails with it; the nodes whose ranks were torn down with the job are not in it
    died: dict[str, str] = field(default_factory=dict)
    #: the nodes a hang's NCCL RAS answer singles out (its dead ranks' nodes,
    #: measure/nccl_ras.py): their training.ranks case fails with the hang
    culprits: tuple[str, ...] = ()
    details: dict[str, object] = field(default_factory=dict)
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

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, record: Mapping[str, object]) -> TrainingRun:
        return record_of(cls, record)


def step_bound(spec: TrainingSpec) -> float:
    clause = spec.clause("step_time")
    return clause.requirement.bound.value if clause is not None else 60.0


def stall_timeout(bound_s: float) -> float:
    return max(bound_s, STALL_FLOOR_S)


def start_bound(bound_s: float) -> float:
    return max(bound_s, START_FLOOR_S)


def training_job(spec: TrainingSpec, nodes: Sequence[str]) -> JobSpec:
    bound = step_bound(spec)
    return JobSpec(nodes=tuple(nodes), program=job_source("train"),
                   ranks_per_node=spec.ranks_per_node,
                   args=("--steps", str(spec.steps), "--warmup", str(spec.warmup),
                         "--step-bound", f"{bound:g}", "--start-bound",
                         f"{start_bound(bound):g}", "--backend", spec.backend),
                   init_timeout_s=min(120.0, spec.timeout_s), wall_timeout_s=spec.timeout_s,
                   stall_timeout_s=stall_timeout(bound))


def _records(result: JobResult) -> list[Progress]:
    return [p for p in (Progress.of(r.node, r.rank, r.progress, r.exit_code)
                        for r in result.ranks) if p is not None]


def hang_seconds(result: JobResult) -> float:
    """The longest a hung rank was stuck: its watchdog's wait, a silent rank's silence."""
    found = [float(r.data["hang"].get("waited_s") or 0.0) for r in result.ranks
             if r.data and isinstance(r.data.get("hang"), dict)
             and isinstance(r.data["hang"].get("waited_s"), (int, float))]
    found += [max(p.silent_s, p.phase_s) for p in _records(result) if p.stalled]
    return max(found, default=0.0)


def hang_text(base: TrainingRun, result: JobResult) -> str:
    """Who hung, from the ranks' last progress ('' when no rank hung or stalled)."""
    hung = [r for r in result.ranks if r.exit_code == "stalled"
            or (r.data and isinstance(r.data.get("hang"), dict))]
    if not hung:
        return ""
    records = _records(result)
    if records:
        return name_hang(records, base.bound_s, stall_timeout(base.bound_s) / 2,
                         [r.rank for r in result.ranks])
    # no progress files (an older node side): what the first watchdog said
    first = min(hung, key=lambda r: (r.ended_at or 0.0, r.rank))
    hang = first.data.get("hang", {}) if first.data else {}
    return (f"{first.node} rank {first.rank}: step {hang.get('step')} still running after "
            f"{hang.get('waited_s')} s (bound {base.bound_s:g} s); no rank reported its "
            f"progress, so which rank holds it up is not known")


def silence(result: JobResult) -> dict[str, float]:
    """Per node whose part answered, its ranks' longest silence (0 with no record)."""
    found: dict[str, float] = {}
    for r in result.ranks:
        found[r.node] = max(found.get(r.node, 0.0), r.longest_silent_s or 0.0)
    return found


def _times(values: object) -> list[float] | None:
    """A list of step times from a rank's steps file (hostile: numbers, nothing else)."""
    if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
            for v in values):
        return None
    return [float(v) for v in values]


def steps_ran(result: JobResult) -> list[tuple[RankResult, dict[str, list[float]]]]:
    """Each rank's measured steps as its steps file had them (a run killed before the
    ranks printed their results), each list cut to the steps every rank completed."""
    found = []
    for r in result.ranks:
        times = {f"{name}_s": _times((r.steps or {}).get(f"{name}_s"))
                 for name in ("step", *PHASES)}
        kept = {name: values for name, values in times.items() if values is not None}
        if len(kept) < len(times):
            return []
        found.append((r, kept))
    return found


def wall_clock_text(base: TrainingRun, result: JobResult, spec_steps: int,
                    why: str) -> str:
    """'wall-clock limit of 180 s reached at step 71 of 50+3; ...': where the ranks were
    (the furthest step any reached), who was behind or silent, else who was slowest."""
    records = [p for p in _records(result) if p.phase != "done"]
    stepping = [p.step for p in records if p.phase in PHASES]
    later = sorted({p.phase for p in records if p.phase not in PHASES and p.step >= 0})
    at = (f" at step {max(stepping)} of {spec_steps}" if stepping
          else f" after the steps ({', '.join(later)})" if later
          else " before the first step")
    behind = name_hang(records, base.bound_s, stall_timeout(base.bound_s) / 2,
                       [r.rank for r in result.ranks]) if records else ""
    text = f"{why}{at}"
    if behind and not behind.startswith("no rank is behind"):
        return f"{text}; {behind}"
    return text


def died_text(rank: RankResult, spec_steps: int) -> str:
    """What became of a rank whose own end failed the job: 'rank 1 was killed by SIGKILL
    (signal 9) at step 8 (backward) of 403; it did not finish its steps (...)', with the
    line of its stderr that says why (jobs.reason_line) where there is one."""
    where = Progress.of(rank.node, rank.rank, rank.progress, rank.exit_code)
    at = f" at {where.at}" if where is not None and where.phase != "done" else ""
    if at and where is not None and where.phase in PHASES and spec_steps:
        at += f" of {spec_steps}"
    why = reason_line(rank.stderr_tail)
    return (f"rank {rank.rank} {how_ended(rank.exit_code)}{at}" + (f": {why}" if why else "")
            + "; it did not finish its steps (the job's other ranks were ended with it)")


def summarise(base: TrainingRun, result: JobResult, spec_steps: int = 0) -> TrainingRun:
    """The run from its ranks' lines: a rank whose own end failed the job (a signal, an
    error: JobResult.own_failure) first, kept per node in `died`; else a hang (named by
    the ranks' progress); else the job's failure (a run ended by its wall clock keeps the
    steps that ran); else the figures and who held the run up. `spec_steps`: the steps
    the run was to take, warm-up included (for 'at step K of M')."""
    base = replace(base, silence=silence(result))
    own = result.own_failure()
    if own is not None:
        return replace(base, error=result.first_failure(),
                       died={own.node: died_text(own, spec_steps)})
    hang = hang_text(base, result)
    if hang:
        ras = nccl_ras.finding(result.ranks, base.nodes, base.ranks_per_node)
        if ras is not None:
            return replace(base, hang=f"{hang}; {ras.text}", culprits=ras.culprits,
                           hang_s=round(hang_seconds(result), 3),
                           details={**base.details, "nccl_ras": ras.report})
        return TrainingRun(**{**asdict(base), "hang": hang,
                              "hang_s": round(hang_seconds(result), 3)})
    if not result.ok and result.wall_clock and not result.errors:
        ran = steps_ran(result)
        error = wall_clock_text(base, result, spec_steps, result.wall_clock)
        if not ran:
            return TrainingRun(**{**asdict(base), "error": error})
        figures = _figures(base, ran)
        return replace(figures, error=error)
    if not result.ok:
        return TrainingRun(**{**asdict(base), "error": result.first_failure()})
    data = [(r, r.data) for r in result.ranks if r.data is not None]
    return _figures(replace(base, simulated=result.simulated), data)


def _figures(base: TrainingRun, data: list[tuple[RankResult, dict[str, Any]]]) -> TrainingRun:
    """The step times, tokens and who held the run up, from each rank's times."""
    steps = min(len(d["step_s"]) for _, d in data)
    if steps == 0:
        return TrainingRun(**{**asdict(base), "error": "no step was measured"})
    per_step = [max(float(d["step_s"][index]) for _, d in data) for index in range(steps)]
    link_bytes = int((data[0][1].get("link") or {}).get("bytes", 0))
    slowest = name_straggler([RankTimes.of(r.node, r.rank, d) for r, d in data], link_bytes)
    tokens = sum(int(d.get("tokens_per_step", 0)) for _, d in data) * steps
    lead = data[0][1]
    details = {k: lead[k] for k in ("torch", "device", "model", "parameters") if k in lead}
    return TrainingRun(**{**asdict(base), "step_s": tuple(per_step), "slowest": slowest,
                          "tokens_per_s": tokens / sum(per_step) if sum(per_step) else 0.0,
                          "loss_first": lead.get("loss_first"),
                          "loss_last": lead.get("loss_last"),
                          "finite": all(bool(d.get("finite", True)) for _, d in data),
                          "details": details})


def run_training(launcher: Launcher, spec: TrainingSpec, nodes: Sequence[str]) -> TrainingRun:
    """One training job over `nodes`; its failure is the run's error."""
    bound = step_bound(spec)
    base = TrainingRun(tuple(nodes), spec.ranks_per_node, spec.backend, bound,
                       stall_s=stall_timeout(bound))
    try:
        result = run_job(launcher, training_job(spec, nodes))
    except (ClusterError, OSError, ValueError) as exc:
        return TrainingRun(**{**asdict(base), "error": str(exc)})
    return summarise(base, result, spec.warmup + spec.steps)


def run(prober: Prober) -> TrainingRun:
    """The training loop over every node of the spec, as one job, run once per run.
    A node whose host probe did not answer fails it at once, named (its ranks would
    otherwise leave the others waiting out the rendezvous)."""
    spec = prober.spec.training
    if spec is None:
        raise ValueError("the spec has no training section")

    def compute() -> dict[str, object]:
        host = prober.silent(prober.nodes)
        if host is not None:
            return TrainingRun(prober.nodes, spec.ranks_per_node, spec.backend,
                               step_bound(spec), error=host.describe(),
                               simulated=host.simulated).to_json()
        started = time.time()
        found = run_training(prober.launcher, spec, prober.nodes)
        return replace(found, details={**found.details, "started_at": started,
                                       "ended_at": time.time()}).to_json()

    prober.host_all()  # read before the measuring lock is taken (see ProbeCache.alone)
    document = prober.cache.document(document_key("training", asdict(spec)), compute)
    return TrainingRun.from_json(document)
