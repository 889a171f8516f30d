"""Interconnect clauses: collective bus bandwidth (nccl-tests' busbw) inside each node and
across node counts at the contract's payloads, a per-node network test from the
slow-node search, and (the stress level) a sustained all_reduce loop with every result
checked."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.model import Clause, InterconnectSpec, Rule
from pytest_cluster.contract.sections.busbw import (
    CollectiveRun,
    gbs,
    is_share,
    required_busbw,
)
from pytest_cluster.evidence.record.latency_map import MATRIX_UP_TO
from pytest_cluster.evidence.verdict.blame import TOOL_FAULT
from pytest_cluster.hostlist import compress_hostlist
from pytest_cluster.measure import plausible
from pytest_cluster.measure.network import collectives, latency, nccl_log, node_search
from pytest_cluster.measure.network.node_search import (
    COULD_NOT_DECIDE,
    FAILED,
    IMPLAUSIBLE,
    NOT_SEARCHED,
    SLOW,
    UNDECIDED,
)
from pytest_cluster.measure.network.placement import placement
from pytest_cluster.measure.reference import Reference, for_busbw
from pytest_cluster.run.contract_tests import checks
from pytest_cluster.units import format_size, size_id

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pytest_cluster.evidence.record.check import Evidence
    from pytest_cluster.measure.cluster import Cluster
    from pytest_cluster.measure.network.latency import LatencyRun
    from pytest_cluster.measure.network.placement import Placement

METHOD = ("torch.distributed {backend}, nccl-tests definitions: time = mean over ranks of "
          "{iterations} back-to-back collectives / {iterations} after {warmup} warm-up; "
          "algbw = bytes / time; busbw = algbw x {factor}")

#: The end of a failed job's message across nodes: where the node holding it back is named.
SEARCHED = "the node that holds it back is named by busbw[node_network] (pairs of nodes)"
NOT_SEARCHED_NOTE = ("the node that holds it back is not looked for (interconnect."
                     "node_network: false; true pairs the nodes to name it)")


def _spec(cluster: Cluster) -> InterconnectSpec:
    spec = cluster.spec.interconnect
    assert spec is not None, "the spec has no interconnect section"
    return spec


def _blame(evidence: Evidence, culprits: Sequence[str]) -> None:
    """A failed job's culprits (NCCL RAS's dead ranks' nodes, measure/nccl_ras.py): the
    case's failure fails them too (blame.culprits); none, no one."""
    if culprits:
        evidence.record(culprits=compress_hostlist(list(culprits)))


def _node_of_rank(run: CollectiveRun, rank: int) -> str | None:
    """The node a global rank ran on (node-major, as torchrun numbers them)."""
    index = rank // max(run.ranks_per_node, 1)
    return run.nodes[index] if 0 <= index < len(run.nodes) else None


def _slowest(run: CollectiveRun, rank: int | None) -> str:
    """'; slowest rank 5 (gpu5)' inside a node, '; slowest rank 12 (node2 gpu4)' across
    nodes: the rank whose loop took longest and where it ran (over nccl a rank's GPU is its
    local rank); '' when no rank took longer than the others."""
    if rank is None:
        return ""
    node = _node_of_rank(run, rank) if len(run.nodes) > 1 else None
    gpu = f"gpu{rank % max(run.ranks_per_node, 1)}" if run.backend == "nccl" else None
    where = " ".join(part for part in (node, gpu) if part)
    return f"; slowest rank {rank}" + (f" ({where})" if where else "")


def _references(cluster: Cluster, scope: str, collective: str) -> tuple[Reference, ...]:
    """Published busbw figures for this scope: by the GPU model the spec names (inside a
    node), by its NICs' rate (between nodes)."""
    spec = _spec(cluster)
    gpus = cluster.spec.gpus
    nics = spec.inter_node
    return for_busbw(scope, collective, spec.backend,
                     str(gpus.model) if gpus is not None else None,
                     nics.rate_bytes_per_s * 8 if nics is not None else None,
                     nics.count if nics is not None else 0)


def _check(evidence: Evidence, spec: InterconnectSpec, run: CollectiveRun, payload: int,
           label: str, node_count: int, references: tuple[Reference, ...] = ()) -> None:
    evidence.saw(run)
    scope = "intra_node" if node_count == 1 else "inter_node"
    clause, theory = required_busbw(spec, node_count, scope)
    evidence.record(collective=run.collective, payload=payload, node_count=node_count,
                    theoretical=theory.bytes_per_s / 1e9 if theory else None,
                    derivation=theory.derivation if theory else None,
                    transport=nccl_log.describe(run.details.get("transport") or {},
                                                node_count > 1) or None)
    raw: dict[str, Any] = {"nodes": compress_hostlist(run.nodes),
                           "ranks_per_node": run.ranks_per_node, "backend": run.backend,
                           "details": run.details,
                           "sweep": [[p.bytes, p.busbw] for p in run.points]}
    for p in run.points:  # JUnit keeps the sweep: one property per payload, in GB/s
        evidence.record(**{f"busbw_GBps[{size_id(p.bytes)}]": p.busbw / 1e9})
    what = f"{run.collective} {format_size(payload)}"  # the case's, in every message
    if not run.ok:
        _blame(evidence, run.culprits)
        evidence.cannot_measure(clause, f"{what}: {run.error}", raw=raw,
                                kind=TOOL_FAULT if run.crashed
                                else run.error_kind or "job_failed", node=label)
    if is_share(clause):  # still a share: no link rate to take it of
        evidence.cannot_measure(clause, f"{what}: no link rate in the spec to take the "
                                "share of", raw=raw, node=label)
    point = run.at(payload)
    if point is None:
        evidence.cannot_measure(clause, f"{what}: the payload was not measured", raw=raw,
                                node=label)
    low, median, high = point.spread
    raw.update(bytes=point.bytes, time_s=point.time_s, algbw=point.algbw,
               busbw_iterations=list(point.busbw_iterations), slowest_rank=point.slowest_rank,
               slowest_node=None if point.slowest_rank is None
               else _node_of_rank(run, point.slowest_rank),
               wrong=point.wrong)
    if point.wrong:
        evidence.cannot_measure(clause, f"{what}: {point.wrong} wrong value(s) in the "
                                "result: the collective is broken, its speed does not count",
                                raw=raw, kind="wrong_result", node=label)
    above = plausible.over_ceiling(point.busbw, theory.bytes_per_s,
                                   f"the theoretical {theory.derivation}") if theory else None
    if above and node_count == 1:  # what its links cannot carry: a claim, never a figure
        evidence.cannot_measure(clause, f"{what}: busbw {gbs(point.busbw)} is {above}",
                                raw=raw, kind="bad_output", node=label)
    if above:  # a job of several nodes: which rank's times made it is not singled out
        evidence.undecided(clause, f"{what}: busbw {gbs(point.busbw)} is "
                           f"{above.removesuffix(' (bad output of the node)')}: a rank's "
                           "times or the spec's link rate are wrong, and the job names no "
                           "node (the slow-node search's pairs do)", raw=raw, node=label)
    factor = "2(n-1)/n" if run.collective == "all_reduce" else "(n-1)/n"
    method = str(run.details.get("method") or METHOD.format(
        backend=run.backend, iterations=spec.iterations, warmup=spec.warmup, factor=factor))
    note = (f"{run.collective} {format_size(point.bytes)} over {len(run.nodes)} node(s) x "
            f"{run.ranks_per_node} rank(s); busbw over iterations {gbs(low)} min, "
            f"{gbs(median)} median, {gbs(high)} max{_slowest(run, point.slowest_rank)}")
    if theory is not None:
        note += f"; theoretical {theory.derivation}"
    over = _over(run, node_count)
    partial = f"{gbs(point.busbw)} {over}, so the {node_count}-node figure is not " \
        "established" if over else ""
    if over:
        note = f"{over}; {note}"
    if node_count > 1:  # a job's number names no node: where the node is looked for
        note += "; " + (SEARCHED if spec.node_network else NOT_SEARCHED_NOTE)
    evidence.check(clause, point.busbw, node=label, result=None, method=method, raw=raw,
                   note=note, references=references, partial=partial)


@checks("interconnect.busbw[intra_node]")
def test_collective_intra_node(cluster: Cluster, node: str, collective: str, payload: int,
                               evidence: Evidence) -> None:
    """All ranks (GPUs) of one node: the intra-node link (NVLink)."""
    spec = _spec(cluster)
    clause, _ = required_busbw(spec, 1, "intra_node")
    evidence.require(cluster.host(node), clause)  # a node that does not answer says so
    _check(evidence, spec, collectives.intra_node(cluster, node, collective), payload, node, 1,
           _references(cluster, "intra_node", collective))


@checks("interconnect.busbw[inter_node]")
def test_collective_inter_node(cluster: Cluster, node_count: int, collective: str,
                               payload: int, evidence: Evidence) -> None:
    """The first `node_count` nodes of the spec in one job: the network between nodes."""
    spec = _spec(cluster)
    run = collectives.inter_node(cluster, node_count, collective)
    _check(evidence, spec, run, payload, _label(cluster, node_count), node_count,
           _references(cluster, "inter_node", collective))


def _label(cluster: Cluster, node_count: int) -> str:
    """An inter-node case's name for its nodes: '4 nodes (n1..n4)'."""
    nodes = cluster.nodes[:node_count]
    return f"{node_count} nodes ({nodes[0]}..{nodes[-1]})"


def _over(run: CollectiveRun, node_count: int) -> str:
    """What a job that ran without some of the case's nodes (they did not answer) was
    measured over, naming them: 'measured over 3 of 4 nodes (n3 did not answer: why)';
    '' when it ran on them all."""
    left: dict[str, str] = run.details.get("left_out") or {}
    if not left:
        return ""
    first = next(iter(left))
    return (f"measured over {len(run.nodes)} of {node_count} nodes ({compress_hostlist(left)} "
            f"did not answer: {left[first]})")


def _node_list(run: CollectiveRun, ranges: str) -> list[str]:
    """The nodes of ranks '0-7,12', in rank order, each once."""
    ranks: list[int] = []
    for part in ranges.split(","):
        first, _, last = part.partition("-")
        ranks.extend(range(int(first), int(last or first) + 1))
    return list(dict.fromkeys(n for r in ranks if (n := _node_of_rank(run, r))))


def _nodes_of(run: CollectiveRun, ranges: str) -> str:
    """The nodes of ranks '0-7,12' as a hostlist."""
    return compress_hostlist(_node_list(run, ranges))


@checks("interconnect.transport")
def test_collective_transport(cluster: Cluster, node_count: int, collective: str,
                              evidence: Evidence) -> None:
    """What NCCL used in the inter-node job over the first `node_count` nodes, from every
    rank's log: the network, GPUDirect RDMA on the network channels and NVLS, against the
    contract's `transport`, whatever the job's busbw. A rank that used another is named
    with its node."""
    spec = _spec(cluster)
    promise = spec.transport
    assert promise is not None, "interconnect.transport is not in the contract"
    rule = Rule(declared("interconnect.transport").id, promise.line, promise.text)
    run = collectives.inter_node(cluster, node_count, collective)
    evidence.saw(run)
    label = _label(cluster, node_count)
    found: dict[str, Any] = run.details.get("transport") or {}
    raw = {"transport": found, "nccl_log_first_rank": run.details.get("nccl_log_first_rank")}
    if not run.ok:
        _blame(evidence, run.culprits)
        evidence.cannot_measure(rule, run.error, raw=raw,
                                kind=TOOL_FAULT if run.crashed
                                else run.error_kind or "job_failed", node=label)
    networks = found.get("inter_node") or {}
    silent = found.get("not_said") or networks.get("None")
    if silent or not networks:
        evidence.cannot_measure(rule, f"NCCL's log says nothing of its network on ranks "
                                f"{silent or 'all'} (NCCL_DEBUG or NCCL_DEBUG_FILE set by "
                                "the environment?)", raw=raw, node=label)
    problems, culprits = [], []
    wanted = {"inter_node": promise.inter_node,
              "gdr": None if promise.gdr is None else str(promise.gdr).lower(),
              "nvls": None if promise.nvls is None else str(promise.nvls).lower()}
    for key, value in wanted.items():
        if value is None:
            continue
        # a rank with no network channel says nothing of GPUDirect ("none"): not counted
        other = {seen: ranks for seen, ranks in found.get(key, {}).items()
                 if seen != value and not (key == "gdr" and seen == "none")}
        problems += [f"{key} {seen} on ranks {ranks} ({_nodes_of(run, ranks)})"
                     for seen, ranks in other.items()]
        culprits += [node for ranks in other.values() for node in _node_list(run, ranks)]
    if culprits:  # the nodes whose ranks used another transport fail with this clause
        evidence.record(culprits=compress_hostlist(dict.fromkeys(culprits)))
    evidence.check_rule(rule, not problems, nccl_log.describe(found), result=None,
                        problem=f"{rule.text} promised; " + "; ".join(problems),
                        method="NCCL_DEBUG=INFO (INIT,NET) on every rank: 'Using network', "
                               "'via NET/<net>/<dev>[/GDRDMA]', 'NVLS multicast support'",
                        raw=raw, node=label)


@checks("interconnect.busbw[node_network]")
def test_node_network(cluster: Cluster, node: str, evidence: Evidence) -> None:
    """This node's share of the slow-node search: all_reduce with known-good partners.
    A node is failed as slow only against a known-good partner; when the search could not
    decide, the test says so (error kind `undecided`: a failure of the fabric, not of
    this node)."""
    spec = _spec(cluster)
    clause, theory = required_busbw(spec, 2, "node_network")
    evidence.require(cluster.host(node), clause)  # a node that does not answer says so
    search = node_search.run(cluster)
    verdict = search.verdicts.get(node)
    # the search is recorded once per run (probes/<id>.json); each node's case keeps its
    # own verdict and refers to the search by id
    search_id = node_search.document_id(cluster)
    raw: dict[str, Any] = {
        "search": {"id": search_id, "file": f"probes/{search_id}.json",
                   "rounds": len(search.rounds), "bar_bytes_per_s": search.bar_bytes_per_s,
                   "not_searched": len(search.not_searched)},
        "verdict": asdict(verdict) if verdict is not None else None,
        "payload": spec.search_payload}
    evidence.record(collective="all_reduce", payload=spec.search_payload, node_count=2,
                    theoretical=theory.bytes_per_s / 1e9 if theory else None,
                    derivation=theory.derivation if theory else None)
    evidence.saw(search)
    left_out = (f"; left out of the search: {', '.join(search.not_searched)} (probes "
                "failed)") if search.not_searched else ""
    if node in search.crashed:  # the job that decided it crashed in our code
        evidence.cannot_measure(clause, f"the slow-node search's all_reduce: "
                                f"{search.crashed[node]}", raw=raw, kind=TOOL_FAULT)
    if verdict is None or verdict.status == NOT_SEARCHED:
        why = verdict.why if verdict is not None else search.note or "not in the search"
        evidence.cannot_measure(clause, f"not searched: {why}", raw=raw)
    if verdict.status == UNDECIDED:
        tried = (f"; below the bar with {', '.join(verdict.partners)}" if verdict.partners
                 and not math.isnan(verdict.busbw) else "")
        evidence.undecided(clause, f"{COULD_NOT_DECIDE}: {verdict.why}{tried}{left_out}",
                           raw=raw)
    if verdict.status == IMPLAUSIBLE:  # a figure its links cannot carry: a claim
        evidence.cannot_measure(clause, f"{verdict.why} (round {verdict.round} of the "
                                "search)", raw=raw, kind="bad_output")
    if verdict.status == FAILED or math.isnan(verdict.busbw):
        evidence.cannot_measure(
            clause, f"{verdict.why or 'the all_reduce failed'} (round {verdict.round}"
            f" of the search)", raw=raw, kind="job_failed")
    partners = ", ".join(verdict.partners)
    why = (f"all_reduce {format_size(spec.search_payload)} with {partners} (round "
           f"{verdict.round} of {len(search.rounds)} of the slow-node search)")
    if verdict.status == SLOW:
        why += (f"; {partners} reached the bar with other nodes, so this node is the slow "
                f"one{left_out}")
    if verdict.bounded_by:  # the group's figure, not this node's alone (the baseline's)
        evidence.record(bounded_by=compress_hostlist(verdict.bounded_by))
        why += (f"; the group's figure: {', '.join(verdict.bounded_by)} not known good "
                "then, it bounds it as much as this node")
    evidence.check(clause, verdict.busbw, result=None, raw=raw, note=why,
                   references=_references(cluster, "inter_node", "all_reduce"),
                   method="pairs, then suspects with known-good nodes (nccl-tests busbw)")


@checks("interconnect.stress_loop")
def test_collective_stress(cluster: Cluster, evidence: Evidence) -> None:
    """The stress level: all_reduce over every node of the cluster, back to back for
    interconnect.stress_time, every element of every result checked."""
    spec = _spec(cluster)
    rule = Rule("interconnect.stress_loop", 0, declared("interconnect.stress_loop").text)
    loop = collectives.stress(cluster)
    evidence.saw(loop)
    label = f"{len(loop.nodes)} node(s) ({compress_hostlist(loop.nodes)})"
    raw: dict[str, Any] = {"nodes": compress_hostlist(loop.nodes),
                           "ranks_per_node": loop.ranks_per_node, "backend": loop.backend,
                           "bytes": loop.bytes, "iterations": loop.iterations,
                           "seconds": loop.seconds, "busbw_windows": list(loop.busbw_windows),
                           "wrong": loop.wrong, "wrong_iterations": loop.wrong_iterations,
                           "first_wrong": loop.first_wrong,
                           "nccl_ras": loop.details.get("nccl_ras")}
    if loop.error:
        _blame(evidence, loop.culprits)
        evidence.cannot_measure(rule, loop.error, raw=raw,
                                kind=loop.error_kind or "job_failed", node=label)
    speeds = sorted(loop.busbw_windows)
    busbw = (f"; busbw {gbs(speeds[0])} min, {gbs(speeds[len(speeds) // 2])} median, "
             f"{gbs(speeds[-1])} max over the loop") if speeds else ""
    shown = (f"{loop.iterations} all_reduce of {format_size(loop.bytes)} x "
             f"{loop.ranks_per_node} rank(s) per node in {loop.seconds:.0f} s, "
             f"{loop.wrong_iterations} with a wrong result{busbw}")
    evidence.check_rule(rule, loop.wrong == 0, shown, result=None, node=label,
                        problem=f"{loop.wrong_iterations} of {loop.iterations} all_reduce "
                                f"results wrong ({loop.wrong} element(s)), the first on "
                                f"{loop.first_wrong}: the collective corrupts data",
                        method=f"torch.distributed {spec.backend} all_reduce of "
                               f"{format_size(loop.bytes)} (search_payload), each iteration "
                               "on rank-dependent values checked in full", raw=raw)


#: Why a latency case with no pair without its node blames none.
TWO_NODES = ("nothing singles out either node of the one pair measured (no pair without "
             "it to compare with)")
LATENCY_METHOD = ("ping-pong on torch.distributed {backend} send/recv, one rank per node, "
                  "in rounds of disjoint pairs (round-robin tournament: {rounds} of "
                  "{of_rounds} round(s)); per pair and size {warmup} warm-up then "
                  "{iterations} timed round trips; one-way = median round trip / 2; a "
                  "node's figure is its median over its peers, leaving out those that "
                  "stand out (colocation_factor x the median between the other nodes)")


def _latency(cluster: Cluster, node: str, evidence: Evidence,
             clause: Clause | Rule) -> tuple[LatencyRun, Placement, dict[str, Any], str]:
    """The ping-pong run, this node's place in it and the case's raw (its row at every
    size; the whole matrix at latency_size on a small cluster); fails the case when the
    run or this node was not measured."""
    spec = _spec(cluster)
    evidence.require(cluster.host(node), clause)  # a node that does not answer says so
    run = latency.run(cluster)
    evidence.saw(run)
    size = spec.latency_size
    raw: dict[str, Any] = {
        "run": {"id": latency.document_id(cluster),
                "file": f"probes/{latency.document_id(cluster)}.json",
                "nodes": compress_hostlist(run.nodes), "rounds": len(run.rounds),
                "of_rounds": run.of_rounds, "backend": run.backend,
                "retested": compress_hostlist(run.retested) if run.retested else None,
                "left_out": dict(run.left_out) or None,
                "implausible": dict(run.implausible) or None},
        "size": size,
        "peers_us": {str(s): {peer: round(t * 1e6, 3) for peer, t in
                              sorted(run.peers(node, s).items())} for s in run.sizes}}
    if len(run.nodes) <= MATRIX_UP_TO:
        raw["matrix_us"] = {"nodes": list(run.nodes), "size": size, "one_way": run.matrix(size)}
    if node in run.left_out:  # it stopped answering during the ping-pong
        evidence.cannot_measure(clause, f"left out of the ping-pong: {run.left_out[node]}",
                                raw=raw, kind="unreachable", node=node)
    if node in run.implausible:  # its rank claimed what no wire gives
        evidence.cannot_measure(clause, f"its rank reported {run.implausible[node]}",
                                raw=raw, kind="bad_output", node=node)
    if run.error:
        why = f"the ping-pong failed: {run.error}"
        if run.error.startswith((f"{node}: ", f"{node} ")):  # its own part failed it
            evidence.cannot_measure(clause, why, raw=raw, kind="job_failed", node=node)
        evidence.undecided(clause, why, raw=raw, node=node)
    where = placement(run, node, size, spec.colocation_factor)
    if where is None:
        evidence.cannot_measure(clause, f"{node} met no peer at {format_size(size)} in the "
                                "ping-pong", raw=raw, node=node)
    raw.update(median_us=round(where.median_s * 1e6, 3),
               others_median_us=None if where.others_median_s is None
               else round(where.others_median_s * 1e6, 3),
               ratio=None if where.ratio is None else round(where.ratio, 3),
               own_us=round(where.own_s * 1e6, 3), far_peers=list(where.far_peers) or None,
               nearest=list(where.nearest), farthest=list(where.farthest))
    method = LATENCY_METHOD.format(backend=run.backend, rounds=len(run.rounds),
                                   of_rounds=run.of_rounds,
                                   warmup=run.details.get("warmup", "?"),
                                   iterations=run.details.get("iterations", "?"))
    return run, where, raw, method


def _left_out(run: LatencyRun) -> str:
    """'; left out of the ping-pong: n-6 (...)': the nodes measured without, or ''."""
    if not run.left_out:
        return ""
    whose = "its host probe" if len(run.left_out) == 1 else "their host probes"
    return f"; left out of the ping-pong: {compress_hostlist(run.left_out)} ({whose} did " \
           "not answer)"


@checks("interconnect.latency")
def test_latency(cluster: Cluster, node: str, evidence: Evidence) -> None:
    """This node's median one-way latency to its peers at latency_size (a small message),
    from the ping-pong between node pairs, leaving out the peers that stand out (far from
    every peer: their distance is theirs). With no pair without it (two nodes), a figure
    above the bound singles neither node out: undecided, no blame."""
    spec = _spec(cluster)
    clause = spec.latency
    assert clause is not None, "interconnect.latency is not in the contract"
    run, where, raw, method = _latency(cluster, node, evidence, clause)
    evidence.record(payload=spec.latency_size)
    note = f"{format_size(spec.latency_size)}: {where.own_text()}{_left_out(run)}"
    if where.ratio is None and not clause.requirement.holds(where.own_s):
        evidence.undecided(clause, f"{clause.requirement.show(where.own_s)} above "
                           f"{clause.requirement.text}, and {TWO_NODES}: {note}", raw=raw,
                           node=node)
    evidence.check(clause, where.own_s, node=node, result=None, method=method, raw=raw,
                   note=note)


@checks("interconnect.colocation")
def test_colocation(cluster: Cluster, node: str, evidence: Evidence) -> None:
    """This node is no farther from its peers than the rest: its median latency to its
    peers at most colocation_factor x the median between the other nodes (the pairs it
    is not in). A node on another spine or switch is slower to reach from every peer,
    while the others are near each other: the far node alone fails. With no pair without
    it (two nodes) nothing singles it out: undecided, no blame."""
    spec = _spec(cluster)
    rule = spec.colocation
    assert rule is not None, "interconnect.colocation is not in the contract"
    run, where, raw, method = _latency(cluster, node, evidence, rule)
    factor = spec.colocation_factor
    raw["factor"] = factor
    shown, left = f"{format_size(spec.latency_size)}: {where.text()}", _left_out(run)
    if where.ratio is None:
        evidence.undecided(rule, f"{TWO_NODES}: {shown}{left}", raw=raw, node=node)
    evidence.check_rule(rule, where.ratio <= factor, shown + left, result=None, node=node,
                        raw=raw, method=method,
                        problem=f"farther from its peers than the rest (another spine or "
                                f"switch?): {shown}, above {factor:g} x (colocation_factor)"
                                f"{left}")
