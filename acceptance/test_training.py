"""Training clauses: a small transformer trained with DistributedDataParallel over every
node of the cluster, as one job (pytest_cluster/measure/training.py): no step over the bound (a
hang is found by it), the step time steady, the tokens per second promised."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.model import Clause
from pytest_cluster.contract.requirement import parse_requirement
from pytest_cluster.hostlist import compress_hostlist
from pytest_cluster.measure import training
from pytest_cluster.run.contract_tests import checks
from pytest_cluster.units import Dim

if TYPE_CHECKING:
    from pytest_cluster.contract.model import TrainingSpec
    from pytest_cluster.evidence.record.check import Evidence
    from pytest_cluster.measure.cluster import Cluster
    from pytest_cluster.measure.training import TrainingRun

METHOD = ("torch.nn TransformerEncoder trained with DistributedDataParallel ({backend}) on "
          "synthetic tokens, {steps} steps after {warmup} warm-up; a step's time is its "
          "slowest rank's (DDP synchronises every step); each step timed in its forward "
          "pass, the wait for the other ranks after it, the backward pass with DDP's "
          "gradient all-reduce and the optimiser step; then pairwise link exchanges")


def _spec(cluster: Cluster) -> TrainingSpec:
    spec = cluster.spec.training
    assert spec is not None, "the spec has no training section"
    return spec


def _run(cluster: Cluster, evidence: Evidence, key: str) -> tuple[TrainingSpec, Clause,
                                                                  TrainingRun,
                                                                  dict[str, Any], str]:
    spec = _spec(cluster)
    clause = spec.clause(key)
    assert clause is not None, f"training.{key} is not in the contract"
    run = training.run(cluster)
    evidence.saw(run)
    label = f"{len(run.nodes)} node(s) ({compress_hostlist(run.nodes)})"
    raw: dict[str, Any] = {"nodes": compress_hostlist(run.nodes),
                           "ranks_per_node": run.ranks_per_node, "backend": run.backend,
                           "step_s": list(run.step_s), "slowest": run.slowest,
                           "loss_first": run.loss_first, "loss_last": run.loss_last,
                           "details": run.details}
    if run.error:
        evidence.cannot_measure(clause, run.error, raw=raw, kind="job_failed", node=label)
    if run.ok and not run.finite:
        evidence.cannot_measure(clause, "the loss was not finite: the training is broken, "
                                "its speed does not count", raw=raw, kind="wrong_result",
                                node=label)
    return spec, clause, run, raw, label


def _method(spec: TrainingSpec, run: TrainingRun) -> str:
    return METHOD.format(backend=run.backend, steps=spec.steps, warmup=spec.warmup)


@checks("training.step_time")
def test_training_steps(cluster: Cluster, evidence: Evidence) -> None:
    """Every step within the bound; a step over it is a hang: the rank(s) that stopped
    advancing are named with their node, step and phase, and the ranks waiting for them
    (the job is stopped at the bound, not waited out)."""
    spec, clause, run, raw, label = _run(cluster, evidence, "step_time")
    _straggler(evidence, run)
    if run.hang:
        raw["hang"] = run.hang
        # the figure is the stall measured; a hang fails even when it was found early
        evidence.check(clause, max(run.hang_s, run.bound_s * 1.000001 + 1e-9), node=label,
                       result=None, method=_method(spec, run), raw=raw,
                       note="; ".join(part for part in (run.hang, run.slowest) if part))
    evidence.check(clause, run.longest_s, node=label, result=None, method=_method(spec, run),
                   raw=raw, note=f"longest step {run.longest_s:.3f} s; {run.slowest}"
                   + (f"; loss {run.loss_first:.3f} -> {run.loss_last:.3f}"
                      if run.loss_first is not None and run.loss_last is not None else ""))


@checks("training.spread")
def test_training_steady(cluster: Cluster, evidence: Evidence) -> None:
    """The step time's coefficient of variation over the measured steps."""
    spec, clause, run, raw, label = _run(cluster, evidence, "spread")
    _straggler(evidence, run)
    if run.hang:
        evidence.cannot_measure(clause, run.hang, raw=raw, kind="hang", node=label)
    evidence.check(clause, run.spread, node=label, result=None, method=_method(spec, run),
                   raw=raw, note=f"longest step {run.longest_s:.3f} s; {run.slowest}")


@checks("training.tokens_per_s")
def test_training_throughput(cluster: Cluster, evidence: Evidence) -> None:
    """Tokens per second over the whole job: every rank's tokens over the steps' time."""
    spec, clause, run, raw, label = _run(cluster, evidence, "tokens_per_s")
    if run.hang:
        evidence.cannot_measure(clause, run.hang, raw=raw, kind="hang", node=label)
    evidence.check(clause, run.tokens_per_s, node=label, result=None,
                   method=_method(spec, run), raw=raw)


def _straggler(evidence: Evidence, run: TrainingRun) -> None:
    """Who held a finished run up, as a finding of its own (terminal, report, JUnit)."""
    if run.ok and run.slowest and not run.slowest.startswith("no rank stands out"):
        evidence.record(finding=run.slowest)


RANKS_METHOD = ("each rank's progress file, written at its start by its node and then by "
                "the rank at every phase and heartbeat (<= 0.5 s); its node polls it every "
                "50 ms and kills a rank silent past the limit (stopped, frozen); a rank "
                "that died first on its own (a signal, an error) fails its node")


@checks("training.ranks")
def test_training_ranks(cluster: Cluster, node: str, evidence: Evidence) -> None:
    """This node's ranks took their steps: none went silent (stopped, frozen) past the
    watchdog's limit, from its start (rendezvous, setup) to its end, and none died on its
    own (a signal, an error) while the others were healthy (TrainingRun.died), nor did
    NCCL's RAS, asked in a hang, call one dead (TrainingRun.culprits). The figure
    is the longest silence the node saw; a hung or dead rank's node fails it (the others
    wait for it, or are ended with the job, and pass), so the verdict rejects the node
    that hung or died, not the ones that found it."""
    spec = _spec(cluster)
    run = training.run(cluster)
    evidence.saw(run)
    clause = Clause(declared("training.ranks").id, spec.line,
                    parse_requirement(f"<= {run.stall_s:g} s", Dim.TIME, "<="))
    raw: dict[str, Any] = {"silence_s": run.silence.get(node), "stall_s": run.stall_s,
                           "hang": run.hang or None}
    if node not in run.silence:
        why = run.error or run.hang or "its ranks reported no progress"
        said = f"its ranks' silence was not measured: {why}"
        if why.startswith((f"{node}: ", f"{node} ")):  # its own part failed the job
            evidence.cannot_measure(clause, said, raw=raw, kind="job_failed", node=node)
        evidence.undecided(clause, said, raw=raw, node=node)
    silent = run.silence[node]
    died = run.died.get(node, "")
    if not died and node in run.culprits:  # NCCL RAS named its rank(s) dead in the hang
        died = run.hang
    if died:
        raw["died"] = died
    evidence.check(clause, silent, node=node, result=None, method=RANKS_METHOD, raw=raw,
                   note=run.hang or run.error, wrong=died)
