"""What a provider does with the nodes not accepted: the SLURM line that drains a
rejected or unreachable node and the Kubernetes line that taints it (printed, never run),
each one shell command with its reason cut at a clause; a comment where the node is no
real one (a simulated cluster). A drain reason starts with the fault code of the node's
first failure, `<CODE> pytest-cluster <verdict>: <reason>`, so `sinfo -R` groups the
drained nodes by what is wrong with them."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from pytest_cluster.contract.declaration import CODE
from pytest_cluster.evidence.verdict.nodes import REJECTED, UNREACHABLE, NodeVerdict


def to_drain(verdicts: Iterable[NodeVerdict]) -> list[NodeVerdict]:
    """The nodes a provider takes out of service: rejected and unreachable."""
    return [v for v in verdicts if v.verdict in (REJECTED, UNREACHABLE)]


#: The longest drain reason written (SLURM shows a node's reason in one line of sinfo).
MAX_DRAIN_REASON = 200


def cut_reason(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: a list of clauses ('3 clause(s) failed: a,
    b, c') cut at a clause, saying how many more ('a, and 2 more'); other text cut at a
    word, with '...'. Never a name cut in the middle."""
    if len(text) <= limit:
        return text
    head, sep, listed = text.partition(": ")
    items = listed.split(", ") if sep else []
    # one pass: the clauses that fit with ', and N more' after them; each clause kept
    # adds at least two characters and takes at most one from N, so the first that does
    # not fit ends it, and one list is joined (not one per count tried: 150,000 clauses)
    kept, length = 0, len(head) + len(sep) - 2
    for keep, item in enumerate(items[:-1], 1):
        length += len(item) + 2
        if length + len(f", and {len(items) - keep} more") > limit:
            break
        kept = keep
    if kept:
        return f"{head}{sep}{', '.join(items[:kept])}, and {len(items) - kept} more"
    cut = text[:max(limit - 3, 0)]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut) + "..."


def drain_command(verdict: NodeVerdict) -> list[str]:
    """The scontrol line that drains a rejected or unreachable node (printed, never run);
    its reason, `<CODE> pytest-cluster <verdict>: <why>` (the code of its first failure,
    where it has one: `fault_code`), cut at a clause (`cut_reason`) to MAX_DRAIN_REASON
    characters."""
    code = fault_code(verdict.code)
    prefix = f"{code + ' ' if code else ''}pytest-cluster {verdict.verdict.lower()}: "
    reason = prefix + cut_reason(one_line(verdict.reason), MAX_DRAIN_REASON - len(prefix))
    return ["scontrol", "update", f"NodeName={verdict.node}", "State=DRAIN",
            f"Reason={reason}"]


def fault_code(code: str) -> str:
    """`code` where it is a fault code (`PC-GPU-ROWREMAP`), else '' (a verdict.json from
    elsewhere may say anything there: it never reaches a drain line)."""
    return code if CODE.fullmatch(code) and len(code) <= MAX_CODE else ""


#: The longest fault code a drain reason starts with (ours are under 40 characters).
MAX_CODE = 60


def one_line(text: str) -> str:
    """`text` with every character that is not printable (a newline, a tab, ESC, a bidi
    override) a space: a drain line stays one line, so its comment mark covers all of it
    and a shell reads it as the one command it is."""
    return text if text.isprintable() else "".join(c if c.isprintable() else " "
                                                   for c in text)


def drain_line(verdict: NodeVerdict, not_a_node: str | None = None) -> str:
    """The drain line as a shell command; where the cluster's nodes are no SLURM nodes (a
    simulated cluster; this machine standing for every node), a shell comment saying
    why, so a pipeline that runs these lines cannot drain a real node of that name."""
    line = shlex.join(drain_command(verdict))
    return f"# {not_a_node}: {line}" if not_a_node else line


#: The Kubernetes taint a node not accepted gets: its key, and the effect.
TAINT_KEY = "pytest-cluster/verdict"


def taint_command(verdict: NodeVerdict) -> list[str]:
    """The kubectl line that keeps new pods off a rejected or unreachable node (printed,
    never run): `pytest-cluster/verdict=rejected:NoSchedule`."""
    return ["kubectl", "taint", "nodes", verdict.node,
            f"{TAINT_KEY}={verdict.verdict.lower()}:NoSchedule", "--overwrite"]


def taint_line(verdict: NodeVerdict, not_a_node: str | None = None) -> str:
    """The taint line as a shell command; a comment where the node is not a real one."""
    line = shlex.join(taint_command(verdict))
    return f"# {not_a_node}: {line}" if not_a_node else line
