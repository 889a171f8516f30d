"""What SLURM says of the nodes before a step: sinfo's state of each node and squeue's jobs
that hold it, read into who may run now, who is waited for, and who fails at once with
SLURM's own words (see launchers/slurm.py). Pure functions of the commands' text."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_cluster.errors import UnitError
from pytest_cluster.hostlist import expand_hostlist
from pytest_cluster.launchers.result import ErrorKind

#: srun --immediate for idle nodes: SLURM starts a job on idle nodes in well under a second.
IMMEDIATE_S = 10
#: ... for nodes still completing a step of ours: SLURM frees them within its MessageTimeout
#: (10 s by default; 11 s measured after an aborted launch).
SETTLE_S = 30
#: Job names of our own steps.
JOB_PREFIX = "pytest-cluster-"

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
            check.failed[node] = (ErrorKind.CONTROLLER, (
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
