"""What NCCL's RAS said of a hung job, as its ranks reported it: the words a hang's message
ends with ("NCCL RAS: rank 17 (gpu-003, GPU 1) DEAD; ...") and the nodes it singles out.

A rank past its bound asks the RAS service on its own node (probes/_lib/nccl_ras.py) and
puts the answer into its hang line (`ras`). That answer is a claim by another node's
process, read as one: a rank is placed on its node by its number (ranks are node-major),
only in a communicator of the whole job; a rank RAS calls dead that reported for itself
(its own hang line or result) is alive, and the claim is dropped, saying so. The nodes
of the dead ranks left are the hang's culprits, unless they are every node of the job (a
fault every node shares singles none out). Missing (INCOMPLETE) ranks and operation
counts that differ (a MISMATCH) are said, never blamed: RAS's own documentation calls
both transient while a job runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_cluster.launchers.jobs import RankResult

#: The most ranks a message names of each kind.
MAX_NAMED = 8


@dataclass(frozen=True)
class RasFinding:
    """What the message says of RAS's answer, the nodes it blames, and the answer (for
    the evidence)."""

    text: str
    culprits: tuple[str, ...] = ()
    report: dict[str, object] = field(default_factory=dict)


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _refs(value: object) -> list[Mapping[str, Any]]:
    """The rank records of a report's list (a node's answer: only those with a number)."""
    if not isinstance(value, list):
        return []
    return [v for v in value[:256] if isinstance(v, dict) and _whole(v.get("rank")) is not None]


def _text(value: object, length: int = 60) -> str:
    return value[:length] if isinstance(value, str) else ""


@dataclass(frozen=True)
class _Job:
    nodes: tuple[str, ...]
    ranks_per_node: int
    reported: frozenset[int]  # ranks that printed a line of their own

    @property
    def world(self) -> int:
        return len(self.nodes) * self.ranks_per_node

    def node_of(self, ref: Mapping[str, Any]) -> str | None:
        """The node of a rank RAS named, where its number is a rank of the whole job."""
        rank, size = int(ref["rank"]), _whole(ref.get("size"))
        if size not in (None, self.world) or not 0 <= rank < self.world:
            return None
        return self.nodes[rank // max(self.ranks_per_node, 1)]

    def name(self, ref: Mapping[str, Any]) -> str:
        """'rank 17 (gpu-003, GPU 1)', or with RAS's host where the node is not known."""
        node = self.node_of(ref)
        where = [node or (f"host {_text(ref.get('host'))}" if _text(ref.get("host")) else "")]
        gpu = _text(ref.get("gpu"), 20)
        if gpu and gpu != "None":
            where.append(f"GPU {gpu}")
        inside = ", ".join(w for w in where if w)
        return f"rank {ref['rank']}" + (f" ({inside})" if inside else "")


def _listed(names: list[str], what: str) -> str:
    shown = ", ".join(names[:MAX_NAMED])
    more = f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
    return f"{shown}{more} {what}"


def _mismatches(report: Mapping[str, Any]) -> list[str]:
    found = []
    entries = report.get("mismatched")
    for entry in entries[:MAX_NAMED] if isinstance(entries, list) else []:
        groups = entry.get("groups") if isinstance(entry, dict) else None
        if not isinstance(groups, list):
            continue
        parts = []
        for group in groups[:4]:
            if not isinstance(group, dict) or _whole(group.get("count")) is None:
                continue
            ranks = [r for r in group.get("ranks") or [] if _whole(r) is not None] \
                if isinstance(group.get("ranks"), list) else []
            count = _whole(group.get("ranks_count")) or len(ranks)
            who = (f"rank {ranks[0]}" if count == 1 and ranks else
                   f"{count} ranks" + (f" ({', '.join(map(str, ranks[:MAX_NAMED]))})"
                                       if ranks and count <= MAX_NAMED else ""))
            parts.append(f"{who} at {group['count']}")
        if parts:
            found.append(f"{_text(entry.get('collective'), 40) or 'a collective'} operation "
                         f"counts differ: {', '.join(parts)}")
    return found


def read(report: Mapping[str, Any], job: _Job) -> RasFinding:
    """One rank's report as the message's words and the nodes it blames."""
    if report.get("available") is not True:
        why = _text(report.get("reason"), 200) or "no reason given"
        return RasFinding(f"NCCL RAS not available: {why}", report=dict(report))
    parts: list[str] = []
    dead = _refs(report.get("dead"))
    alive = [ref for ref in dead if int(ref["rank"]) in job.reported
             and job.node_of(ref) is not None]
    dead = [ref for ref in dead if ref not in alive]
    if dead:
        parts.append(_listed([job.name(ref) for ref in dead], "DEAD"))
    if alive:
        parts.append(_listed([job.name(ref) for ref in alive], "called dead, but reported "
                             "for itself: the claim is dropped"))
    processes = report.get("dead_processes")
    if not dead and isinstance(processes, list) and processes:
        parts.append(_listed([f"process {_whole(p.get('pid'))} on {_text(p.get('host'))} "
                              f"(GPU {_text(p.get('gpus'), 20)})"
                              for p in processes[:64] if isinstance(p, dict)], "DEAD"))
    missing = _refs(report.get("missing"))
    if missing:
        parts.append(_listed([job.name(ref) for ref in missing],
                             "missing (INCOMPLETE: no data from it)"))
    parts += _mismatches(report)
    if not parts:
        parts.append("no rank dead, missing or behind")
    blamed = sorted({node for ref in dead if (node := job.node_of(ref)) is not None},
                    key=job.nodes.index)
    if set(blamed) >= set(job.nodes):
        blamed = []  # every node of the job: a fault they share, no node singled out
    return RasFinding("NCCL RAS: " + "; ".join(parts), tuple(blamed), dict(report))


def finding(ranks: Sequence[RankResult], nodes: Sequence[str],
            ranks_per_node: int) -> RasFinding | None:
    """What RAS said of the job, from the first rank whose hang line carries an answer RAS
    gave (else the first that says why there is none), with where it was asked; None when
    no rank's line carries one."""
    job = _Job(tuple(nodes), ranks_per_node,
               frozenset(r.rank for r in ranks if r.data is not None))
    asked = [(r, r.data["ras"]) for r in sorted(ranks, key=lambda r: r.rank)
             if r.data is not None and isinstance(r.data.get("ras"), dict)]
    if not asked:
        return None
    rank, report = next(((r, rep) for r, rep in asked if rep.get("available") is True),
                        asked[0])
    found = read(report, job)
    where = f" (asked on {rank.node} by rank {rank.rank})"
    return RasFinding(found.text + where, found.culprits,
                      {**found.report, "asked_by": {"node": rank.node, "rank": rank.rank}})
