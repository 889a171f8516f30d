"""The kill switch: a small YAML file (`--cluster-disable=FILE`, or the environment's
PYTEST_CLUSTER_DISABLE, for a prolog) that turns clauses off fleet-wide, each entry with
why and until when:

    disabled:
      - clause: gpus.row_remap      # a clause's id, as its `clause` marker names it
        reason: "false positives on driver 550.54 (ticket OPS-1234)"
        until: 2026-12-31           # a date (through that day, UTC) or a UTC time

Read as strictly as a spec (contract/reading/: bounded, every problem at its line, the key
and what was expected): a clause that is not declared (a fault code is no clause id), a
reason or until missing, a date that is none, a key not known. An entry whose `until` has
passed is expired: the run ignores it (the clause runs) and says so. An empty file, or
`disabled:` with nothing, disables nothing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from pytest_cluster.contract.clauses import CLAUSES
from pytest_cluster.contract.reading.compose import compose, read_text
from pytest_cluster.contract.reading.located_errors import Ctx
from pytest_cluster.contract.reading.mapping import Map
from pytest_cluster.contract.reading.spelling import closest
from pytest_cluster.contract.reading.yaml_nodes import kind
from pytest_cluster.errors import SpecError, head

if TYPE_CHECKING:
    import os

#: The environment variable a prolog sets where it cannot add an option (the option wins).
ENV = "PYTEST_CLUSTER_DISABLE"
#: A disable file is a few lines: more than this many bytes is no disable file.
MAX_BYTES = 64 * 2**10
MAX_ENTRIES = 200
MAX_REASON = 300
KEYS = ("clause", "reason", "until")
#: What `until` may be: a date, or a time on a date (seconds and an offset optional).
_WHEN = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:\d{2})?)?")
_EXPECTED_WHEN = ("a date (2026-12-31: through that day, UTC) or a UTC time "
                  "(2026-12-31T18:00:00Z)")


@dataclass(frozen=True)
class Disabled:
    """One clause turned off: its id, why, until when (as said: '2026-12-31' or
    '2026-12-31T18:00:00Z'), the epoch second it stops holding, its line in the file."""

    clause: str
    reason: str
    until: str
    ends: float = math.inf
    line: int = 0

    def expired(self, now: float) -> bool:
        return now >= self.ends

    @property
    def said(self) -> str:
        """How each of its cases is recorded (a skip's message)."""
        return f"disabled: {self.reason}, until {self.until}"


@dataclass(frozen=True)
class DisableFile:
    """A disable file read: its entries, in the file's order."""

    file: str
    entries: tuple[Disabled, ...] = ()

    def in_force(self, now: float) -> tuple[Disabled, ...]:
        return tuple(entry for entry in self.entries if not entry.expired(now))

    def expired(self, now: float) -> tuple[Disabled, ...]:
        return tuple(entry for entry in self.entries if entry.expired(now))


def clause_ids() -> tuple[str, ...]:
    """The ids a disable file may name: every declared clause (settings are none), the
    installed extensions' among them once they are loaded."""
    return tuple(d.id for d in CLAUSES if d.is_clause)


def load(path: str | os.PathLike[str]) -> DisableFile:
    """Read and validate the disable file at `path`; SpecError listing every problem."""
    return parse(read_text(path, MAX_BYTES, "disable file"), str(path))


def parse(text: str, file: str) -> DisableFile:
    """Validate a disable file's text; SpecError listing every problem, each at its line."""
    ctx = Ctx(file)
    root = compose(text, file)
    if root is None:
        return DisableFile(file)
    top = Map(ctx, root, "", ("disabled",))
    given = "disabled" in top.items
    listed = top.take("disabled")
    if isinstance(root, MappingNode) and not given:
        ctx.error(root, "disabled", "missing: expected `disabled:` and a list of entries "
                  "(clause, reason, until)")
    top.finish()
    entries: list[Disabled] = []
    if listed is not None and not isinstance(listed, SequenceNode):
        ctx.error(listed, "disabled", f"expected a list of entries (clause, reason, until), "
                  f"got {kind(listed)}")
    elif listed is not None and len(listed.value) > MAX_ENTRIES:
        ctx.error(listed, "disabled", f"{len(listed.value)} entries, more than "
                  f"{MAX_ENTRIES}: is this a disable file?")
    elif listed is not None:
        first: dict[str, int] = {}
        for index, item in enumerate(listed.value):
            entry = _entry(ctx, item, f"disabled[{index}]")
            if entry is None:
                continue
            if entry.clause in first:
                ctx.error(item, f"disabled[{index}].clause", f"{entry.clause} is disabled "
                          f"twice (first on line {first[entry.clause]}): one entry each")
                continue
            first[entry.clause] = entry.line
            entries.append(entry)
    if ctx.count == 1:
        raise ctx.errors[0]
    if ctx.count:
        raise SpecError.listing(ctx.in_order(), file, ctx.count, of="the disable file")
    return DisableFile(file, tuple(entries))


def _entry(ctx: Ctx, node: Node, path: str) -> Disabled | None:
    """One entry of `disabled:`, or None where it has a problem (each recorded)."""
    table = Map(ctx, node, path, KEYS)
    if not isinstance(node, MappingNode):
        return None
    before = ctx.count
    values = {key: table.take(key) for key in KEYS}
    table.finish()
    for key, value in values.items():
        if value is None:
            ctx.error(node, f"{path}.{key}", f"missing: expected {_EXPECTED[key]}")
    clause = _clause(ctx, values["clause"], f"{path}.clause")
    reason = _reason(ctx, values["reason"], f"{path}.reason")
    until = _until(ctx, values["until"], f"{path}.until")
    if ctx.count > before or clause is None or reason is None or until is None:
        return None
    return Disabled(clause, reason, until[0], until[1], node.start_mark.line + 1)


_EXPECTED = {"clause": "the id of a clause to turn off (e.g. gpus.row_remap)",
             "reason": "why it is turned off, one line (e.g. a ticket)",
             "until": _EXPECTED_WHEN}


def _text(ctx: Ctx, node: Node | None, path: str) -> str | None:
    """A scalar's text as written; None (said) for a map or a list."""
    if node is None:
        return None
    if not isinstance(node, ScalarNode):
        ctx.error(node, path, f"expected {_EXPECTED[path.rpartition('.')[2]]}, got "
                  f"{kind(node)}")
        return None
    return str(node.value)


def _clause(ctx: Ctx, node: Node | None, path: str) -> str | None:
    name = _text(ctx, node, path)
    if name is None or node is None:
        return None
    known = clause_ids()
    if name in known:
        return name
    if name.startswith("PC-"):
        ctx.error(node, path, f"{head(name, 60)!r} is a fault code, not a clause: name the "
                  "clause it belongs to (e.g. gpus.row_remap)")
        return None
    close = closest(name, known, cutoff=0.6) if len(name) <= 100 else None
    hint = f"; did you mean {close!r}?" if close else ""
    ctx.error(node, path, f"no clause {head(name, 60)!r}{hint} (a clause's id, as its "
              "`clause` marker names it: docs/spec.md lists them)")
    return None


def _reason(ctx: Ctx, node: Node | None, path: str) -> str | None:
    text = _text(ctx, node, path)
    if text is None or node is None:
        return None
    text = text.strip()
    if not text or len(text) > MAX_REASON or not text.isprintable():
        ctx.error(node, path, f"expected why it is turned off: one line of printable text, "
                  f"1 to {MAX_REASON} characters (got {len(text)}"
                  + ("" if text.isprintable() else ", with control characters") + ")")
        return None
    return text


def _until(ctx: Ctx, node: Node | None, path: str) -> tuple[str, float] | None:
    """`until` as said ('2026-12-31', '2026-12-31T18:00:00Z') and when it stops holding:
    a date's next midnight, UTC; a time's instant (UTC where it names no offset)."""
    text = _text(ctx, node, path)
    if text is None or node is None:
        return None
    if _WHEN.fullmatch(text):
        try:
            if len(text) == 10:
                day = date.fromisoformat(text)
                midnight = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
                return day.isoformat(), (midnight + timedelta(days=1)).timestamp()
            # Python 3.10's fromisoformat reads no Z
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
            when = (when.replace(tzinfo=timezone.utc) if when.tzinfo is None
                    else when.astimezone(timezone.utc))
            return when.isoformat().replace("+00:00", "Z"), when.timestamp()
        except ValueError:
            pass
    ctx.error(node, path, f"expected {_EXPECTED_WHEN}, got {head(text, 60)!r}")
    return None
