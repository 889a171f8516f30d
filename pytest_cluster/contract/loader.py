"""Load and validate a contract spec (trial.yaml) into frozen records.

Every problem becomes a SpecError naming the file, the line, the key path and what
was expected; all problems of a file are reported together.
"""

from __future__ import annotations

import hashlib
import os

from yaml.nodes import MappingNode, Node, ScalarNode

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
from pytest_cluster.contract.reading import profiles
from pytest_cluster.contract.reading.compose import compose, read_text
from pytest_cluster.contract.reading.fields import field
from pytest_cluster.contract.reading.located_errors import Ctx
from pytest_cluster.contract.reading.mapping import Map
from pytest_cluster.contract.reading.yaml_nodes import kind, scalar
from pytest_cluster.contract.sections import LISTED, SECTIONS, Sofar
from pytest_cluster.errors import SpecError

MAX_SPEC_BYTES = 4 * 2**20

def _has_clauses(cluster: ClusterSpec, host: HostSpec,
                 storage: tuple[StorageSpec, ...]) -> bool:
    """Whether host or storage promise something (a shared filesystem alone does not)."""
    same = host.same_software and len(cluster.nodes) > 1
    measured = [c for fs in storage for c in fs.clauses if isinstance(c, Clause)]
    return same or bool(host.clauses or host.software or measured)


def _extended(ctx: Ctx, root: MappingNode) -> tuple[MappingNode, str]:
    """The spec's top-level map with the profile its `extends` names under it
    (profiles.merged), and that name ('' without one, or when the name is wrong: said as
    the spec's error, at its line)."""
    pairs = [(key, value) for key, value in root.value
             if not (isinstance(key, ScalarNode) and scalar(key) == profiles.EXTENDS)]
    given = [value for key, value in root.value if len(pairs) < len(root.value)
             and isinstance(key, ScalarNode) and scalar(key) == profiles.EXTENDS]
    own = MappingNode(root.tag, pairs, root.start_mark, root.end_mark)
    if not given:
        return own, ""
    if len(given) > 1:
        ctx.error(given[1], profiles.EXTENDS, "given twice: a spec extends one profile")
    name = field(ctx, given[0], profiles.EXTENDS, profiles.named)
    if name is None:
        return own, ""
    ctx.profile, ctx.extends = profiles.load(name), given[0]
    top: Node = profiles.merged(ctx.profile.root, own)
    assert isinstance(top, MappingNode)
    return top, name


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
    root, extends = _extended(ctx, root)
    top = Map(ctx, root, "", tuple(LISTED))  # `extends` taken (_extended)
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
    return Spec(file=file, sha256=sha, warnings=warnings, text=text, others=others,
                extends=extends, off=tuple(sorted(ctx.off.items())), **fields)


def load_spec(path: str | os.PathLike[str]) -> Spec:
    """Read and validate the spec file at `path`."""
    return parse_spec(read_text(path, MAX_SPEC_BYTES), str(path))
