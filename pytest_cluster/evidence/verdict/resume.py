"""What a gate does in SLURM with the nodes it judged, knowing how SLURM holds each: it reads
every node's state and drain reason once (sinfo, one call for a run's nodes), then

- puts back (State=RESUME) a node this run accepted whose drain is ours: its reason is
  pytest-cluster's (`OURS`: `pytest-cluster ...`, or a fault code and that);
- leaves a node drained for any other reason (an admin's 'maintenance') as it is, and says
  so: never resumed, and its reason never overwritten by a failure of ours;
- drains a failed node with its new reason (one drained by us already gets this run's).

A node not drained is left be (nothing to resume). Pure functions of the commands' text;
the gate (cli.py) runs them and says each outcome in one line.

Only the standard library is imported here (a prolog's budget is seconds).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_cluster.errors import log_line
from pytest_cluster.evidence.verdict.drain import drain_command
from pytest_cluster.evidence.verdict.nodes import ERROR, FAIL
from pytest_cluster.hostlist import compress_hostlist

if TYPE_CHECKING:
    from pytest_cluster.evidence.verdict.gate import Decision

#: A drain reason of ours: pytest-cluster's, with or without a fault code before it
#: (`PC-GPU-ROWREMAP pytest-cluster rejected: ...`).
OURS = re.compile(r"^(PC-[A-Z0-9-]+ )?pytest-cluster ")
#: sinfo's line per node (and partition): its name, state (%T) and reason last (%E: it may
#: hold spaces and '|'), as launchers/slurm_nodes.py reads them before a step.
STATE_FORMAT = "%N|%T|%E"
#: The most characters of node names one sinfo is asked about: Linux takes an argument of
#: at most 128 KiB (MAX_ARG_STRLEN), and 65,536 names of 12 characters are 800 kB.
MAX_NAMES_CHARS = 60_000
#: The most of sinfo's output read for one call (a line per node and partition).
MAX_STATE_BYTES = 64 * 2**20
#: The most seconds a sinfo or scontrol call may take.
SLURM_TIMEOUT_S = 30
#: The most characters of a reason (someone else's, or SLURM's message) a line says.
MAX_SAID = 300


def is_ours(reason: str) -> bool:
    """Whether a drain reason is pytest-cluster's (`OURS`)."""
    return OURS.match(reason) is not None


#: A state's words (sinfo's %T, '+'-joined, flag characters after) that say an admin
#: marked the node failing (State=FAIL: drained, and expected to fail): held out as a
#: drain is, never resumed by a gate.
FAILING = frozenset({"fail", "failing", "failg"})


@dataclass(frozen=True)
class NodeState:
    """A node as SLURM holds it: its state (sinfo's %T, lower case: 'drained',
    'draining', 'idle', 'mixed+drain', 'drained*', 'failing') and drain reason ('' where
    none)."""

    state: str
    reason: str

    @property
    def words(self) -> frozenset[str]:
        """The state's words, its flag characters left out ('drained*' -> {'drained'})."""
        return frozenset(word.rstrip("*~#!%$@^-+") for word in self.state.split("+"))

    @property
    def failing(self) -> bool:
        return bool(self.words & FAILING)

    @property
    def drained(self) -> bool:
        """Taken out of service by someone: drained, draining, or marked failing."""
        return self.failing or any(word.startswith(("drain", "drng")) for word in self.words)

    @property
    def ours(self) -> bool:
        """Drained by pytest-cluster, and so for a gate to put back: a drain (never an
        admin's State=FAIL) with our reason."""
        return not self.failing and is_ours(self.reason)


def states_commands(names: Sequence[str]) -> list[list[str]]:
    """The sinfo calls that read the state and reason of `names`: one for up to
    MAX_NAMES_CHARS of names (a run of 1,000 nodes: one call), each as a hostlist
    (`gpu-[001-999]`); every partition (--all), a line per node (--Node)."""
    batches: list[list[str]] = []
    size = MAX_NAMES_CHARS
    for name in names:
        if size + len(name) + 1 > MAX_NAMES_CHARS:
            batches.append([])
            size = 0
        batches[-1].append(name)
        size += len(name) + 1
    return [["sinfo", "--noheader", "--all", "--Node", f"--nodes={compress_hostlist(batch)}",
             f"--format={STATE_FORMAT}"] for batch in batches]


def parse_states(text: str) -> dict[str, NodeState | None]:
    """Node (in lower case: a host name is one host in any case) -> its state, from
    states_commands' output; a node in several partitions is listed once per partition,
    alike. A node whose lines disagree (a reason holding a newline and a line's shape)
    is None: what SLURM holds for it is not known. Lines of another shape are left out."""
    found: dict[str, NodeState | None] = {}
    for line in text.splitlines():
        parts = line.split("|", 2)
        if len(parts) != 3 or not parts[0].strip() or not parts[1].strip():
            continue
        name = parts[0].strip().lower()
        reason = parts[2].strip()
        state = NodeState(parts[1].strip().lower(),
                          "" if reason.lower() in ("none", "(null)") else reason)
        found[name] = state if found.get(name, state) == state else None
    return found


def looked_up(decision: Decision, drain: bool, resume: bool) -> list[str]:
    """The nodes whose state the gate reads: with `drain`, a FAIL's failed nodes; with
    `resume`, the nodes a PASS or FAIL accepted; none of a simulated run (no SLURM node)
    nor of an ERROR (the tool could not judge: nothing is done)."""
    if decision.simulated or decision.outcome == ERROR:
        return []
    failed = [n.node for n in decision.failed] if drain and decision.outcome == FAIL else []
    return failed + (list(decision.accepted) if resume else [])


def resume_command(node: str) -> list[str]:
    """The scontrol line that puts a node back into service."""
    return ["scontrol", "update", f"NodeName={node}", "State=RESUME"]


@dataclass(frozen=True)
class Step:
    """One thing the gate does with a node in SLURM: a command to run (`verb`: 'drain' or
    'resume'; `line` then says why, after it), or only a line to say."""

    line: str
    command: tuple[str, ...] = ()
    verb: str = ""


def said(text: str) -> str:
    """Text from elsewhere (someone's reason) as part of one line: escaped, bounded."""
    return log_line(text, MAX_SAID)


def steps(decision: Decision, states: Mapping[str, NodeState | None] | None, drain: bool,
          resume: bool) -> list[Step]:
    """What the gate does, from its decision and the nodes' states (parse_states; None:
    they could not be read). With `drain`, each failed node is drained with its reason,
    but one drained by someone else keeps theirs (said); with `resume`, each accepted node
    drained by us is resumed, one drained by someone else stays (said), one sinfo does not
    list or whose lines disagree is not resumed (said), one not drained is left be. Without
    the states, the failed nodes are drained as always and nothing is resumed."""
    known = states or {}
    done: list[Step] = []
    for node in (decision.failed if drain and node_commands(decision) else ()):
        command = drain_command(node)
        state = known.get(node.node.lower())
        if state is not None and state.drained and not state.ours:
            failure = command[-1].removeprefix("Reason=")
            done.append(Step(f"kept drained {node.node}: drained by someone else: "
                             f"{said(state.reason or state.state)}; its failure: "
                             f"{said(failure)}"))
        else:
            done.append(Step("", tuple(command), "drain"))
    if not resume or states is None or not node_commands(decision):
        return done
    unlisted = []
    for name in decision.accepted:
        if name.lower() not in states:
            unlisted.append(name)
            continue
        state = states[name.lower()]
        if state is None:
            done.append(Step(f"not resumed {name}: sinfo's lines for it disagree, so its "
                             "state is not known"))
        elif state.drained and state.ours:
            done.append(Step(f"it passed; its drain was ours: {said(state.reason)}",
                             tuple(resume_command(name)), "resume"))
        elif state.drained:
            done.append(Step(f"not resumed {name}: drained by someone else: "
                             f"{said(state.reason or state.state)}"))
    if unlisted:
        done.append(Step(f"not resumed {said(compress_hostlist(unlisted))}: sinfo lists no "
                         "such node"))
    return done


def node_commands(decision: Decision) -> bool:
    """Whether the gate acts on SLURM's nodes for `decision`: not for an ERROR (the tool
    could not judge) nor for a simulated run (its nodes are no SLURM nodes)."""
    return decision.outcome != ERROR and not decision.simulated


def unread_line(why: str, draining: bool, resuming: bool) -> str:
    """The line that says the nodes' states could not be read, and what follows from it:
    nothing is resumed (whose drain it is is not known), failed nodes are drained as
    always (whatever their reason: a node that failed is never left in service for it)."""
    follows = [part for part, given in (
        ("no node is resumed", resuming),
        ("the failed nodes are drained whatever their drain reason", draining)) if given]
    return f"could not read the nodes' state in SLURM: {said(why)}" + \
        (f"; {', and '.join(follows)}" if follows else "")
