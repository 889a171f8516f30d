"""The spec's storage section: a list of filesystems, each with its per-node clauses
(capacity, write, read, metadata, import torch), whether it is shared, and what the
cluster does with it at once (`checkpoint`: every node writing its share, then reading
another node's back).

    storage:
      - path: /shared
        shared: true
        checkpoint:
          size_per_gpu: 4 GiB           # or size_per_node: 32 GiB
          write: ">= 2 GB/s per GPU"    # or "per node", or the aggregate: ">= 100 GB/s"
          read: ">= 2 GB/s per GPU"
          keeps_up: 80%                 # the default; false leaves the rule out
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

from yaml.nodes import MappingNode, Node, SequenceNode

from pytest_cluster.contract.clauses import declared, keys
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import CheckpointSpec, Clause, DataloaderSpec, Rule, StorageSpec
from pytest_cluster.contract.reading.clause_parsers import flag, promises
from pytest_cluster.contract.reading.fields import (
    boolean,
    field,
    interpreter,
    or_default,
    shown_name,
    size_between,
    time_between,
    whole,
)
from pytest_cluster.contract.reading.mapping import Map
from pytest_cluster.contract.reading.yaml_nodes import kind
from pytest_cluster.contract.requirement import Requirement, parse_requirement
from pytest_cluster.errors import UnitError, head
from pytest_cluster.units import Dim, parse_quantity

if TYPE_CHECKING:
    from pytest_cluster.contract.model import ClusterSpec
    from pytest_cluster.contract.reading.located_errors import Ctx

T = TypeVar("T")

#: What a checkpoint bound may be per: `">= 2 GB/s per GPU"`, `"per node"`; none: the
#: cluster's aggregate.
_PER = re.compile(r"^(?P<bound>.*?)\s+per\s+(?P<per>gpu|node)\s*$", re.IGNORECASE)
#: What such a bound counts (its basis, as a result line records it: `basis`): the
#: cluster's aggregate, or that aggregate shared out per node or per GPU; how each is said.
BASES = {"cluster": "as the cluster's total", "node": "per node", "gpu": "per GPU"}
#: A test file's or a share's size: at least 1 MiB, at most what a test should write.
_SIZE = (2**20, 2**40, "from 1 MiB to 1 TiB")
_BLOCK = (2**16, 2**30, "from 64 KiB to 1 GiB")


def per_bound(raw: object, dim: Dim = Dim.RATE) -> tuple[Requirement, str]:
    """A bound and what it is per ('', 'node', 'gpu'): '>= 2 GB/s per GPU'. Its text is
    the whole of what the spec wrote, the basis included."""
    per = written = ""
    if isinstance(raw, str) and (match := _PER.match(raw)) is not None:
        written, raw, per = raw.strip(), match["bound"], match["per"].lower()
    try:
        found = parse_requirement(raw, dim)
        if per:
            found = replace(found, text=written, per=BASES[per])
        return found, per
    except UnitError as exc:
        example = dim.example.strip("'")
        raise UnitError(f"{exc}; per GPU, per node or the cluster's aggregate: "
                        f"'>= {example} per GPU', '>= {example} per node', "
                        f"'>= {example}'") from None


@dataclass(frozen=True)
class Share:
    """What an aggregate of every node at once (a checkpoint burst, a data loader's
    reads) is shared out over where its bound is per node or per GPU: `count`, the
    divisor (1: the cluster's own), and `over`, that in words ('' for the cluster's)."""

    count: int
    per: str  # 'per GPU', 'per node'; '' for the cluster's
    over: str  # '16 GPU(s) (2 node(s) x gpus.count 8)', '2 node(s)'; ''


def shared_over(basis: str, nodes: int, gpus_per_node: int | None) -> Share:
    """A bound's basis ('', 'node', 'gpu') over the `nodes` that took part: per node,
    those nodes; per GPU, their GPUs, the spec's gpus.count on each (`gpus_per_node`),
    never the writers or loader workers a node ran (a data loader's `workers` is set
    apart from its GPUs)."""
    if basis == "node":
        return Share(nodes, BASES[basis], f"{nodes} node(s)")
    if basis == "gpu":
        if not gpus_per_node:
            raise ValueError("a bound per GPU needs the gpus section (how many GPUs each "
                             "node has)")
        return Share(nodes * gpus_per_node, BASES[basis],
                     f"{nodes * gpus_per_node} GPU(s) "
                     f"({nodes} node(s) x gpus.count {gpus_per_node})")
    return Share(1, "", "")


def _share(raw: object) -> float:
    """keeps_up: a share of the nodes' median, from 1% to 100%; false: 0 (no rule)."""
    if raw is False:
        return 0.0
    if isinstance(raw, str) and raw.rstrip().endswith("%"):
        value = parse_quantity(raw, Dim.FRACTION).value
    elif isinstance(raw, float) and not isinstance(raw, bool):
        value = raw
    else:
        raise UnitError(f"expected a share of the nodes' median like 80% (or false), "
                        f"got {head(str(raw), 64)!r}")
    if not 0.01 <= value <= 1.0:
        raise UnitError(f"expected a share from 1% to 100%, got {head(str(raw), 64)!r}")
    return value


def _at_once(ctx: Ctx, table: Map, path: str, where: str, names: tuple[str, ...],
             gpus: bool) -> tuple[list[Clause | Rule], list[tuple[str, str]]]:
    """The bounds of a map of what every node does at once (checkpoint.write, ...), each
    the cluster's aggregate or per node or per GPU: their clauses and what each is per."""
    found: list[Clause | Rule] = []
    basis: list[tuple[str, str]] = []
    for key in names:
        declaration = declared(f"storage.{key}")
        written = declaration.written_as
        bound_node = table.take(written)
        dim = declaration.dim or Dim.RATE

        def parse(raw: object, dim: Dim = dim) -> tuple[Requirement, str]:
            return per_bound(raw, dim)

        parsed = field(ctx, bound_node, f"{path}.{written}", parse)
        if parsed is None or bound_node is None:
            continue
        requirement, on = parsed
        if on == "gpu" and not gpus:
            ctx.error(bound_node, f"{path}.{written}", "a bound per GPU needs the gpus "
                      "section (how many GPUs each node has)")
        found.append(Clause(declaration.name(where), bound_node.start_mark.line + 1,
                            requirement))
        basis.append((key, on))
    return found, basis


def _keeps_up(ctx: Ctx, table: Map, path: str, where: str,
              within: str) -> tuple[float, list[Clause | Rule]]:
    """`keeps_up`: the share of the nodes' median each node must reach (default 80%;
    false: 0, no rule) and its rule."""
    keeps = declared(f"storage.{within}.keeps_up")
    keeps_node = table.take(keeps.written_as)
    share = 0.8 if keeps_node is None else field(ctx, keeps_node, f"{path}.keeps_up", _share)
    if not share:
        return 0.0, []
    words = keeps.text.replace("(80%)", f"({share:.0%})")
    return share, [Rule(keeps.name(where), keeps_node.start_mark.line + 1
                        if keeps_node is not None else 0, words)]


def _checkpoint(ctx: Ctx, node: Node, path: str, where: str, shared: bool | None,
                gpus: bool) -> tuple[CheckpointSpec | None, tuple[Clause | Rule, ...]]:
    """storage[].checkpoint: its settings and its promises (write, read, keeps_up)."""
    table = Map(ctx, node, path, keys("storage", "checkpoint"))
    if not isinstance(node, MappingNode):
        return None, ()
    low, high, shown = _SIZE
    size_node = {k: table.take(k) for k in ("size_per_gpu", "size_per_node")}
    given = {k: n for k, n in size_node.items() if n is not None}
    if len(given) != 1:
        ctx.error(node, f"{path}.size_per_gpu", "expected one of size_per_gpu (each GPU's "
                  "shard) or size_per_node (each node's share)"
                  + (", not both" if given else ""))
    per, size = "node", None
    for key, value in given.items():
        per = "gpu" if key == "size_per_gpu" else "node"
        size = field(ctx, value, f"{path}.{key}", size_between(low, high, shown))
        if per == "gpu" and not gpus:
            ctx.error(value, f"{path}.{key}", "needs the gpus section (how many GPUs "
                      "each node has); or size_per_node")
    block = field(ctx, table.take("block_size"), f"{path}.block_size", size_between(*_BLOCK))
    timeout = field(ctx, table.take("timeout"), f"{path}.timeout",
                    time_between(10, 24 * 3600, "from 10 s to 24 h"))
    found, basis = _at_once(ctx, table, path, where, ("checkpoint.write", "checkpoint.read"),
                            gpus)
    share, keeps = _keeps_up(ctx, table, path, where, "checkpoint")
    found.extend(keeps)
    if shared is not True:
        ctx.error(node, path, "a checkpoint is written and read back by every node at once "
                  "on a shared filesystem: needs shared: true")
    table.finish()
    spec = CheckpointSpec(size_bytes=or_default(size, 2**30), per=per,
                          block_bytes=or_default(block, 16 * 2**20), basis=tuple(basis),
                          keeps_up=share, timeout_s=or_default(timeout, 1800.0))
    return spec, tuple(found)


def _dataloader(ctx: Ctx, node: Node, path: str, where: str, shared: bool | None,
                gpus: bool) -> tuple[DataloaderSpec | None, tuple[Clause | Rule, ...]]:
    """storage[].dataloader: its settings and its promises (iops, read, metadata,
    keeps_up)."""
    table = Map(ctx, node, path, keys("storage", "dataloader"))
    if not isinstance(node, MappingNode):
        return None, ()

    def setting(key: str, parse: Callable[[object], T]) -> T | None:
        return field(ctx, table.take(key), f"{path}.{key}", parse)

    read_size = setting("read_size", size_between(512, 2**26, "from 512 B to 64 MiB"))
    if read_size is not None and read_size % 512:
        ctx.error(node, f"{path}.read_size", "expected a whole number of 512-byte sectors "
                  f"(a direct read's unit), got {read_size} bytes")
    size = setting("size_per_node", size_between(*_SIZE))
    duration = setting("duration", time_between(1, 3600, "from 1 s to 1 h"))
    workers = setting("workers", whole(1, 256))
    files = setting("metadata_files", whole(1, 10**6))
    timeout = setting("timeout", time_between(10, 24 * 3600, "from 10 s to 24 h"))
    found, basis = _at_once(ctx, table, path, where, ("dataloader.iops", "dataloader.read",
                                                      "dataloader.metadata"), gpus)
    share, keeps = _keeps_up(ctx, table, path, where, "dataloader")
    found.extend(keeps)
    if shared is not True:
        ctx.error(node, path, "the data loader reads every node's files from every node at "
                  "once on a shared filesystem: needs shared: true")
    table.finish()
    defaults = DataloaderSpec()
    spec = DataloaderSpec(
        read_size=or_default(read_size, defaults.read_size),
        size_per_node=or_default(size, defaults.size_per_node),
        duration_s=or_default(duration, defaults.duration_s),
        workers=or_default(workers, 0), metadata_files=or_default(files, 1000),
        basis=tuple(basis), keeps_up=share, timeout_s=or_default(timeout, 1800.0))
    return spec, tuple(found)


#: A filesystem's path as every view shows it (in clause names, so in reasons and in
#: drain lines): printable characters only (no newline to break a line a shell reads).
_PATH = shown_name("an absolute path like /data", 4096)


def _absolute(raw: object) -> str:
    value = _PATH(raw)
    if not value.startswith("/"):
        raise UnitError(f"expected an absolute path like /data, got {head(value, 64)!r}")
    return os.path.normpath(value)


def _filesystem(ctx: Ctx, node: Node, index: int, default_python: str,
                gpus: bool) -> StorageSpec | None:
    table = Map(ctx, node, f"storage[{index}]", keys("storage"))
    if not isinstance(node, MappingNode):
        return None
    fs_path = field(ctx, table.take("path"), table.sub("path"), _absolute)
    if fs_path is None and not ctx.failed(table.sub("path")):
        ctx.error(node, table.sub("path"), "missing: which filesystem path to test")
    if fs_path is not None:  # from here on the filesystem is named by its path
        table.path = f"storage[{fs_path}]"

    def setting(key: str, parse: Callable[[object], T]) -> T | None:
        return field(ctx, table.take(key), table.sub(key), parse)

    where = or_default(fs_path, str(index))
    shared, shared_rule = flag(ctx, table, declared("storage.shared"), where)
    python = setting("python", interpreter)
    io_size = setting("io_size", size_between(*_SIZE))
    files = setting("metadata_files", whole(1, 10**6))
    repeats = setting("import_repeats", whole(1, 100))
    cold = setting("cold_cache", boolean)
    checkpoint_node = table.take("checkpoint")
    checkpoint, at_once = _checkpoint(ctx, checkpoint_node, table.sub("checkpoint"), where,
                                      shared, gpus) if checkpoint_node is not None \
        else (None, ())
    loader_node = table.take("dataloader")
    dataloader, reads = _dataloader(ctx, loader_node, table.sub("dataloader"), where,
                                    shared, gpus) if loader_node is not None else (None, ())
    found = promises(ctx, table, "storage", where)
    result = StorageSpec(
        path=or_default(fs_path, ""),
        index=index,
        shared=bool(shared),
        python=or_default(python, default_python),
        io_size_bytes=or_default(io_size, 2**30),
        metadata_files=or_default(files, 2000),
        import_repeats=or_default(repeats, 3),
        cold_cache=True if cold is None else cold,
        clauses=(*(() if shared_rule is None else (shared_rule,)), *found, *at_once, *reads),
        checkpoint=checkpoint, dataloader=dataloader,
    )
    table.finish()
    return result


#: The keys of a filesystem a launcher that cannot test one node's disk (the sim) may
#: still have: what the whole cluster does with a shared filesystem.
AT_ONCE = ("path", "shared", "checkpoint", "dataloader")


def _per_node(node: Node) -> list[tuple[Node, str]]:
    """The keys of a filesystem's map that test one node's disk (not AT_ONCE)."""
    if not isinstance(node, MappingNode):
        return []
    return [(key, str(key.value)) for key, _ in node.value
            if str(getattr(key, "value", "")) not in AT_ONCE]


def parse_storage(ctx: Ctx, node: Node | None, cluster: ClusterSpec,
                  gpus: bool) -> tuple[StorageSpec, ...]:
    """The storage section (None: the spec has none); `gpus`: the spec has a gpus
    section (per-GPU sizes and bounds need its count)."""
    if node is None:
        return ()
    if not isinstance(node, SequenceNode):
        ctx.error(node, "storage", f"expected a list of filesystems (- path: /data ...), "
                  f"got {kind(node)}")
        return ()
    no_storage = KINDS[cluster.launcher].no_storage
    found: dict[str, StorageSpec] = {}
    for index, item in enumerate(node.value):
        fs = _filesystem(ctx, item, index, cluster.python, gpus)
        if no_storage is not None:
            named = f"storage[{fs.path}]" if fs is not None and fs.path else f"storage[{index}]"
            for key_node, key in _per_node(item)[:1]:
                ctx.error(key_node, f"{named}.{key[:64]}",
                          f"the {cluster.launcher} launcher {no_storage}: only "
                          f"{', '.join(AT_ONCE)} (test a node's disk with launcher: "
                          "local, ssh or slurm)")
        if fs is None:
            continue
        if fs.path in found:
            ctx.error(item, f"storage[{index}].path", f"{fs.path} is listed twice")
            continue
        found[fs.path or f"[{index}]"] = fs
    return tuple(found.values())
