"""Load and validate a contract spec (trial.yaml) into frozen records.

Every problem becomes a SpecError naming the file, the line, the key path and what
was expected; all problems of a file are reported together.
"""

from __future__ import annotations

import hashlib
import os

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
from pytest_cluster.contract.reading.compose import compose, read_text
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


def load_spec(path: str | os.PathLike[str]) -> Spec:
    """Read and validate the spec file at `path`."""
    return parse_spec(read_text(path, MAX_SPEC_BYTES), str(path))
