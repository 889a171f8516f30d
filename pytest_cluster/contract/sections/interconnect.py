"""The `interconnect:` section: links, collectives, payloads, node counts and the busbw
promise (a share of theoretical like '80%', or a rate like '360 GB/s'; once, or per scope:
busbw_bounds.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, TypedDict, TypeVar

from yaml.nodes import MappingNode, Node, SequenceNode

from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.model import (
    Clause,
    ClusterSpec,
    GpuSpec,
    InterconnectSpec,
    LinkSpec,
    Rule,
    TransportSpec,
)
from pytest_cluster.contract.reading.clause_parsers import as_declared
from pytest_cluster.contract.reading.fields import (
    boolean,
    field,
    one_of,
    or_default,
    positive_int,
    size_between,
    text,
    time_between,
    whole,
)
from pytest_cluster.contract.reading.mapping import Map
from pytest_cluster.contract.reading.yaml_nodes import kind
from pytest_cluster.contract.requirement import Requirement, parse_requirement
from pytest_cluster.contract.sections.busbw_bounds import (
    EXPECTED,
    PATH,
    check_bounds,
    parse_busbw,
)
from pytest_cluster.errors import UnitError, head
from pytest_cluster.units import Dim, parse_bytes

T = TypeVar("T")

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.located_errors import Ctx

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
BACKENDS = ("nccl", "gloo")
KEYS = ("intra_node", "inter_node", "collectives", "payloads", "node_counts", "busbw",
        "ranks_per_node", "backend", "sweep_from", "warmup", "iterations", "node_network",
        "search_payload", "timeout", "transport", "engine", "nccl_tests", "latency",
        "latency_size", "colocation", "colocation_factor")
#: The ping-pong's sizes: small messages, where latency (not bandwidth) is the figure.
MAX_LATENCY_SIZE = 64 * 2**10
#: What measures a job inside one node: the collective probe over torch.distributed, or
#: nccl-tests' binaries (interconnect.nccl_tests: the folder they were built in).
ENGINES = ("torch", "nccl-tests")
#: A folder of nccl-tests' binaries: an absolute path of plain characters.
_FOLDER = re.compile(r"^/[A-Za-z0-9_.+@/\-]{0,255}$")
#: The keys of `transport:` and the names of a network NCCL may use between nodes (a net
#: plugin's, like IBext_v8, is IB's).
TRANSPORT_KEYS = ("inter_node", "gdr", "nvls")
NETWORKS = ("ib", "socket")
MAX_PAYLOAD = 64 * 2**30
MAX_RANKS = 512  # processes per node: one per GPU (nccl) or per core (gloo)
#: NICs of a node (fabric.ports has the same bound; sim faults name NICs 0-63), and a
#: benchmark's warm-up and timed collectives per payload: counts that size real work
MAX_NICS, MAX_WARMUP, MAX_ITERATIONS = 64, 10_000, 100_000


def _payload(raw: object) -> int:
    value = parse_bytes(raw)
    if not 1024 <= value <= MAX_PAYLOAD:
        raise UnitError(f"expected a payload from 1 KiB to 64 GiB like '4 GiB', got {raw!r}")
    return value


def _link(ctx: Ctx, node: Node | None, name: str) -> LinkSpec | None:
    if node is None:
        return None
    path = f"interconnect.{name}"
    inter = name == "inter_node"
    known = ("kind", "nics_per_node", "rate_per_nic") if inter else ("kind", "rate")
    table = Map(ctx, node, path, known)
    if not isinstance(node, MappingNode):
        return None
    link_kind = field(ctx, table.take("kind"), f"{path}.kind",
                      text("a link kind like nvlink, infiniband, roce or ethernet"))
    rate_key = "rate_per_nic" if inter else "rate"
    rate_node = table.take(rate_key)
    rate = as_declared(ctx, rate_node, f"{path}.{rate_key}",
                       declared(f"interconnect.{name}.{rate_key}"))
    if rate_node is None:
        example = "400 Gb/s" if inter else "450 GB/s (per GPU per direction)"
        ctx.error(node, f"{path}.{rate_key}", f"missing: the link's rate, e.g. {example}")
    nics = field(ctx, table.take("nics_per_node"), f"{path}.nics_per_node",
                 whole(1, MAX_NICS)) if inter else 1
    table.finish()
    if rate is None or rate_node is None or rate.value <= 0:
        if rate is not None:
            ctx.error(rate_node, f"{path}.{rate_key}", "expected a rate above 0")
        return None
    default_kind = "network" if inter else "intra-node link"
    return LinkSpec(or_default(link_kind, default_kind), rate.value, str(rate),
                    or_default(nics, 1))


def _ranks_fit(ctx: Ctx, node: Node | None, spec: InterconnectSpec,
               gpus: GpuSpec | None) -> None:
    """NCCL runs one rank per GPU: more ranks per node than gpus.count would fail every job."""
    if node is None or gpus is None or spec.backend != "nccl" or ctx.failed("gpus.count"):
        return
    if spec.ranks_per_node > gpus.slots:
        ctx.error(node, "interconnect.ranks_per_node", f"{spec.ranks_per_node} ranks per "
                  f"node, but gpus.count is {gpus.slots}: NCCL needs a GPU per rank; set "
                  f"ranks_per_node to {gpus.slots} or less (or backend: gloo for ranks on "
                  "CPUs)")


def _list(ctx: Ctx, node: Node | None, path: str,
          parse: Callable[[object], T]) -> list[T] | None:
    """A list (or one value) of scalars, each parsed; None if absent."""
    if node is None:
        return None
    items = node.value if isinstance(node, SequenceNode) else [node]
    if isinstance(node, MappingNode):
        ctx.error(node, path, f"expected a list, got {kind(node)}")
        return []
    found: list[T] = []
    for index, item in enumerate(items):
        where = f"{path}[{index}]" if isinstance(node, SequenceNode) else path
        value = field(ctx, item, where, parse)
        if value is not None:
            found.append(value)
    if isinstance(node, SequenceNode) and not items:
        ctx.error(node, path, "expected at least one value")
    return found


#: The backends a job may run on, as the spec's errors say them.
backend = one_of(BACKENDS, "nccl (GPUs) or gloo (CPUs)")


def _folder(raw: object) -> str:
    if not isinstance(raw, str) or not _FOLDER.match(raw) or "/../" in f"{raw}/":
        raise UnitError(f"expected the absolute path of the folder nccl-tests was built in, "
                        f"like /opt/nccl-tests/build (letters, digits and _ . + @ - /), got "
                        f"{head(str(raw), 64)!r}")
    return raw.rstrip("/") or "/"


def _collectives(ctx: Ctx, node: Node | None, path: str) -> list[str]:
    """The collectives measured: all_reduce, and any of the others."""
    collective = one_of(COLLECTIVES, f"one of {', '.join(COLLECTIVES)}")
    found = [str(c) for c in _list(ctx, node, path, collective) or ["all_reduce"]]
    if node is not None and "all_reduce" not in found and not any(
            failed.startswith(path) for failed in ctx.paths):
        ctx.error(node, path, "all_reduce is required (the others are optional)")
    return found


def _check_engine(ctx: Ctx, spec: InterconnectSpec, engine: Node | None,
                  folder: Node | None) -> None:
    """nccl-tests runs NCCL from a folder the spec names; the folder only with it."""
    if spec.engine == "nccl-tests" and spec.backend != "nccl":
        ctx.error(engine, "interconnect.engine", f"nccl-tests runs NCCL: needs backend nccl "
                  f"(this spec's is {spec.backend})")
    if spec.engine == "nccl-tests" and spec.nccl_tests is None and folder is None:
        ctx.error(engine, "interconnect.nccl_tests", "missing: the folder nccl-tests was "
                  "built in, like /opt/nccl-tests/build (its all_reduce_perf ...)")
    if folder is not None and spec.engine != "nccl-tests":
        ctx.error(folder, "interconnect.nccl_tests", "only used with engine: nccl-tests")


def _transport(ctx: Ctx, node: Node | None, path: str) -> TransportSpec | None:
    """`transport: {inter_node: ib, gdr: true, nvls: true}`: what NCCL must have used."""
    if node is None:
        return None
    table = Map(ctx, node, path, TRANSPORT_KEYS)
    if not isinstance(node, MappingNode):
        return None

    def network(raw: object) -> str:
        if raw not in NETWORKS:
            raise UnitError(f"expected {' or '.join(NETWORKS)} (the network NCCL uses "
                            f"between nodes), got {raw!r}"[:200])
        return str(raw)

    found = TransportSpec(
        inter_node=field(ctx, table.take("inter_node"), f"{path}.inter_node", network),
        gdr=field(ctx, table.take("gdr"), f"{path}.gdr", boolean),
        nvls=field(ctx, table.take("nvls"), f"{path}.nvls", boolean),
        line=node.start_mark.line + 1)
    table.finish()
    if (found.inter_node, found.gdr, found.nvls) == (None, None, None):
        ctx.error(node, path, f"promises nothing: give {', '.join(TRANSPORT_KEYS)}")
    return found


def _factor(raw: object) -> float:
    """colocation_factor: how many times the median latency between the other nodes a
    node's median may reach."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 1 < raw <= 100:
        raise UnitError(f"expected a factor above 1 and at most 100 like 1.5 (times the "
                        f"median latency between the other nodes), got {head(str(raw), 64)!r}")
    return float(raw)


def _latency_bound(raw: object) -> Requirement:
    req = parse_requirement(raw, Dim.TIME, "<=")
    if req.bound.value <= 0 or req.op not in ("<=", "<"):
        raise UnitError(f"expected an upper bound above 0 like '<= 5 us', got "
                        f"{head(str(raw), 64)!r}")
    return req


class _Latency(TypedDict):
    """The ping-pong's promises and settings, as InterconnectSpec takes them."""

    latency: Clause | None
    latency_size: int
    colocation: Rule | None
    colocation_factor: float


def _latency(ctx: Ctx, table: Map, path: str) -> _Latency:
    """`latency: "<= 5 us"`, `latency_size: 8 B`, `colocation: true`,
    `colocation_factor: 1.5`: the ping-pong's promises and settings. Colocation is on with
    a latency bound unless `colocation: false`; `colocation: true` alone measures the
    latency for the rule only."""
    bound_node = table.take("latency")
    req = field(ctx, bound_node, f"{path}.latency", _latency_bound)
    bound = Clause(declared("interconnect.latency").id, bound_node.start_mark.line + 1, req) \
        if req is not None and bound_node is not None else None
    size = field(ctx, table.take("latency_size"), f"{path}.latency_size",
                 size_between(1, MAX_LATENCY_SIZE, "from 1 B to 64 KiB (a small message)"))
    rule_node = table.take("colocation")
    on = field(ctx, rule_node, f"{path}.colocation", boolean)
    factor_node = table.take("colocation_factor")
    factor = field(ctx, factor_node, f"{path}.colocation_factor", _factor)
    wanted = on if on is not None else bound_node is not None
    declaration = declared("interconnect.colocation")
    rule = Rule(declaration.id, rule_node.start_mark.line + 1 if rule_node is not None
                else 0, declaration.text) if wanted else None
    if factor_node is not None and not wanted and not ctx.failed(f"{path}.colocation"):
        ctx.error(factor_node, f"{path}.colocation_factor", "only used with the colocation "
                  "rule (colocation: true, or a latency bound)")
    return {"latency": bound, "latency_size": or_default(size, 8), "colocation": rule,
            "colocation_factor": or_default(factor, 1.5)}


def parse_interconnect(ctx: Ctx, node: Node | None, cluster: ClusterSpec,
                       gpus: GpuSpec | None) -> InterconnectSpec | None:
    if node is None:
        return None
    path = "interconnect"
    table = Map(ctx, node, path, KEYS)
    if not isinstance(node, MappingNode):
        return None
    given = {name: name in table.items for name in ("intra_node", "inter_node")}
    intra = _link(ctx, table.take("intra_node"), "intra_node")
    inter = _link(ctx, table.take("inter_node"), "inter_node")
    collectives = _collectives(ctx, table.take("collectives"), f"{path}.collectives")
    payload_node = table.take("payloads")
    payloads = [int(v) for v in _list(ctx, payload_node, f"{path}.payloads", _payload) or []
                if isinstance(v, int)]
    if payload_node is None:
        ctx.error(node, f"{path}.payloads", "missing: the payload sizes the contract names, "
                  "e.g. payloads: [4 GiB, 16 GiB] (busbw depends on the size)")
    counts_node = table.take("node_counts")
    counts = [int(v) for v in _list(ctx, counts_node, f"{path}.node_counts", positive_int)
              or [] if isinstance(v, int)]
    if counts_node is None:
        counts = [len(cluster.nodes)] if len(cluster.nodes) > 1 else []
    busbw = parse_busbw(ctx, table)
    if not busbw and not any(p.startswith(PATH) for p in ctx.paths):
        ctx.error(node, PATH, f"missing: the promise, {EXPECTED} (or one per scope: "
                  f"{{intra_node: \">= 360 GB/s\", inter_node: \">= 80%\"}})")

    ranks_node = table.take("ranks_per_node")
    ranks = field(ctx, ranks_node, f"{path}.ranks_per_node", whole(1, MAX_RANKS))
    chosen = field(ctx, table.take("backend"), f"{path}.backend", backend)
    sweep_from = field(ctx, table.take("sweep_from"), f"{path}.sweep_from", _payload)
    warmup = field(ctx, table.take("warmup"), f"{path}.warmup", whole(1, MAX_WARMUP))
    iterations = field(ctx, table.take("iterations"), f"{path}.iterations",
                       whole(1, MAX_ITERATIONS))
    search = field(ctx, table.take("node_network"), f"{path}.node_network", boolean)
    search_payload = field(ctx, table.take("search_payload"), f"{path}.search_payload",
                           _payload)
    timeout = field(ctx, table.take("timeout"), f"{path}.timeout",
                    time_between(10, 24 * 3600, "from 10 s to 24 h"))
    stress = field(ctx, table.take("stress_time"), f"{path}.stress_time",
                   time_between(1, 7 * 86400, "from 1 s to 7 days"))
    transport = _transport(ctx, table.take("transport"), f"{path}.transport")
    engine_node, folder_node = table.take("engine"), table.take("nccl_tests")
    engine = field(ctx, engine_node, f"{path}.engine",
                   one_of(ENGINES, " or ".join(ENGINES)))
    folder = field(ctx, folder_node, f"{path}.nccl_tests", _folder)
    latency = _latency(ctx, table, path)
    table.finish()
    if not busbw or not payloads:
        return None
    result = InterconnectSpec(
        busbw=busbw, payloads=tuple(sorted(set(payloads))),
        intra_node=intra, inter_node=inter, collectives=tuple(dict.fromkeys(collectives)),
        node_counts=tuple(sorted({c for c in counts if 2 <= c <= len(cluster.nodes)})),
        node_counts_dropped=tuple(sorted({c for c in counts if c > len(cluster.nodes)})),
        ranks_per_node=or_default(ranks, gpus.slots if gpus is not None else 1),
        backend=or_default(chosen, "nccl" if gpus is not None else "gloo"),
        sweep_from=min(or_default(sweep_from, 2**20), *payloads),
        warmup=or_default(warmup, 5), iterations=or_default(iterations, 20),
        node_network=or_default(search, True),
        search_payload=or_default(search_payload, min(payloads)),
        timeout_s=or_default(timeout, 600.0), stress_time_s=or_default(stress, 300.0),
        transport=transport, engine=or_default(engine, "torch"), nccl_tests=folder,
        **latency)
    _check_engine(ctx, result, engine_node, folder_node)
    if transport is not None and result.backend != "nccl":
        ctx.error(node, f"{path}.transport", f"the transport NCCL used: needs backend nccl "
                  f"(this spec's is {result.backend}, which uses TCP sockets)")
    _ranks_fit(ctx, ranks_node, result, gpus)
    if result.ranks_per_node < 2 and len(cluster.nodes) < 2:
        ctx.error(node, f"{path}.ranks_per_node", "nothing to measure: one node with one "
                  "rank has no one to talk to; set ranks_per_node to 2 or more (one per "
                  "GPU), or test several nodes")
    check_bounds(ctx, node, result, len(cluster.nodes), given)
    return result
