"""Load and validate a contract spec (trial.yaml) into frozen records.

Every problem becomes a SpecError naming the file, the line, the key path and what
was expected; all problems of a file are reported together.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from pytest_cluster.errors import SpecError, UnitError
from pytest_cluster.hostlist import MAX_NODES, expand_hostlist
from pytest_cluster.spec.clause_parsers import flag, promises
from pytest_cluster.spec.clauses import declared, keys
from pytest_cluster.spec.compose import compose
from pytest_cluster.spec.extensions import added_sections, adds_to, free
from pytest_cluster.spec.fabric import parse_fabric
from pytest_cluster.spec.fields import (
    field,
    interpreter,
    or_default,
    positive_int,
    shown_name,
    size_between,
    text,
    time_between,
)
from pytest_cluster.spec.gpus import parse_gpus
from pytest_cluster.spec.interconnect import parse_interconnect
from pytest_cluster.spec.launchers import KINDS
from pytest_cluster.spec.located_errors import Ctx
from pytest_cluster.spec.mapping import Map, section_map
from pytest_cluster.spec.model import (
    SECTION_FIELDS,
    BaselineSpec,
    Clause,
    ClusterSpec,
    HostSpec,
    SectionSpec,
    SoakSpec,
    Spec,
    SpecNote,
    StorageSpec,
    VersionClause,
)
from pytest_cluster.spec.requirement import (
    parse_version_requirement,
)
from pytest_cluster.spec.sim import parse_sim
from pytest_cluster.spec.sla import parse_sla
from pytest_cluster.spec.slurm import allocation_nodes, parse_slurm, wants_allocation
from pytest_cluster.spec.spelling import closest, written_with
from pytest_cluster.spec.ssh import parse_ssh
from pytest_cluster.spec.storage import parse_storage
from pytest_cluster.spec.training import parse_training
from pytest_cluster.spec.yaml_nodes import kind, written
from pytest_cluster.units import Dim, parse_quantity

MAX_SPEC_BYTES = 4 * 2**20
#: The longest cluster.name: it heads the terminal's summary, the reports and the run's
#: directory name (which keeps its first 80 characters).
MAX_CLUSTER_NAME = 128
T = TypeVar("T")


def _nodes(ctx: Ctx, node: Node | None, path: str) -> tuple[str, ...]:
    if node is None:
        return ()
    items = node.value if isinstance(node, SequenceNode) else [node]
    names: dict[str, None] = {}  # ordered, and `in` is O(1)
    seen: set[str] = set()  # each name in lower case: n1 and N1 are one host
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
        twice = []
        for name in expanded:
            if name.lower() in seen:
                twice.append(name)
            else:
                names[name] = None
                seen.add(name.lower())
        if twice:
            shown = ", ".join(repr(name) for name in twice[:5])
            more = f" and {len(twice) - 5} more" if len(twice) > 5 else ""
            ctx.error(item, where, (f"node {shown} is listed twice" if len(twice) == 1 else
                                    f"nodes {shown}{more} are listed twice")
                      + ("" if all(name in names for name in twice[:5]) else
                         " (a host name's case does not matter)"))
        if len(names) > MAX_NODES:
            ctx.error(item, where, f"more than {MAX_NODES} nodes; test a cluster in parts "
                      f"of at most {MAX_NODES} (one spec each)")
            break
    return tuple(names)[:MAX_NODES]


def _cluster(ctx: Ctx, node: Node | None, allocation: bool = False) -> ClusterSpec:
    known = ("name", "nodes", "launcher", "python", "probe_timeout", "probe_output",
             "parallel")
    if node is None:
        ctx.error(None, "cluster", "missing section (needs at least name and nodes)")
        return ClusterSpec("", (), "local", "python3", 600.0, 64)
    table = Map(ctx, node, "cluster", known)
    name_node = table.take("name")
    name = field(ctx, name_node, "cluster.name", shown_name("a name for the cluster",
                                                              MAX_CLUSTER_NAME))
    if name_node is None and isinstance(node, MappingNode):
        ctx.error(node, "cluster.name", "missing: name the cluster, e.g. name: acme-h100-trial")
    nodes_node = table.take("nodes")
    if allocation and nodes_node is not None:
        ctx.error(nodes_node, "cluster.nodes", "leave it out with slurm.allocation: true (the "
                  "nodes are the allocation's)")
    elif nodes_node is None and isinstance(node, MappingNode) and not allocation:
        ctx.error(node, "cluster.nodes", "missing: list the nodes, e.g. nodes: gpu-[001-004]")
    nodes = _nodes(ctx, nodes_node, "cluster.nodes")
    if nodes_node is not None and not nodes and not ctx.count:
        ctx.error(nodes_node, "cluster.nodes", "no nodes given")

    def launcher(raw: object) -> str:
        if raw not in KINDS:
            close = closest(raw, list(KINDS), cutoff=0.6) if isinstance(raw, str) else None
            hint = f"; did you mean {close!r}?" if close else ""
            spelled = written_with(raw[:64]) if isinstance(raw, str) else ""
            raise UnitError(f"expected one of {', '.join(KINDS)}, got {raw!r}"[:200] + spelled
                            + hint)
        return str(raw)

    chosen = or_default(field(ctx, table.take("launcher"), "cluster.launcher", launcher),
                        "local")
    timeout = time_between(1, 24 * 3600, "from 1 s to 24 h")
    result = ClusterSpec(
        name=or_default(name, ""),
        nodes=nodes,
        launcher=chosen,
        python=or_default(field(ctx, table.take("python"), "cluster.python", interpreter),
                          KINDS[chosen].default_python()),
        probe_timeout_s=or_default(field(ctx, table.take("probe_timeout"),
                                         "cluster.probe_timeout", timeout), 600.0),
        parallel=or_default(field(ctx, table.take("parallel"), "cluster.parallel",
                                  positive_int), 64),
        probe_output_bytes=or_default(field(
            ctx, table.take("probe_output"), "cluster.probe_output",
            size_between(64 * 2**10, 2**30, "from 64 KiB to 1 GiB")), 16 * 2**20),
    )
    table.finish()
    return result


def _software(ctx: Ctx, table: Map) -> tuple[VersionClause, ...]:
    declaration = declared("host.software")
    node = table.take(declaration.key)
    if node is None:
        return ()
    found: list[VersionClause] = []
    soft = Map(ctx, node, declaration.id, declaration.members)
    for name in declaration.members:
        item = soft.take(name)
        req = field(ctx, item, declaration.name(member=name), parse_version_requirement,
                    written)  # `torch: 2.10` is 2.10, never the float 2.1
        if req is not None and item is not None:
            found.append(VersionClause(declaration.name(member=name),
                                       item.start_mark.line + 1, name, req))
    soft.finish()
    return tuple(found)


def _host(ctx: Ctx, node: Node | None) -> HostSpec:
    if node is None:
        return HostSpec()
    table = Map(ctx, node, "host", keys("host"))
    software = _software(ctx, table)
    same, _ = flag(ctx, table, declared("host.same_software"))
    result = HostSpec(clauses=promises(ctx, table, "host"), software=software,
                      same_software=True if same is None else same)
    table.finish()
    return result


def _has_clauses(cluster: ClusterSpec, host: HostSpec,
                 storage: tuple[StorageSpec, ...]) -> bool:
    """Whether host or storage promise something (a shared filesystem alone does not)."""
    same = host.same_software and len(cluster.nodes) > 1
    measured = [c for fs in storage for c in fs.clauses if isinstance(c, Clause)]
    return same or bool(host.clauses or host.software or measured)


def _below_one(raw: object) -> float:
    value = parse_quantity(raw, Dim.FRACTION).value
    if value >= 1:
        raise UnitError(f"expected a share below 100% like '5%', got {raw!r}")
    return value


def _shares(ctx: Ctx, node: Node | None, section: str) -> tuple[dict[str, float | None], int]:
    """A section of shares below 100% (its declared keys), each None when left out, and
    the line it starts at (0: the spec leaves it out)."""
    table = section_map(ctx, node, section)
    if table is None or node is None:
        return {}, 0
    found = {key: field(ctx, table.take(key), f"{section}.{key}", _below_one)
             for key in keys(section)}
    table.finish()
    return found, node.start_mark.line + 1


def _baseline(ctx: Ctx, node: Node | None) -> BaselineSpec:
    """`baseline: {tolerance: 5%}`: how much worse than the baseline run a figure may be."""
    found, line = _shares(ctx, node, "baseline")
    if not line:
        return BaselineSpec()
    return BaselineSpec(or_default(found["tolerance"], 0.05), line)


def _soak(ctx: Ctx, node: Node | None) -> SoakSpec:
    """`soak: {spread: 5%, drop: 10%}`: how steady a soak's figures must stay."""
    found, line = _shares(ctx, node, "soak")
    if not line:
        return SoakSpec()
    return SoakSpec(or_default(found["spread"], 0.05), or_default(found["drop"], 0.10), line)


class Sofar:
    """What the sections parsed so far give the ones after them: the cluster (its launcher,
    its nodes: a SLURM allocation's with `slurm: {allocation: true}`) and each section's
    record by name."""

    def __init__(self, top: Map) -> None:
        self.top = top  # the spec's top-level map (a section may peek at another's node)
        self.written = frozenset(top.items)  # the sections the spec has
        self.cluster = ClusterSpec("", (), "local", "python3", 600.0, 64)
        self.records: dict[str, Any] = {}

    def record(self, name: str) -> Any:
        return self.records.get(name)


def _declared_only(ctx: Ctx, node: Node | None, name: str) -> SectionSpec | None:
    """A section without a parser of its own: a map of its declared clauses, each parsed as
    declared (spec/clauses.py), into a SectionSpec; None when the spec leaves it out."""
    table = section_map(ctx, node, name)
    if table is None:
        return None
    record = SectionSpec(name, promises(ctx, table, name))
    table.finish()
    return record


@dataclass(frozen=True)
class Section:
    """One section of the spec, declared once: its key, its parser (the node, None when
    absent; it returns the Spec's field of the same name) and the probes whose results its
    clauses are checked against. The loader and `promised` iterate SECTIONS; a section's
    clauses are declared in clauses.py under its name.

    A section without a parser (`parse` None) is a map of its declared clauses, parsed as
    declared, and its record a SectionSpec in `Spec.others`: adding one takes its clauses,
    this line, its probe and its acceptance module (README: how to add a spec section)."""

    name: str
    parse: Callable[[Ctx, Node | None, Sofar], object] | None = None
    probes: tuple[str, ...] = ()
    keep_null: bool = False  # `sim:` with nothing under it is a section (a healthy cluster)
    checked: bool = False  # its clauses are checked: given alone, it is something to test

    def read(self, ctx: Ctx, node: Node | None, sofar: Sofar) -> object:
        """The section's record from its node (None when the spec leaves it out)."""
        if self.parse is None:
            return _declared_only(ctx, node, self.name)
        return self.parse(ctx, node, sofar)


def _cluster_section(ctx: Ctx, node: Node | None, sofar: Sofar) -> ClusterSpec:
    """The cluster; with `slurm: {allocation: true}` and the slurm launcher, its nodes are
    the SLURM allocation's (read before any section that counts the nodes)."""
    slurm_node = sofar.top.items.get("slurm", (None, None))[1]
    allocation = wants_allocation(slurm_node)
    cluster = _cluster(ctx, node, allocation)
    if allocation and KINDS[cluster.launcher].section == "slurm":
        cluster = dataclasses.replace(cluster, nodes=allocation_nodes(ctx, slurm_node))
    sofar.cluster = cluster
    return cluster


def _storage_section(ctx: Ctx, node: Node | None, sofar: Sofar) -> tuple[StorageSpec, ...]:
    return parse_storage(ctx, node, sofar.cluster, "gpus" in sofar.top.items)


#: Our sections of the spec, in the order they are parsed (a section reads what those
#: before it gave) and error messages list them. Each is a field of Spec of the same name.
_BUILTIN: tuple[Section, ...] = (
    Section("cluster", _cluster_section, ("inventory",)),
    Section("host", lambda ctx, node, _: _host(ctx, node), ("host",)),
    Section("storage", _storage_section, ("storage", "import_latency", "shared_fs")),
    Section("gpus", lambda ctx, node, _: parse_gpus(ctx, node), ("gpu", "gpu_perf"),
            checked=True),
    Section("interconnect", lambda ctx, node, sofar: parse_interconnect(
        ctx, node, sofar.cluster, sofar.record("gpus")), ("job_node", "nccl_tests"),
        checked=True),
    Section("sim", lambda ctx, node, sofar: parse_sim(ctx, node, sofar.cluster),
            keep_null=True),
    Section("ssh", lambda ctx, node, sofar: parse_ssh(ctx, node, sofar.cluster)),
    Section("slurm", lambda ctx, node, sofar: parse_slurm(ctx, node, sofar.cluster)),
    Section("baseline", lambda ctx, node, _: _baseline(ctx, node)),
    Section("sla", lambda ctx, node, _: parse_sla(ctx, node)),
    Section("soak", lambda ctx, node, _: _soak(ctx, node)),
    Section("training", lambda ctx, node, sofar: parse_training(
        ctx, node, sofar.cluster, sofar.record("gpus")), ("job_node",), checked=True),
    Section("fabric", lambda ctx, node, sofar: parse_fabric(
        ctx, node, "interconnect" in sofar.written), ("nic",), checked=True),
)
#: The spec's sections, the one registry of them: ours, then those of the installed
#: extensions once they are loaded (spec/extensions.py), each a map of its declared clauses
#: (Spec.others).
SECTIONS: list[Section] = list(_BUILTIN)
BY_NAME = {section.name: section for section in SECTIONS}
#: The top-level keys, in the order error messages list them.
LISTED: list[str] = list(BY_NAME)


@adds_to
def _add_extensions() -> None:
    new = free(((s.name, Section(s.name, None, s.probes, checked=s.checked))
                for s in added_sections()), BY_NAME, "the spec's sections")
    SECTIONS.extend(new.values())
    BY_NAME.update(new)
    LISTED.extend(new)


def parse_spec(text: str, file: str) -> Spec:
    """Validate spec text; raise SpecError listing every problem found."""
    ctx = Ctx(file)
    root = compose(text, file)
    if root is None:
        raise SpecError("the spec is empty; it needs at least a cluster section "
                        "with name and nodes", file=file)
    if not isinstance(root, MappingNode):
        got = kind(root) if not isinstance(root, ScalarNode) else "a scalar"
        raise SpecError(f"the spec must be a map of its sections ({', '.join(LISTED)}); got "
                        f"{got} (is this file a spec?)", file=file, line=root.start_mark.line + 1)
    top = Map(ctx, root, "", tuple(LISTED))
    sofar = Sofar(top)
    for section in SECTIONS:
        sofar.records[section.name] = section.read(
            ctx, top.take(section.name, keep_null=section.keep_null), sofar)
    top.finish()
    records = sofar.records
    if not ctx.count and all(records[s.name] is None for s in SECTIONS if s.checked) \
            and not _has_clauses(records["cluster"], records["host"], records["storage"]):
        raise SpecError("nothing to test: the spec has no host, storage, gpus or "
                        "interconnect clauses (see examples/trial.yaml)", file=file)
    if ctx.count:
        if ctx.count == 1:
            raise ctx.errors[0]
        raise SpecError.listing(ctx.in_order(), file, ctx.count)
    sha = hashlib.sha256(text.encode()).hexdigest()
    warnings = tuple(SpecNote(w.file, w.line, w.path, w.detail)
                     for w in sorted(ctx.warnings, key=lambda w: w.line or 0))
    others = tuple(record for name, record in records.items()
                   if name not in SECTION_FIELDS and isinstance(record, SectionSpec))
    fields = {name: record for name, record in records.items() if name in SECTION_FIELDS}
    return Spec(file=file, sha256=sha, warnings=warnings, text=text, others=others, **fields)


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"))


def _not_a_file(mode: int) -> str | None:
    """What a file of `mode` is, if it is not a regular file."""
    for test, what in _KINDS:
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) else "not a regular file"


def _read(name: str) -> bytes:
    """The spec file's bytes: a regular file only (a FIFO, /dev/zero or a directory is
    refused before it is read), and never more than MAX_SPEC_BYTES + 1 of them."""
    what = _not_a_file(os.stat(name).st_mode)
    if what is None:
        # O_NONBLOCK: if the path was swapped for a FIFO since, opening does not wait
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            what = _not_a_file(os.fstat(fd).st_mode)
            if what is None:
                return handle.read(MAX_SPEC_BYTES + 1)
    raise SpecError(f"is {what}, expected a YAML spec file", file=name)


def load_spec(path: str | os.PathLike[str]) -> Spec:
    """Read and validate the spec file at `path`."""
    name = str(path)
    try:
        data = _read(name)
    except FileNotFoundError:
        raise SpecError("no such file", file=name) from None
    except PermissionError:
        raise SpecError("permission denied", file=name) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SpecError(f"cannot read: {reason}", file=name) from None
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError("is larger than 4 MiB; is this really a spec?", file=name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"not UTF-8 text (byte {exc.start})", file=name) from None
    return parse_spec(text, name)
