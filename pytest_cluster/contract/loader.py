"""Load and validate a contract spec (trial.yaml) into frozen records.

Every problem becomes a SpecError naming the file, the line, the key path and what
was expected; all problems of a file are reported together.
"""

from __future__ import annotations

import hashlib
import os
import stat

from yaml.nodes import MappingNode, ScalarNode

from pytest_cluster.contract.model import (
    SECTION_FIELDS,
    Clause,
    ClusterSpec,
    HostSpec,
    SectionSpec,
    Spec,
    SpecNote,
    StorageSpec,
)
from pytest_cluster.contract.reading.compose import compose
from pytest_cluster.contract.reading.located_errors import Ctx
from pytest_cluster.contract.reading.mapping import Map
from pytest_cluster.contract.reading.yaml_nodes import kind
from pytest_cluster.contract.sections import LISTED, SECTIONS, Sofar
from pytest_cluster.errors import SpecError

MAX_SPEC_BYTES = 4 * 2**20

def _has_clauses(cluster: ClusterSpec, host: HostSpec,
                 storage: tuple[StorageSpec, ...]) -> bool:
    """Whether host or storage promise something (a shared filesystem alone does not)."""
    same = host.same_software and len(cluster.nodes) > 1
    measured = [c for fs in storage for c in fs.clauses if isinstance(c, Clause)]
    return same or bool(host.clauses or host.software or measured)



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


def _read(name: str, limit: int, what: str) -> bytes:
    """The file's bytes: a regular file only (a FIFO, /dev/zero or a directory is refused
    before it is read), and never more than `limit` + 1 of them."""
    kind = _not_a_file(os.stat(name).st_mode)
    if kind is None:
        # O_NONBLOCK: if the path was swapped for a FIFO since, opening does not wait
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            kind = _not_a_file(os.fstat(fd).st_mode)
            if kind is None:
                return handle.read(limit + 1)
    raise SpecError(f"is {kind}, expected a YAML {what} file", file=name)


def read_text(path: str | os.PathLike[str], limit: int = MAX_SPEC_BYTES,
              what: str = "spec") -> str:
    """The UTF-8 text of the YAML file at `path` (a spec, or a disable file: `what`), read
    as a regular file only, to `limit` bytes; SpecError naming the file where it cannot."""
    name = str(path)
    try:
        data = _read(name, limit, what)
    except FileNotFoundError:
        raise SpecError("no such file", file=name) from None
    except PermissionError:
        raise SpecError("permission denied", file=name) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SpecError(f"cannot read: {reason}", file=name) from None
    if len(data) > limit:
        size = f"{limit // 2**20} MiB" if limit >= 2**20 else f"{limit // 2**10} KiB"
        raise SpecError(f"is larger than {size}; is this really a {what}?", file=name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"not UTF-8 text (byte {exc.start})", file=name) from None


def load_spec(path: str | os.PathLike[str]) -> Spec:
    """Read and validate the spec file at `path`."""
    return parse_spec(read_text(path), str(path))
