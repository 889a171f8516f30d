"""Each rail alone (fabric.rail_busbw): the slow-node search run once per counted port
name, one rail after another, every job bound to that port: an all_reduce whose ranks use
only it (fabric.rail_env: NCCL_IB_HCA, NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME), or
perftest's ib_write_bw on that HCA port (the perftest rank program, one server after
another on the group's first node). A slow port is named with its node.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pytest_cluster.errors import ClusterError
from pytest_cluster.launchers.jobs import JobSpec, run_job
from pytest_cluster.measure import plausible
from pytest_cluster.measure.cache import document_key
from pytest_cluster.measure.network import collectives, fabric, perftest
from pytest_cluster.measure.network.fabric import NIC_RECHECK, NIC_START
from pytest_cluster.measure.network.node_search import NodeSearch, find_slow_nodes
from pytest_cluster.probes.jobs import job_source
from pytest_cluster.units import format_size

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec
    from pytest_cluster.launchers import ProbeResult
    from pytest_cluster.measure.prober import Prober
    from pytest_cluster.probes.nic import Port


#: How a group of nodes is measured on one rail: (bytes/s or NaN, why it failed).
RailRunner = Callable[[list[str]], tuple[float, str]]
#: The failed jobs a rail's search keeps the reason of (the first ones).
MAX_FAILED_JOBS = 64


@dataclass(frozen=True)
class RailSearches:
    """The slow-node search of each rail (rails.searches): per rail the search, or
    why the rail could not be measured; the nodes left out of every rail, with why."""

    searches: dict[str, NodeSearch]
    errors: dict[str, str]
    bound: dict[str, dict[str, object]]  # per rail what binds its jobs: env, or command
    unread: dict[str, str]
    payload: int
    bar: float
    tool: str = "all_reduce"  # fabric.rail_tool
    failed: dict[str, dict[str, str]] = field(default_factory=dict)  # rail: group: why

    @property
    def method(self) -> str:
        """How each rail was measured, in words."""
        if self.tool == "all_reduce":
            return (f"all_reduce {format_size(self.payload)}, one rank per node, bound to "
                    f"one rail at a time (NCCL_IB_HCA, NCCL_SOCKET_IFNAME or "
                    f"GLOO_SOCKET_IFNAME); pairs, then suspects with known-good nodes "
                    f"(nccl-tests busbw)")
        return (f"{self.tool} -s {format_size(self.payload)} -D {perftest.SECONDS:g} s on "
                f"one HCA port at a time, the group's first node serving each other node "
                f"in turn (its average, the slowest client's); pairs, then suspects with "
                f"known-good nodes")

    def why_failed(self, rail: str, nodes: Sequence[str]) -> str:
        """Why the job of `nodes` on `rail` failed, as its first failing rank said ('' when
        not kept)."""
        return self.failed.get(rail, {}).get(",".join(sorted(nodes)), "")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RailSearches:
        rails = data["rails"]
        return cls({name: NodeSearch.from_json(rail["search"]) for name, rail in rails.items()
                    if "search" in rail},
                   {name: str(rail["error"]) for name, rail in rails.items()
                    if "error" in rail},
                   {name: {key: rail[key] for key in ("env", "command") if key in rail}
                    for name, rail in rails.items()},
                   dict(data["unread"]), int(data["payload"]), float(data["bar"]),
                   str(data.get("tool", "all_reduce")),
                   {name: dict(rail.get("failed") or {}) for name, rail in rails.items()})


def _unread(result: ProbeResult, ports: bool = False) -> str:
    """Why a probe's answer cannot be used ('' when it can); `ports`: a NIC probe's,
    whose list of ports must be well formed."""
    if not result.ok:
        return result.describe()
    payload = result.payload()
    if "error" in payload:
        return str(payload["error"])[:400]
    try:
        if ports:
            fabric.ports_of(payload)
    except ValueError as exc:
        return str(exc)
    return ""


def rail_ceiling(spec: Spec, port: Port) -> float:
    """The most one rail can carry (bytes/s): plausible.CEILING_FACTOR x its line rate, the
    larger of the spec's rate per NIC (where it declares one) and the port's own (where it
    is a device: plausible.PORT_FIELDS bounds what a node may say of it). A virtual port
    (a veth, a bridge: no `device` in sysfs) has no wire: what its kernel says of its
    speed is a made-up figure and its traffic may be a copy in memory, so it bounds
    nothing, and neither does the spec's rate, which is of the NICs it declares, not of
    this port; no bound where nothing says."""
    if port.get("virtual"):
        return math.inf
    declared = spec.interconnect
    nic = declared.inter_node if declared is not None else None
    line = max(nic.rate_bytes_per_s if nic is not None else 0.0,
               fabric.rate_bytes(port) or 0.0)
    return plausible.CEILING_FACTOR * line if line else math.inf


def searches(prober: Prober) -> RailSearches:
    """The slow-node search on each rail alone (`search`), once per run, read once per
    process."""
    return prober.cache.kept("rails", lambda: search(prober))


def search(prober: Prober) -> RailSearches:
    """The slow-node search on each rail alone (fabric.rail_busbw): every counted port
    name any node has, one rail after another, against the clause's bound. Each job
    is bound to that port: an all_reduce (fabric.rail_env, one rank per node, at
    search_payload), or perftest's ib_write_bw on that HCA port (fabric.rail_tool). A
    node whose NIC or host probe failed, or without that port, is left out of that
    rail's search, named with why; so is a node whose port the NIC probe saw down, at the
    run's start or after a job on it failed (rails.recheck): a job on a port down would
    wait out its timeout, each round. Run once per run."""
    fab = prober.spec.fabric
    assert fab is not None, "the spec has no fabric section"
    clause = fab.clause("rail_busbw")
    assert clause is not None, "fabric.rail_busbw is not in the contract"
    bar = clause.requirement.bound.value
    size = collectives.section(prober).search_payload if fab.rail_tool == "all_reduce" \
        else perftest.MESSAGE
    nics, hosts = prober.probe_all(NIC_START), prober.host_all()

    def compute() -> dict[str, object]:
        ports: dict[str, list[Port]] = {}
        unread: dict[str, str] = {}
        for node in prober.nodes:
            why = _unread(nics[node], ports=True) or _unread(hosts[node])
            if why:
                unread[node] = why
                continue
            ports[node] = fabric.counted(fabric.ports_of(nics[node].payload()),
                                         fab.devices)
        found: dict[str, object] = {}
        for index, (name, port) in enumerate(fabric.rails(ports).items()):
            try:
                bound, one = runner(prober, port, index, size)
            except ValueError as exc:
                found[name] = {"error": str(exc)}
                continue
            failed: dict[str, str] = {}  # a group's job that failed: why

            def measure(groups: list[list[str]], one: RailRunner = one,
                        failed: dict[str, str] = failed) -> list[float]:
                def each(group: list[str]) -> float:
                    rate, why = one(group)
                    if why and len(failed) < MAX_FAILED_JOBS:
                        failed[",".join(sorted(group))] = why[:400]
                    return rate
                with ThreadPoolExecutor(max_workers=prober.jobs_at_once(len(groups))) \
                        as pool:
                    return list(pool.map(each, groups))

            leave_out = {**unread, **{node: f"no port {name}" for node, mine in
                                      ports.items() if name not in {str(p["name"])
                                                                     for p in mine}},
                         **fabric.down_on(ports, name)}
            search = find_slow_nodes(prober.nodes, measure, bar, leave_out=leave_out,
                                     recheck=functools.partial(recheck, prober, name),
                                     ceiling=rail_ceiling(prober.spec, port))
            simulated = any(nics[node].simulated for node in prober.nodes)
            found[name] = {**bound, "failed": failed,
                           "search": replace(search, simulated=simulated).to_json()}
        return {"rails": found, "unread": unread, "payload": size, "bar": bar,
                "tool": fab.rail_tool}

    key = document_key("rails", json.dumps(asdict(fab), sort_keys=True, default=str,
                                           allow_nan=False),
                       json.dumps(asdict(prober.spec.interconnect), sort_keys=True,
                                  default=str, allow_nan=False)
                       if prober.spec.interconnect else "")
    return RailSearches.from_json(prober.cache.document(key, compute))


def recheck(prober: Prober, name: str, nodes: list[str]) -> dict[str, str]:
    """Of `nodes`, whose job on rail `name` failed, those whose port `name` a fresh NIC
    reading finds down (fabric.down_on, AFTER_FAILURE): the search runs them on that rail
    no more. A node whose reading fails, or a launcher error, tells nothing: not down."""
    fab = prober.spec.fabric
    assert fab is not None
    try:
        fresh = prober.launcher.run(NIC_RECHECK, nodes, prober.spec.cluster.probe_timeout_s)
    except (ClusterError, OSError, ValueError):
        return {}
    ports = {node: fabric.counted(fabric.ports_of(result.payload()), fab.devices)
             for node, result in fresh.items()
             if node in nodes and not _unread(result, ports=True)}
    return fabric.down_on(ports, name, fabric.AFTER_FAILURE)


def runner(prober: Prober, port: Port, index: int,
       size: int) -> tuple[dict[str, object], RailRunner]:
    """What binds a rail's jobs to `port` (recorded), and how a group of nodes is
    measured on it: (bytes/s or NaN, why it failed). ValueError when the port cannot
    carry the rail's tool."""
    fab = prober.spec.fabric
    assert fab is not None
    if fab.rail_tool == "all_reduce":
        spec = replace(collectives.section(prober), ranks_per_node=1)
        env = fabric.rail_env(port, spec.backend)

        def collective(group: list[str]) -> tuple[float, str]:
            run = collectives.collective(prober, "all_reduce", group, [size], env, spec)
            point = run.at(size) if run.ok else None
            return (point.busbw, "") if point is not None else \
                (math.nan, run.error or "no result")
        return {"env": [list(pair) for pair in env]}, collective
    if port.get("kind") != "rdma":
        raise ValueError(f"{port.get('name')} is not an RDMA port: {fab.rail_tool} "
                         f"needs one")
    gpus = prober.spec.gpus.slots if prober.spec.gpus is not None else 1
    base = perftest.command(fab.rail_tool, str(port.get("device")),
                            int(port.get("port") or 0),
                            index % max(1, gpus) if fab.rail_cuda else None)
    wait_s = min(120.0, prober.spec.cluster.probe_timeout_s)

    def write_bw(group: list[str]) -> tuple[float, str]:
        job = JobSpec(tuple(group), job_source("perftest"),
                      args=("--argv", json.dumps(base, allow_nan=False), "--seconds",
                            f"{perftest.SECONDS:g}"),
                      init_timeout_s=wait_s, wall_timeout_s=(len(group) - 1) * (
                          perftest.SECONDS + wait_s + 30) + 60)
        try:
            result = run_job(prober.launcher, job)
        except (ClusterError, OSError, ValueError) as exc:
            return math.nan, str(exc)
        if result.errors:
            return math.nan, result.first_failure()
        clients = [r.data for r in result.ranks
                   if r.data is not None and r.data.get("role") == "client"]
        return perftest.group_rate(clients)
    return {"command": base}, write_bw

