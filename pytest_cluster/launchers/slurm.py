"""The slurm launcher: one `srun` step for all nodes, one task per node.

Before a step, `sinfo` says what state each node is in, and `squeue` (only for nodes that
jobs hold) who holds it. A step runs only on idle nodes and on nodes that only our own jobs
hold; every other node fails at once with SLURM's own words, instead of hanging the step:

- UNREACHABLE: down, not responding (`*`), drained / draining, fail / failing, reboot
  pending or issued (`@`, `^`), powered down or changing power state (`~ # ! %`), future,
  unknown, inval, a state we do not know, and a node sinfo does not list.
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
import math
import os
import re
import subprocess
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_cluster.errors import UnitError
from pytest_cluster.hostlist import expand_hostlist
from pytest_cluster.launchers.base import Launcher
from pytest_cluster.launchers.fanout import fan_out
from pytest_cluster.launchers.node_runner import EXIT_MARKER, LAST, MORE, NODE_MARKER
from pytest_cluster.launchers.process import Finished, execute, probe_result
from pytest_cluster.launchers.remote import classify_runner_exit, runner_argv, runner_payload
from pytest_cluster.launchers.result import ErrorKind, ProbeResult, ProgramRun
from pytest_cluster.spec.model import ClusterSpec, SlurmSpec, Spec
from pytest_cluster.units import format_size

if TYPE_CHECKING:
    from pytest_cluster.probes import ProbeCall

NO_TASK = "srun ran no task on the node"
#: srun --immediate for idle nodes: SLURM starts a job on idle nodes in well under a second.
IMMEDIATE_S = 10
#: ... for nodes still completing a step of ours: SLURM frees them within its MessageTimeout
#: (10 s by default; 11 s measured after an aborted launch).
SETTLE_S = 30
#: Steps a probe call may take in groups before each node left gets one of its own.
MAX_ROUNDS = 4
#: Job names of our own steps.
JOB_PREFIX = "pytest-cluster-"
#: The allocation pytest runs in (salloc, sbatch).
ALLOCATION_JOB_ENV = "SLURM_JOB_ID"

# What a node's state words and flag characters mean (sinfo's NODE STATE CODES, %T).
_FLAGS = "*~#!%$@^-+"
_HELD = frozenset({"allocated", "alloc", "mixed", "mix", "completing", "comp"})
_PLANNED = frozenset({"planned", "plnd", "-"})
_BUSY = frozenset({"reserved", "resv", "maint", "maintenance", "$", "perfctrs",
                   "npc"}) | _PLANNED
_RESERVATION = frozenset({"reserved", "resv", "maint", "maintenance"})
_IGNORED = frozenset({"cloud", "dynamic_norm", "external"})
_NO_ANSWER_HINT = "its slurmd does not answer slurmctld; check slurmd on {node}"
_HINTS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"*", "not_responding", "no_respond"}), _NO_ANSWER_HINT),
    (frozenset({"drain", "drained", "draining", "drng"}),
     "taken out of service; `scontrol update nodename={node} state=resume` returns it"),
    (frozenset({"fail", "failing", "failg"}), "marked as failing by an administrator"),
    (frozenset({"down", "unknown", "unk", "inval", "invalid_reg", "error", "?"}),
     "not in service; `scontrol show node {node}` says why"),
    (frozenset({"maint", "maintenance", "$"}),
     "in a maintenance reservation; give slurm.reservation to run inside it"),
    (frozenset({"reboot", "boot", "reboot_requested", "reboot_issued", "@", "^"}),
     "a reboot is pending or under way"),
    (frozenset({"~", "#", "!", "%", "powered_down", "powering_down", "powering_up",
                "power_down", "power_up", "pow_dn", "pow_up", "powered_dn", "powring_dn",
                "cloud"}),
     "powered down or changing power state; power it up before the test"),
    (frozenset({"future", "futr", "dynamic_future"}), "not configured yet (future)"),
    (frozenset({"reserved", "resv"}),
     "in an advanced reservation; give slurm.reservation to run inside it"),
    (frozenset({"planned", "plnd", "-"}),
     "kept free by the backfill scheduler for a pending job"),
    (frozenset({"perfctrs", "npc"}), "its network performance counters are in use"),
)


def sinfo_command(nodes: Sequence[str], partition: str | None = None) -> list[str]:
    """One line per node and partition: name, state (%T), reason last (it may hold '|')."""
    where = [f"--partition={partition}"] if partition else ["--all"]
    return ["sinfo", "--noheader", "--Node", *where, f"--nodes={','.join(nodes)}",
            "--format=%N|%T|%E"]


def squeue_command(nodes: Sequence[str]) -> list[str]:
    """The jobs holding `nodes`: id, user, state, nodes, and the name last (it may hold
    '|')."""
    return ["squeue", "--noheader", "--all", f"--nodelist={','.join(nodes)}",
            "--format=%i|%u|%T|%N|%j"]


def parse_sinfo(text: str) -> dict[str, tuple[str, str]]:
    """Node -> (state, reason) from sinfo_command's output. A node listed in several
    partitions keeps its worst state; a reason of 'none' is ''."""
    found: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) != 3 or not parts[0] or not parts[1]:
            continue
        name, state, reason = parts[0].strip(), parts[1].strip().lower(), parts[2].strip()
        reason = "" if reason.lower() in ("none", "(null)") else reason
        if name in found and _rank(found[name][0]) >= _rank(state):
            continue
        found[name] = (state, reason)
    return found


def state_words(state: str) -> set[str]:
    """A state's words and flag characters: 'draining@' -> {'draining', '@'},
    'allocated+drain' -> {'allocated', 'drain'}, 'allocated+' -> {'allocated', '+'}."""
    text = state.strip().lower()
    flags = set()
    while text and text[-1] in _FLAGS:
        flags.add(text[-1])
        text = text[:-1]
    return {word for word in text.split("+") if word} | flags


def state_kind(state: str, reservation: bool = False) -> str:
    """'idle', 'held' (jobs hold it: squeue says whose), 'planned' (idle, kept by the
    backfill scheduler for a pending job: maybe our own step that just gave up), 'busy', or
    'down' (not in service). With `reservation`, reserved and maint nodes are expected."""
    words = state_words(state)
    core = (words - _IGNORED) or words  # 'idle+cloud' is idle; 'cloud' alone is not
    if reservation:
        core -= _RESERVATION | {"$"}
    if "+" in core:  # allocated+: jobs, one of them completing
        core = (core - {"+"}) | {"completing"}
    if not core or core == {"idle"}:
        return "idle"
    if core <= _HELD | {"idle"}:
        return "held"
    if core <= _PLANNED | {"idle"}:
        return "planned"
    if core <= _HELD | _BUSY | {"idle", "-"}:
        return "busy"
    return "down"


def _rank(state: str) -> int:
    return {"idle": 0, "planned": 1, "held": 2, "busy": 3, "down": 4}[state_kind(state)]


def _hint(state: str, node: str) -> str:
    words = state_words(state)
    for keys, hint in _HINTS:
        if words & keys:
            return hint.format(node=node)
    return "pytest-cluster runs steps only on idle nodes"


@dataclass(frozen=True)
class Holder:
    """A job on a node, as squeue_command prints it."""

    job_id: str
    user: str
    state: str
    name: str

    def describe(self) -> str:
        return f"job {self.job_id} of user {self.user}"


def parse_squeue(text: str, nodes: Sequence[str]) -> dict[str, list[Holder]]:
    """Node (of `nodes`) -> the jobs holding it, from squeue_command's output."""
    wanted = set(nodes)
    held: dict[str, list[Holder]] = {}
    for line in text.splitlines():
        parts = line.strip().split("|", 4)
        if len(parts) != 5 or not parts[3].strip():
            continue
        job_id, user, state, nodelist, name = (p.strip() for p in parts)
        try:
            names = expand_hostlist(nodelist)
        except UnitError:
            names = sorted(wanted)  # a node list we cannot read: it may hold any of them
        for node in names:
            if node in wanted:
                held.setdefault(node, []).append(Holder(job_id, user, state.upper(), name))
    return held


@dataclass(frozen=True)
class Waiting:
    """A node that only our own jobs hold: run after the idle ones, waiting up to
    `immediate_s` for it; if SLURM still does not give it, it fails with `kind` and
    `message`."""

    immediate_s: int
    kind: ErrorKind
    message: str


@dataclass
class NodeCheck:
    """What sinfo and squeue say about the nodes of a step, before it."""

    failed: dict[str, tuple[ErrorKind, str]] = field(default_factory=dict)
    idle: list[str] = field(default_factory=list)
    waiting: dict[str, Waiting] = field(default_factory=dict)


def held_nodes(sinfo: dict[str, tuple[str, str]], nodes: Sequence[str],
               reservation: bool = False) -> list[str]:
    """The nodes whose state says jobs hold them (squeue tells whose)."""
    return [n for n in nodes if n in sinfo and state_kind(sinfo[n][0], reservation) == "held"]


def check_nodes(sinfo: dict[str, tuple[str, str]], holders: dict[str, list[Holder]],
                nodes: Sequence[str], me: str, allocation_job: str | None = None,
                reservation: bool = False, timeout_s: float = 0.0,
                partition: str | None = None) -> NodeCheck:
    """Sort `nodes` by what SLURM says (parse_sinfo, parse_squeue): failed at once with
    SLURM's words, idle, or waiting for our own jobs (see the module docstring)."""
    check = NodeCheck()

    def ours(job: Holder) -> bool:
        return (job.job_id == allocation_job
                or (job.user == me and job.name.startswith(JOB_PREFIX)))

    for node in nodes:
        if node not in sinfo:
            where = f" in partition {partition}" if partition else ""
            check.failed[node] = (ErrorKind.UNREACHABLE, (
                f"SLURM does not know {node}{where} (sinfo does not list it): check "
                "cluster.nodes" + (" and slurm.partition" if partition else "")))
            continue
        state, reason = sinfo[node]
        why = f", reason: {reason}" if reason else ""
        kind = state_kind(state, reservation)
        if kind == "idle":
            check.idle.append(node)
        elif kind == "planned":  # srun decides, in a step of its own after the idle nodes
            check.waiting[node] = Waiting(IMMEDIATE_S, ErrorKind.BUSY, (
                f"SLURM reports {node} {state}: {_hint(state, node)}, and did not give it "
                f"to this step within {IMMEDIATE_S} s"))
        elif kind == "down":
            check.failed[node] = (ErrorKind.UNREACHABLE, (
                f"SLURM reports {node} {state}" + (f" ({reason})" if reason else "")
                + f": {_hint(state, node)}"))
        elif kind == "busy":
            check.failed[node] = (ErrorKind.BUSY, (
                f"SLURM reports {node} {state}" + (f" ({reason})" if reason else "")
                + f": {_hint(state, node)}"))
        else:
            jobs = holders.get(node, [])
            others = [job for job in jobs if not ours(job)]
            if not jobs:  # freed since sinfo (or jobs hidden from us): srun decides
                check.idle.append(node)
            elif others:
                held_by = ", ".join(job.describe() for job in others)
                check.failed[node] = (ErrorKind.BUSY, (
                    f"SLURM reports {node} {state} (held by {held_by}{why}): another job "
                    "is using it; run again when it is free"))
            else:
                check.waiting[node] = _waiting(node, state, jobs, timeout_s)
    return check


def _waiting(node: str, state: str, jobs: list[Holder], timeout_s: float) -> Waiting:
    steps = ", ".join(f"{job.name} (job {job.job_id}, {job.state.lower()})" for job in jobs)
    if all(job.state == "COMPLETING" for job in jobs):
        return Waiting(SETTLE_S, ErrorKind.UNREACHABLE, (
            f"SLURM still shows {node} {state} with our step {steps} after {SETTLE_S} s "
            "more: the node does not confirm the step's end; "
            + _NO_ANSWER_HINT.format(node=node)))
    wait = math.ceil(timeout_s) + IMMEDIATE_S
    return Waiting(wait, ErrorKind.BUSY, (
        f"SLURM reports {node} {state}, held by our own {steps}, and did not give it to "
        f"this step within {wait} s"))


def srun_command(slurm: SlurmSpec, nodes: Sequence[str], python: str, call: ProbeCall,
                 timeout_s: float, job_name: str,
                 immediate_s: int = IMMEDIATE_S) -> list[str]:
    argv = ["srun", f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}",
            f"--ntasks={len(nodes)}", "--ntasks-per-node=1", "--input=all", "--label",
            "--kill-on-bad-exit=0", "--no-kill", f"--immediate={immediate_s}",
            f"--job-name={job_name}", "--export=ALL,PYTEST_CLUSTER_MARKERS=1"]
    return [*argv, *site_options(slurm), *runner_argv(python, timeout_s, call.args)]


def site_options(slurm: SlurmSpec) -> list[str]:
    """Where the site wants our steps: partition, account, reservation, time limit."""
    found = [f"--partition={slurm.partition}" if slurm.partition else "",
             f"--account={slurm.account}" if slurm.account else "",
             f"--reservation={slurm.reservation}" if slurm.reservation else "",
             f"--time={slurm.time_limit_min}" if slurm.time_limit_min else ""]
    return [option for option in found if option]


def mpi_srun_command(slurm: SlurmSpec, nodes: Sequence[str], tasks_per_node: int,
                     program: Sequence[str], job_name: str,
                     immediate_s: int = IMMEDIATE_S) -> list[str]:
    """One step of a program built with MPI: `tasks_per_node` tasks on each node, ranked
    by SLURM's PMI (--mpi), every task's lines labelled; one task failing ends them all."""
    argv = ["srun", f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}",
            f"--ntasks={len(nodes) * tasks_per_node}", f"--ntasks-per-node={tasks_per_node}",
            f"--mpi={slurm.mpi}", "--label", "--kill-on-bad-exit=1",
            f"--immediate={immediate_s}", f"--job-name={job_name}"]
    return [*argv, *site_options(slurm), *program]


def task_lines(text: str, task: int = 0) -> str:
    """What one task printed, from srun --label output ('  0: text')."""
    found = []
    for line in text.splitlines():
        label, sep, rest = line.partition(": ")
        if sep and label.strip().isdigit() and int(label) == task:
            found.append(rest)
    return "\n".join(found) + ("\n" if found else "")


def scancel_command(job_name: str) -> list[str]:
    return ["scancel", f"--name={job_name}", f"--user={getpass.getuser()}"]


_LAUNCH_FAILED = re.compile(r"Task launch for \S+ failed on node ([^\s:]+): (.+)$")
_NO_RESOURCES = re.compile(r"(Unable to allocate resources|Unable to create step for job "
                           r"\S+|Job allocation \S+ has been revoked)[.:]?\s*(.*)$")


@dataclass(frozen=True)
class SrunErrors:
    """What srun's own stderr lines say went wrong with a step."""

    launch_failed: dict[str, str]  # node -> srun's words for it
    no_resources: str  # srun's words when the step got no nodes at all ('' otherwise)

    @property
    def busy(self) -> bool:
        """The nodes were taken (or not given in time), rather than refused (a partition,
        account or controller error, final for every node)."""
        return "busy" in self.no_resources or "queued and waiting" in self.no_resources


def srun_errors(stderr: str) -> SrunErrors:
    """srun's lines about the step (not the tasks' labeled lines)."""
    launch: dict[str, str] = {}
    words: list[str] = []
    no_resources = False
    for raw in stderr.splitlines():
        line = raw.strip()
        if not line.startswith("srun:"):
            continue
        found = _LAUNCH_FAILED.search(line)
        if found:
            launch.setdefault(found.group(1), line)
        if "queued and waiting for resources" in line:
            words.append(line)
        if _NO_RESOURCES.search(line):
            no_resources = True
            words.append(line)
    return SrunErrors(launch, " / ".join(words) if no_resources else "")


@dataclass
class TaskOutput:
    node: str = ""
    stdout: list[str] = field(default_factory=list)
    partial: str = ""  # pieces of a line whose last piece has not come yet
    stderr: list[str] = field(default_factory=list)
    exit_code: int | None = None


def split_labeled(stdout: str, stderr: str) -> dict[str, TaskOutput]:
    """srun --label output ("3: text") per node, by the runner's markers."""
    tasks: dict[str, TaskOutput] = {}
    for text, stream in ((stdout, "stdout"), (stderr, "stderr")):
        for line in text.splitlines():
            label, sep, rest = line.partition(": ")
            if not sep or not label.strip().isdigit():
                continue
            task = tasks.setdefault(label.strip(), TaskOutput())
            if stream == "stderr":
                task.stderr.append(rest)
            elif rest.startswith(NODE_MARKER):
                task.node = rest.split(maxsplit=1)[1].strip()
            elif rest.startswith(EXIT_MARKER):
                task.exit_code = int(rest.split()[1])
            elif rest.startswith(MORE):  # the probe's long line, cut in pieces by the runner
                task.partial += rest[1:]
            elif rest.startswith(LAST):
                task.stdout.append(task.partial + rest[1:])
                task.partial = ""
    return {task.node: task for task in tasks.values() if task.node}


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
            return {n: self._failed(n, call.name, ErrorKind.UNREACHABLE, check,
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
            return {n: self._failed(n, call.name, ErrorKind.UNREACHABLE,
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
            elif errors.no_resources:
                kind, message = ErrorKind.UNREACHABLE, (
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
