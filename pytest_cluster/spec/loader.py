"""Load and validate a contract spec (trial.yaml) into frozen records.

Every problem becomes a SpecError naming the file, the line, the key path and what
was expected; all problems of a file are reported together.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from pytest_cluster.errors import SpecError, UnitError
from pytest_cluster.hostlist import expand_hostlist
from pytest_cluster.launchers import REGISTRY, default_python
from pytest_cluster.requirement import (
    parse_version_requirement,
)
from pytest_cluster.spec.fields import (
    Ctx,
    Map,
    boolean,
    clause,
    field,
    interpreter,
    kind,
    positive_int,
    text,
)
from pytest_cluster.spec.gpus import parse_gpus, parse_sim
from pytest_cluster.spec.interconnect import parse_interconnect
from pytest_cluster.spec.model import (
    Clause,
    ClusterSpec,
    HostSpec,
    Spec,
    StorageSpec,
    VersionClause,
)
from pytest_cluster.spec.slurm import allocation_nodes, parse_slurm, wants_allocation
from pytest_cluster.spec.ssh import parse_ssh
from pytest_cluster.units import Dim, parse_quantity

SOFTWARE = ("kernel", "python", "torch", "cuda", "nccl", "driver")
MAX_SPEC_BYTES = 4 * 2**20


def _nodes(ctx: Ctx, node: Node | None, path: str) -> tuple[str, ...]:
    if node is None:
        return ()
    items = node.value if isinstance(node, SequenceNode) else [node]
    names: list[str] = []
    for index, item in enumerate(items):
        where = f"{path}[{index}]" if isinstance(node, SequenceNode) else path
        expr = field(ctx, item, where, text("a hostname or hostlist like 'gpu-[001-004]'"))
        if expr is None:
            continue
        try:
            expanded = expand_hostlist(expr)
        except UnitError as exc:
            ctx.error(item, where, str(exc))
            continue
        for name in expanded:
            if name in names:
                ctx.error(item, where, f"node {name!r} is listed twice")
            else:
                names.append(name)
    return tuple(names)


def _cluster(ctx: Ctx, node: Node | None, allocation: bool = False) -> ClusterSpec:
    known = ("name", "nodes", "launcher", "python", "probe_timeout", "parallel")
    if node is None:
        ctx.error(None, "cluster", "missing section (needs at least name and nodes)")
        return ClusterSpec("", (), "local", "python3", 600.0, 64)
    table = Map(ctx, node, "cluster", known)
    name_node = table.take("name")
    name = field(ctx, name_node, "cluster.name", text("a name for the cluster"))
    if name_node is None and isinstance(node, MappingNode):
        ctx.error(node, "cluster.name", "missing: name the cluster, e.g. name: acme-h100-trial")
    nodes_node = table.take("nodes")
    if allocation and nodes_node is not None:
        ctx.error(nodes_node, "cluster.nodes", "leave it out with slurm.allocation: true (the "
                  "nodes are the allocation's)")
    elif nodes_node is None and isinstance(node, MappingNode) and not allocation:
        ctx.error(node, "cluster.nodes", "missing: list the nodes, e.g. nodes: gpu-[001-004]")
    nodes = _nodes(ctx, nodes_node, "cluster.nodes")
    if nodes_node is not None and not nodes and not ctx.errors:
        ctx.error(nodes_node, "cluster.nodes", "no nodes given")

    def launcher(raw: object) -> str:
        if raw not in REGISTRY:
            raise UnitError(f"expected one of {', '.join(REGISTRY)}, got {raw!r}")
        return str(raw)

    def timeout(raw: object) -> float:
        return parse_quantity(raw, Dim.TIME).value

    chosen = field(ctx, table.take("launcher"), "cluster.launcher", launcher) or "local"
    result = ClusterSpec(
        name=name or "",
        nodes=nodes,
        launcher=chosen,
        python=field(ctx, table.take("python"), "cluster.python", interpreter)
        or default_python(chosen),
        probe_timeout_s=field(ctx, table.take("probe_timeout"), "cluster.probe_timeout",
                               timeout) or 600.0,
        parallel=field(ctx, table.take("parallel"), "cluster.parallel", positive_int) or 64,
    )
    table.finish()
    return result


def _host(ctx: Ctx, node: Node | None) -> HostSpec:
    if node is None:
        return HostSpec()
    table = Map(ctx, node, "host",
                 ("cpu_cores", "cpu_threads", "memory", "software", "same_software"))
    software: list[VersionClause] = []
    soft_node = table.take("software")
    if soft_node is not None:
        soft = Map(ctx, soft_node, "host.software", SOFTWARE)
        for name in SOFTWARE:
            item = soft.take(name)
            req = field(ctx, item, f"host.software.{name}", parse_version_requirement)
            if req is not None and item is not None:
                software.append(VersionClause(f"host.software.{name}",
                                              item.start_mark.line + 1, name, req))
        soft.finish()
    same = field(ctx, table.take("same_software"), "host.same_software", boolean)
    result = HostSpec(
        cpu_cores=clause(ctx, table, "host", "cpu_cores", Dim.COUNT),
        cpu_threads=clause(ctx, table, "host", "cpu_threads", Dim.COUNT),
        memory=clause(ctx, table, "host", "memory", Dim.SIZE),
        software=tuple(software),
        same_software=True if same is None else same,
    )
    table.finish()
    return result


_STORAGE_KEYS = ("path", "shared", "capacity", "free", "write", "read", "metadata",
                 "import_torch", "python", "io_size", "metadata_files", "import_repeats",
                 "cold_cache")


def _filesystem(ctx: Ctx, node: Node, index: int, default_python: str) -> StorageSpec | None:
    path = f"storage[{index}]"
    table = Map(ctx, node, path, _STORAGE_KEYS)
    if not isinstance(node, MappingNode):
        return None

    def absolute(raw: object) -> str:
        value = text("an absolute path like /data")(raw)
        if not value.startswith("/") or "\0" in value:
            raise UnitError(f"expected an absolute path like /data, got {raw!r}")
        return os.path.normpath(value)

    fs_path = field(ctx, table.take("path"), f"{path}.path", absolute)
    if fs_path is None and not any(e.path == f"{path}.path" for e in ctx.errors):
        ctx.error(node, f"{path}.path", "missing: which filesystem path to test")
    key = f"storage[{fs_path or index}]"

    def size(raw: object) -> int:
        value = int(parse_quantity(raw, Dim.SIZE).value)
        if value < 2**20:
            raise UnitError(f"expected a size of at least 1 MiB, got {raw!r}")
        return value

    shared_node = table.take("shared")
    shared = field(ctx, shared_node, f"{path}.shared", boolean)
    python = field(ctx, table.take("python"), f"{path}.python", interpreter)
    io_size = field(ctx, table.take("io_size"), f"{path}.io_size", size)
    files = field(ctx, table.take("metadata_files"), f"{path}.metadata_files", positive_int)
    repeats = field(ctx, table.take("import_repeats"), f"{path}.import_repeats", positive_int)
    cold = field(ctx, table.take("cold_cache"), f"{path}.cold_cache", boolean)

    def fs_clause(name: str, dim: Dim, op: str = ">=") -> Clause | None:
        return clause(ctx, table, key, name, dim, op)

    result = StorageSpec(
        path=fs_path or "",
        index=index,
        shared=bool(shared),
        shared_line=shared_node.start_mark.line + 1 if shared_node is not None else 0,
        python=python or default_python,
        io_size_bytes=io_size or 2**30,
        metadata_files=files or 2000,
        import_repeats=repeats or 3,
        cold_cache=True if cold is None else cold,
        capacity=fs_clause("capacity", Dim.SIZE),
        free=fs_clause("free", Dim.SIZE),
        write=fs_clause("write", Dim.RATE),
        read=fs_clause("read", Dim.RATE),
        metadata=fs_clause("metadata", Dim.OPS),
        import_torch=fs_clause("import_torch", Dim.TIME, "<="),
    )
    table.finish()
    return result


def _storage(ctx: Ctx, node: Node | None, default_python: str) -> tuple[StorageSpec, ...]:
    if node is None:
        return ()
    if not isinstance(node, SequenceNode):
        ctx.error(node, "storage", f"expected a list of filesystems (- path: /data ...), "
                  f"got {kind(node)}")
        return ()
    found: list[StorageSpec] = []
    for index, item in enumerate(node.value):
        fs = _filesystem(ctx, item, index, default_python)
        if fs is None:
            continue
        if fs.path and any(other.path == fs.path for other in found):
            ctx.error(item, f"storage[{index}].path", f"{fs.path} is listed twice")
            continue
        found.append(fs)
    return tuple(found)


def _has_clauses(cluster: ClusterSpec, host: HostSpec,
                 storage: tuple[StorageSpec, ...]) -> bool:
    host_clauses = (host.cpu_cores, host.cpu_threads, host.memory, *host.software)
    storage_clauses = [fs.clause(name) for fs in storage for name in
                       ("capacity", "free", "write", "read", "metadata", "import_torch")]
    same = host.same_software and len(cluster.nodes) > 1
    return same or any(c is not None for c in (*host_clauses, *storage_clauses))


_PLAIN_TAGS = {f"tag:yaml.org,2002:{name}" for name in
               ("str", "int", "float", "bool", "null", "map", "seq", "merge", "timestamp")}


def _check_tags(root: Node, file: str) -> None:
    """Refuse YAML tags (`!!python/...`, `!custom`): a spec is plain data."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.tag not in _PLAIN_TAGS:
            raise SpecError(f"YAML tag {node.tag!r} is not allowed; a spec is plain data",
                            file=file, line=node.start_mark.line + 1)
        if isinstance(node, MappingNode):
            stack.extend(item for pair in node.value for item in pair)
        elif isinstance(node, SequenceNode):
            stack.extend(node.value)


def parse_spec(text: str, file: str) -> Spec:
    """Validate spec text; raise SpecError listing every problem found."""
    ctx = Ctx(file)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        hint = ""
        if "chomping or indentation" in problem:
            hint = " (quote values that start with '>' or '<', e.g. cpu_cores: \">= 192\")"
        elif "'['" in problem:
            hint = " (quote hostlists inside [...] lists, e.g. nodes: ['gpu-[001-004]', login01])"
        raise SpecError(f"YAML syntax error: {problem}{hint}", file=file, line=line) from None
    except yaml.YAMLError as exc:
        raise SpecError(f"YAML error: {exc}", file=file) from None
    if root is None:
        raise SpecError("the spec is empty; it needs at least a cluster section "
                        "with name and nodes", file=file)
    _check_tags(root, file)
    if not isinstance(root, MappingNode):
        raise SpecError(f"the spec must be a map with sections cluster, host, storage; "
                        f"got {kind(root)}", file=file, line=root.start_mark.line + 1)
    top = Map(ctx, root, "", ("cluster", "host", "storage", "gpus", "interconnect", "sim",
                              "ssh", "slurm"))
    slurm_node = top.items.get("slurm", (None, None))[1]
    allocation = wants_allocation(slurm_node)
    cluster = _cluster(ctx, top.take("cluster"), allocation)
    host = _host(ctx, top.take("host"))
    storage_node = top.take("storage")
    storage = _storage(ctx, storage_node, cluster.python)
    if storage_node is not None and cluster.launcher == "sim":
        ctx.error(storage_node, "storage", "the sim launcher simulates hosts and GPUs, not "
                  "filesystems; test storage with launcher: local (or ssh, slurm)")
    gpus = parse_gpus(ctx, top.take("gpus"))
    sim = parse_sim(ctx, top.take("sim", keep_null=True), cluster)
    ssh = parse_ssh(ctx, top.take("ssh"), cluster)
    slurm = parse_slurm(ctx, top.take("slurm"), cluster)
    if slurm is not None and slurm.allocation:
        cluster = dataclasses.replace(cluster, nodes=allocation_nodes(ctx, slurm_node))
    interconnect = parse_interconnect(ctx, top.take("interconnect"), cluster, gpus)
    top.finish()
    if not ctx.errors and gpus is None and interconnect is None and not _has_clauses(
            cluster, host, storage):
        raise SpecError("nothing to test: the spec has no host, storage, gpus or "
                        "interconnect clauses (see examples/trial.yaml)", file=file)
    if ctx.errors:
        if len(ctx.errors) == 1:
            raise ctx.errors[0]
        ordered = sorted(ctx.errors, key=lambda error: error.line or 0)
        lines = "\n".join(f"  {error}" for error in ordered)
        raise SpecError(f"{len(ctx.errors)} problems in the spec:\n{lines}", file=file)
    sha = hashlib.sha256(text.encode()).hexdigest()
    warnings = tuple(str(w) for w in sorted(ctx.warnings, key=lambda w: w.line or 0))
    return Spec(file=file, sha256=sha, cluster=cluster, host=host, storage=storage, gpus=gpus,
                sim=sim, ssh=ssh, slurm=slurm, interconnect=interconnect, warnings=warnings)


def load_spec(path: str | os.PathLike[str]) -> Spec:
    """Read and validate the spec file at `path`."""
    name = str(path)
    file = Path(path)
    try:
        if file.is_dir():
            raise SpecError("is a directory, expected a YAML spec file", file=name)
        if file.stat().st_size > MAX_SPEC_BYTES:
            raise SpecError("is larger than 4 MiB; is this really a spec?", file=name)
        data = file.read_bytes()
    except FileNotFoundError:
        raise SpecError("no such file", file=name) from None
    except PermissionError:
        raise SpecError("permission denied", file=name) from None
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror}", file=name) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"not UTF-8 text (byte {exc.start})", file=name) from None
    return parse_spec(text, name)
