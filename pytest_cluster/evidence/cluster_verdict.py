"""The cluster's verdict: the failed checks of several nodes at once (cluster_failures,
each with where it ran), those of them that reject the cluster (decisive), the run's
verdict (ACCEPTED, REJECTED, INCOMPLETE) and, for an INCOMPLETE one, why (incomplete_why:
stopped, a soak's round cut short, nodes not judged). verdict.py decides each node's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from pytest_cluster.evidence.blame import (
    CONTROLLER_SIDE,
    NO_ANSWER_HOST,
    NO_CULPRIT,
    NOT_ESTABLISHED,
    clean_message,
    culprits,
)
from pytest_cluster.evidence.sinks.results import (
    COMPLETE,
    PARTIAL,
    ResultLine,
    SoakEnd,
    clause_of,
    outcome,
)
from pytest_cluster.evidence.verdict import (
    ACCEPTED,
    NO_NODE_ANSWERED,
    REJECTED,
    UNREACHABLE,
    NodeVerdict,
)
from pytest_cluster.units import format_size


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def where_of(record: ResultLine) -> str:
    """Where a check about several nodes ran, and what tells it apart from the clause's
    other checks: the nodes it spanned (their count, when there are several), then its
    collective, payload, rail and round where the record has them: '64 nodes
    (sim-gpu-01..sim-gpu-64), all_reduce 4 GiB'."""
    size = format_size(float(record["payload"])) if _is_number(record.get("payload")) else ""
    what = " ".join(str(part) for part in (record.get("collective"), size) if part)
    parts = [str(record.get("node")), *([what] if what else [])]
    for key in ("rail", "round"):
        value = record.get(key)
        if value not in (None, ""):
            parts.append(f"{key} {value}")
    return ", ".join(parts)


def _case_params(record: ResultLine) -> str:
    """The case's parameters as its id shows them ('all_reduce-4GiB-64nodes'), or ''."""
    case = str(record.get("case") or record.get("nodeid") or "")
    return case[case.index("[") + 1:-1] if case.endswith("]") and "[" in case else ""


def cluster_failures(records: Iterable[ResultLine],
                     nodes: Sequence[str]) -> list[dict[str, str]]:
    """Failed checks about several nodes at once (or the whole cluster), each with where it
    ran (where_of); two that would still read alike also name their case's parameters."""
    names = set(nodes)
    failed = [r for r in records if (str(r.get("node")) not in names
                                     or r.get("error_kind") in NO_CULPRIT)
              and outcome(r) in ("failed", "error")]
    found = [{"clause": clause_of(r), "where": where_of(r),
              "message": clean_message(str(r.get("message", ""))),
              "kind": str(r.get("error_kind") or "failed"),
              **({"culprits": str(r["culprits"])} if culprits(r) else {})} for r in failed]
    alike = Counter((f["clause"], f["where"]) for f in found)
    for failure, record in zip(found, failed, strict=True):
        params = _case_params(record)
        if alike[(failure["clause"], failure["where"])] > 1 and params:
            failure["where"] += f" [{params}]"
    return found


def unmade(verdicts: Iterable[NodeVerdict]) -> frozenset[str]:
    """The kinds of cluster failures that are no failure of the cluster: not established
    (NOT_ESTABLISHED: a node did not answer; its own verdict says why), not made for a
    fault of this machine's (CONTROLLER_SIDE), and, where no node answered (a node's
    controller_fault says so), not made because its nodes did not answer."""
    silent = any(v.controller_fault.startswith(NO_NODE_ANSWERED) for v in verdicts)
    return NOT_ESTABLISHED | CONTROLLER_SIDE | (NO_ANSWER_HOST if silent else frozenset())


def decisive(failures: Iterable[dict[str, str]],
             verdicts: Iterable[NodeVerdict] = ()) -> list[dict[str, str]]:
    """Cluster failures that reject the cluster: not those of a kind `unmade` says."""
    kinds = unmade(verdicts)
    return [f for f in failures if f.get("kind") not in kinds]


#: The cluster's verdict when some checks did not run (the nodes' are NOT CHECKED).
INCOMPLETE = "INCOMPLETE"


def cluster_verdict(status: str | None, verdicts: Sequence[NodeVerdict],
                    cluster_failed: int) -> str:
    """The whole run's verdict: REJECTED when a node was rejected or unreachable or a
    cluster check failed (`cluster_failed`: the decisive ones); ACCEPTED when every node
    was and every selected check ran (`status`: the end record's, complete or partial: a
    selection's, `-m sanity`, judged at its level); INCOMPLETE otherwise."""
    if any(v.verdict in (REJECTED, UNREACHABLE) for v in verdicts) or cluster_failed:
        return REJECTED
    if status not in (COMPLETE, PARTIAL) or any(v.verdict != ACCEPTED for v in verdicts):
        return INCOMPLETE
    return ACCEPTED


#: Why a run is INCOMPLETE where it stopped before every selected check ran, and where a
#: node was left NOT CHECKED (incomplete_why).
STOPPED, NOT_ALL_JUDGED = ("the run was stopped before every selected check ran",
                           "not every node was judged")


def incomplete_why(status: str | None, not_checked: int, soak: SoakEnd | None = None) -> str:
    """Why a run's verdict is INCOMPLETE, as true of the run: it was stopped before every
    selected check ran (`status` not complete or partial; a soak (its end record's `soak`):
    in which round), and/or `not_checked` nodes were not judged."""
    parts = []
    if status not in (COMPLETE, PARTIAL):
        parts.append(STOPPED if soak is None else soak_stopped(soak))
    if not_checked:
        parts.append(NOT_ALL_JUDGED)
    return "; ".join(parts) or NOT_ALL_JUDGED


def soak_stopped(soak: SoakEnd) -> str:
    """How a soak stopped: 'the soak was stopped: round 2 of 4 not finished' (its last
    round cut short), 'the soak was stopped after round 3' (between rounds, or as the next
    round started), 'the soak stopped after round 1 of 4: round 2 left no results (exit
    status 4)' (a round that could not start)."""
    last, of = soak["rounds"], soak.get("max_rounds")
    rounds = f"round {last}" + (f" of {of}" if of else "")
    if soak.get("stopped"):
        after = f" after {rounds}" if last else ""
        return f"the soak stopped{after}: {soak.get('stopped')}"
    if soak["rounds_finished"] < last:
        return f"the soak was stopped: {rounds} not finished"
    return f"the soak was stopped after {rounds}"
