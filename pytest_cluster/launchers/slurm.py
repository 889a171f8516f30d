"""The slurm launcher: one `srun` step for all nodes, one task per node.

Before a step, `sinfo` says what state each node is in, and `squeue` (only for nodes that
jobs hold) who holds it. A step runs only on idle nodes and on nodes that only our own jobs
hold; every other node fails at once with SLURM's own words, instead of hanging the step:

- UNREACHABLE: down, not responding (`*`), drained / draining, fail / failing, reboot
  pending or issued (`@`, `^`), powered down or changing power state (`~ # ! %`), future,
  unknown, inval, a state we do not know.
- CONTROLLER (this machine's side, never the node's fault): a node sinfo does not list (a
  name SLURM does not know), sinfo or squeue failing (no SLURM controller answered),
  srun not installed here, and a step SLURM refused for every node (an invalid node name,
  partition or account; "Unable to contact slurm controller").
- BUSY: held by another job (allocated, mixed, completing: `SLURM reports node2 allocated
  (held by job 97 of user alice)`), in a reservation (reserved, maint, `$`), in use by
  another job and planned for a pending one (`mixed-`). A mixed node still has free CPUs
  and SLURM could start a 1-CPU step there; we do not: a measurement on a node that
  another job loads is not a measurement of the node. With `slurm.reservation` set,
  reserved and maint nodes are expected (the burn-in runs inside the reservation) and
  srun decides.
- An idle node that the backfill scheduler keeps for a pending job (planned) may be kept
  for our own step that just gave up: it gets a step of its own after the idle nodes, and
  fails as busy only if SLURM does not give it within IMMEDIATE_S.

Our own jobs are this user's `pytest-cluster-*` steps (another pytest-xdist worker's probe,
or a step just aborted) and, with `slurm.allocation`, the allocation pytest runs in: a node
they hold is waited for (in a step of its own, after the idle nodes), never called busy.

Every step asks for its nodes with `srun --immediate`: IMMEDIATE_S for idle nodes, so a node
taken between sinfo and srun ends the step in seconds ("Unable to allocate resources:
Requested nodes are busy") instead of queueing it; longer for nodes our own jobs hold
(SETTLE_S for a step SLURM is still completing, the probe timeout for a running one).
A slurmd that died after the controller last heard from it fails the step's launch within
SLURM's MessageTimeout ("Task launch for StepId=96.0 failed on node node3: Communication
connection failure"): srun names the node, which fails alone as unreachable with srun's
words. The nodes left without an answer are run again in one step (a second look at sinfo
and squeue finds a node taken meanwhile); only when that step also fails without naming a
culprit does each node get a step of its own.

The probe's source goes to every task over srun's stdin (`--input=all`) to the node runner,
which enforces the timeout on the node and marks its output with the node's name and exit
code; `--label` keeps the tasks' lines apart. On timeout or Ctrl-C the step's job is
cancelled (`scancel --name`).
"""

from __future__ import annotations

import getpass
import os
import re
import subprocess
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_cluster.contract.model import ClusterSpec, SlurmSpec, Spec
from pytest_cluster.launchers.base import Launcher
from pytest_cluster.launchers.fanout import fan_out
from pytest_cluster.launchers.process import Finished, execute, probe_result
from pytest_cluster.launchers.remote import classify_runner_exit, runner_payload
from pytest_cluster.launchers.result import ErrorKind, ProbeResult, ProgramRun
from pytest_cluster.launchers.slurm_commands import (
    mpi_srun_command,
    scancel_command,
    split_labeled,
    srun_command,
    srun_errors,
    task_lines,
)
from pytest_cluster.launchers.slurm_nodes import (
    IMMEDIATE_S,
    JOB_PREFIX,
    Holder,
    NodeCheck,
    Waiting,
    check_nodes,
    held_nodes,
    parse_sinfo,
    parse_squeue,
    sinfo_command,
    squeue_command,
)
from pytest_cluster.units import format_size

if TYPE_CHECKING:
    from pytest_cluster.probes import ProbeCall

NO_TASK = "srun ran no task on the node"
#: Steps a probe call may take in groups before each node left gets one of its own.
MAX_ROUNDS = 4
#: The allocation pytest runs in (salloc, sbatch).
ALLOCATION_JOB_ENV = "SLURM_JOB_ID"

def _run_text(argv: list[str]) -> tuple[int, str, str]:
    """Run a SLURM client command; (exit code, stdout, stderr), bytes decoded with
    replacement (a reason may hold any byte)."""
    done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
    return (done.returncode, done.stdout.decode("utf-8", errors="replace"),
            done.stderr.decode("utf-8", errors="replace"))


class SlurmLauncher(Launcher):
    name = "slurm"

    def __init__(self, spec: ClusterSpec, slurm: SlurmSpec) -> None:
        super().__init__(spec)
        self.slurm = slurm

    @classmethod
    def from_spec(cls, spec: Spec) -> Launcher:
        return cls(spec.cluster, spec.slurm or SlurmSpec())

    def _failed(self, node: str, probe: str, kind: ErrorKind, message: str,
                stderr: str = "", started: float = 0.0) -> ProbeResult:
        return ProbeResult(node, probe, None, kind, message, stderr_tail=stderr[-2000:],
                           started_at=started, duration_s=time.time() - started)

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        return self.run_source(call, call.source(), nodes, timeout_s)

    def run_source(self, call: ProbeCall, source: str, nodes: Sequence[str],
                   timeout_s: float) -> dict[str, ProbeResult]:
        """Run `source` as probe `call` on `nodes` (run() with the probe's own source)."""
        results: dict[str, ProbeResult] = {}
        todo = list(nodes)
        undecided = 0
        for _ in range(MAX_ROUNDS):
            got, again = self._round(call, source, todo, timeout_s)
            results.update(got)
            if not again:
                break
            if set(again) == set(todo):  # the step answered no node and named no culprit
                undecided += 1
                if undecided == 2 or len(again) == 1:
                    if len(again) > 1:  # each node alone, so the bad one fails alone
                        results.update(fan_out(again, lambda node: self._round(
                            call, source, [node], timeout_s)[0][node], self.spec.parallel))
                    break
            todo = again
        return {node: results[node] for node in nodes}

    def run_program(self, argv: Sequence[str], nodes: Sequence[str], tasks_per_node: int,
                    timeout_s: float) -> ProgramRun | None:
        """`argv` as one srun step with --mpi (slurm.mpi): every node must be free now (as
        sinfo and squeue say), else it does not run, saying which node and why."""
        check = self.check(nodes, timeout_s)
        if isinstance(check, str):
            return ProgramRun("unavailable", "", check)
        held = {**{n: message for n, (_, message) in check.failed.items()},
                **{n: w.message for n, w in check.waiting.items()}}
        if held:
            node = next(iter(held))
            return ProgramRun("unavailable", "", f"{node}: {held[node]}")
        job = f"{JOB_PREFIX}program-{uuid.uuid4().hex[:8]}"
        line = mpi_srun_command(self.slurm, nodes, tasks_per_node, argv, job)

        def cancel() -> None:
            subprocess.run(scancel_command(job), capture_output=True, timeout=30, check=False)

        done = execute(line, "", timeout_s + IMMEDIATE_S + 30, cancel=cancel)
        if done.start_error is not None:
            return ProgramRun("unavailable", "", f"srun: {done.start_message}")
        if done.overflow:  # stopped: what it printed does not count
            return ProgramRun("too much output", "", f"srun: stopped: {done.overflow}")
        code: int | str = "timeout" if done.timed_out else \
            done.returncode if done.returncode is not None else "killed"
        return ProgramRun(code, task_lines(done.stdout), done.stderr[-2000:])

    def check(self, nodes: Sequence[str], timeout_s: float) -> NodeCheck | str:
        """What SLURM says about `nodes` now (sinfo, then squeue for the held ones), or why
        it could not be asked."""
        reservation = bool(self.slurm.reservation)
        try:
            code, out, err = _run_text(sinfo_command(nodes, self.slurm.partition))
            if code != 0:
                return f"sinfo failed, no SLURM controller answered: {err.strip()}"
            sinfo = parse_sinfo(out)
            held = held_nodes(sinfo, nodes, reservation)
            holders: dict[str, list[Holder]] = {}
            if held:
                code, out, err = _run_text(squeue_command(held))
                if code != 0:
                    return f"squeue failed, no SLURM controller answered: {err.strip()}"
                holders = parse_squeue(out, held)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"sinfo/squeue failed, no SLURM controller answered: {exc}"
        return check_nodes(sinfo, holders, nodes, getpass.getuser(),
                           os.environ.get(ALLOCATION_JOB_ENV), reservation, timeout_s,
                           self.slurm.partition)

    def _round(self, call: ProbeCall, source: str, nodes: list[str],
               timeout_s: float) -> tuple[dict[str, ProbeResult], list[str]]:
        """Check the nodes, run one step; every node's result (final, or provisional for the
        nodes to try again) and the nodes to try again."""
        started = time.time()
        check = self.check(nodes, timeout_s)
        if isinstance(check, str):
            return {n: self._failed(n, call.name, ErrorKind.CONTROLLER, check,
                                    started=started) for n in nodes}, []
        results = {node: self._failed(node, call.name, kind, message, started=started)
                   for node, (kind, message) in check.failed.items()}
        if check.idle:  # nodes our own jobs hold wait for a later round
            group, immediate, waiting = check.idle, IMMEDIATE_S, None
            later = [n for n in nodes if n in check.waiting]
            for node in later:
                results[node] = self._failed(node, call.name, check.waiting[node].kind,
                                             check.waiting[node].message, started=started)
        elif check.waiting:
            group = [n for n in nodes if n in check.waiting]
            waiting = check.waiting
            immediate, later = max(w.immediate_s for w in waiting.values()), []
        else:
            return results, []
        got, again = self._step(call, source, group, timeout_s, started, immediate, waiting)
        results.update(got)
        return results, [n for n in nodes if n in again or n in later]

    def _step(self, call: ProbeCall, source: str, nodes: list[str], timeout_s: float,
              started: float, immediate_s: int = IMMEDIATE_S,
              waiting: dict[str, Waiting] | None = None,
              ) -> tuple[dict[str, ProbeResult], set[str]]:
        """One srun step on `nodes`: each node's result, and the nodes it gave no answer
        without a culprit (to run again)."""
        job = f"{JOB_PREFIX}{call.name}-{uuid.uuid4().hex[:8]}"
        payload = runner_payload(source)
        argv = srun_command(self.slurm, nodes, self.spec.python, call, timeout_s, job,
                            immediate_s)

        def cancel() -> None:
            subprocess.run(scancel_command(job), capture_output=True, timeout=30, check=False)

        # the nodes kill their probes at timeout_s; srun gets --immediate to get the nodes
        # and a margin to start the step
        limit = self.spec.probe_output_bytes
        done = execute(argv, payload, timeout_s + immediate_s + 30, hold_stdin=True,
                       cancel=cancel, limit=limit * len(nodes))
        if done.start_error is not None:
            return {n: self._failed(n, call.name, ErrorKind.CONTROLLER,
                                    f"srun: {done.start_message}", started=started)
                    for n in nodes}, set()
        tasks = split_labeled(done.stdout, done.stderr)
        unlabeled = "\n".join(line for line in done.stderr.splitlines()
                              if not line.split(": ", 1)[0].strip().isdigit())
        errors = srun_errors(unlabeled)
        results: dict[str, ProbeResult] = {}
        again: set[str] = set()
        for node in nodes:
            task = tasks.get(node)
            if task is not None and task.exit_code is not None:
                out, err = "\n".join(task.stdout), "\n".join(task.stderr)
                finished = Finished(task.exit_code, out, err, overflow="; ".join(
                    f"{name}: more than {format_size(limit)} ({format_size(len(text))} "
                    "seen)" for name, text in (("stdout", out), ("stderr", err))
                    if len(text) > limit))
                result = probe_result(node, call.name, finished, timeout_s, started,
                                      time.time() - started)
                results[node] = classify_runner_exit(result, self.spec.python,
                                                     within=self.timeout_text(timeout_s))
                continue
            kind, message = ErrorKind.UNREACHABLE, NO_TASK
            if done.overflow:
                kind, message = (ErrorKind.BAD_OUTPUT, "the step's probes printed too much "
                                 f"in all, so it was stopped: {done.overflow}")
            elif done.timed_out:
                kind, message = (ErrorKind.TIMEOUT,
                                 f"no answer within {self.timeout_text(timeout_s)}; the step "
                                 "was cancelled")
            elif node in errors.launch_failed:
                message = (f"srun could not start the probe on {node}: "
                           f"{errors.launch_failed[node]}")
            elif errors.no_resources and waiting is not None and node in waiting:
                # waited for our own step to let it go: that is final
                kind = waiting[node].kind
                message = f"{waiting[node].message}: {errors.no_resources}"
            elif errors.no_resources:  # refused: a partition, account, node name or
                # controller error, this machine's side (a busy node is tried again)
                kind, message = ErrorKind.CONTROLLER, (
                    f"SLURM gave the step no nodes: {errors.no_resources}")
                if errors.busy:  # a second look at SLURM may name the culprit
                    again.add(node)
                    kind, message = ErrorKind.BUSY, (
                        f"SLURM did not give {node} to the step within {immediate_s} s: "
                        f"{errors.no_resources}")
            else:
                again.add(node)
                if errors.launch_failed:
                    message = (f"{NO_TASK}: the step ended when srun could not start "
                               f"{', '.join(sorted(errors.launch_failed))}")
            results[node] = self._failed(node, call.name, kind, message,
                                         _tail_for(node, nodes, unlabeled or done.stderr),
                                         started)
        return results, again


def _tail_for(node: str, nodes: Sequence[str], stderr: str) -> str:
    """srun's lines about the step without those that name another node of it."""
    others = [re.compile(rf"(?<![\w.-]){re.escape(n)}(?![\w.-])") for n in nodes if n != node]
    return "\n".join(line for line in stderr.splitlines()
                     if not any(other.search(line) for other in others))
