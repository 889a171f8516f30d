"""`make docs`: rewrite every generated region of README.md and docs/*.md from the registries
it shows, so a table of the docs cannot drift from the code.

A region is delimited in the .md file by two lines, `<!-- generated: NAME -->` and
`<!-- end generated -->`; what lies between is REGIONS[NAME]() and nothing else (edit the
registry, or the function here, never the region). `python docs/generate.py --check` writes
nothing and exits 1 naming each region that is not current, and each key of the spec that
docs/spec.md does not describe in its section (tests/test_docs_generated.py runs it). Only
our own registries are shown: an installed extension is not loaded here.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from pytest_cluster.contract.clauses import CLAUSES
from pytest_cluster.contract.declaration import Declaration, Value
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.reading import profiles as shipped_profiles
from pytest_cluster.contract.sections import SECTIONS, sim
from pytest_cluster.evidence.verdict import blame, faults
from pytest_cluster.launchers.result import ErrorKind
from pytest_cluster.measure import plausible
from pytest_cluster.units import format_number

ROOT = Path(__file__).resolve().parent.parent
REGION = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- end generated -->)", re.S)
#: A generated table's cell is short; prose belongs outside the table.
MOST_CELL = 300


def documents() -> list[Path]:
    """The files whose regions are generated: README.md and docs/*.md."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A markdown table, as the docs write theirs (`|---|---|`); a `|` in a cell escaped."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |\n"
    return line(header) + "|" + "---|" * len(header) + "\n" + "".join(map(line, rows))


def code(text: str) -> str:
    return f"`{text}`"


def codes(texts: Iterable[str]) -> str:
    return ", ".join(map(code, texts)) or "-"


# -- the spec: sections and clauses (contract/sections/__init__.py SECTIONS, contract/clauses.py)

def sections() -> str:
    return table(
        ["Section", "Probes", "Given alone, something to test"],
        ([code(s.name), codes(s.probes), "yes" if s.checked else "no"] for s in SECTIONS))


def _written(d: Declaration) -> str:
    """What a key holds, in words."""
    if d.value is Value.QUANTITY and d.dim is not None:
        return f"{d.dim.label}, `{d.op}`"
    if d.value is Value.SETTING:
        return f"setting ({d.dim.label})" if d.dim is not None else "setting"
    if d.value is Value.MEMBERS and d.dim is not None:
        return f"{d.dim.label} per member"
    return str(d.value.value)


def _when(d: Declaration) -> str:
    notes = [d.level] if d.is_clause else []
    if d.is_clause and d.level_when is not None:  # the value written decides (dcgm_diag)
        notes = [f"{d.level} or above, by the value written"]
    if d.needs_nodes > 1:
        notes.append(f"{d.needs_nodes}+ nodes")
    if d.last:
        notes.append("after every other case")
    return ", ".join(notes) or "-"


def clauses() -> str:
    return table(
        ["Key", "Holds", "Default", "Level", "Members", "Test (made from it)"],
        ([code(d.id), _written(d), code(d.default) if d.default else "-", _when(d),
          codes(d.members), code(d.test) if d.table else "-"] for d in CLAUSES))


# -- launchers (contract/launchers.py KINDS) -----------------------------------------------

def _what_it_is(implementation: str) -> str:
    """The launcher module's first line after its colon: 'The ssh launcher: probes run on
    the nodes through the system OpenSSH client.'"""
    found = importlib.util.find_spec(implementation.partition(":")[0])
    if found is None or found.origin is None:
        return "-"
    doc = ast.get_docstring(ast.parse(Path(found.origin).read_text(encoding="utf-8"))) or ""
    first = doc.split("\n", 1)[0]
    return first.partition(": ")[2].rstrip(".") or first


def launchers() -> str:
    return table(
        ["Launcher", "What it is", "Section of its own", "Python on the nodes", "Cannot test"],
        ([code(k.name), _what_it_is(k.implementation),
          code(k.section) + (" (required)" if k.needs_section else "") if k.section else "-",
          code(k.python) if k.python else "the one running pytest",
          "; ".join(f"{what}: {why}" for what, why in
                    (("storage", k.no_storage), ("training", k.no_training)) if why) or "-"]
         for k in KINDS.values()))


def launchers_inline() -> str:
    """One line per launcher, for the README."""
    return "".join(f"- `{k.name}`: {_what_it_is(k.implementation)}\n" for k in KINDS.values())


# -- how a case fails without a number (launchers/result.py ErrorKind, evidence/verdict/blame.py)

#: What the verdict makes of each group of error kinds evidence/verdict/blame.py declares.
_KIND_GROUPS: tuple[tuple[frozenset[str], str], ...] = (
    (blame.NO_ANSWER, "no answer: UNREACHABLE where another node of the run answered"),
    (blame.CONTROLLER_SIDE, "this machine's fault: NOT CHECKED, never drained"),
    (blame.TOOL_ERROR, "the tool's, or the spec's: no node's fault, none drained"),
    (blame.NOT_MEASURED, "not measured: NOT CHECKED, neither node nor cluster failed"),
    (blame.NO_CULPRIT, "no culprit: a cluster failure, no node rejected"),
    (blame.NOT_ESTABLISHED, "not established: fails; rejects only through the silent "
                            "node's own verdict"),
    (blame.RAS_BLAMED, "the node's, as NCCL's RAS says (a rank DEAD): its case fails, and "
                       "the nodes it names (`culprits`); REJECTED"),
)


def error_kinds() -> str:
    kinds = [kind.value for kind in ErrorKind]
    kinds += sorted({kind for group, _ in _KIND_GROUPS for kind in group} - set(kinds))
    return table(
        ["`error_kind`", "What the verdict makes of it", "Fault code"],
        ([code(kind), "; ".join(said for group, said in _KIND_GROUPS if kind in group)
          or "the node's: its case fails, the node is REJECTED",
          ", ".join(code(f.fault.code) for name, f in faults.KINDS.items()
                    if name.partition("[")[0] == kind) or "its clause's"]
         for kind in kinds))


# -- fault codes (contract/clauses.py's faults, evidence/verdict/faults.py KINDS, DERIVED) --

_BELOW = {">=": "below", ">": "not above", "<=": "above", "<": "not below", "==": "not"}


def _means(d: Declaration) -> str:
    """What a clause's failure means, in words, from its declaration."""
    if d.text:
        return f"not held: {d.text}"
    if d.value is Value.VERSIONS:
        return "a version outside the promised bounds (the member names the package)"
    if d.value is Value.NAME:
        return f"not the promised {d.written_as}"
    what = d.key.replace("[", " (").replace("]", ")").replace("_", " ").replace(".", " ")
    return f"{what} {_BELOW.get(d.op, 'not')} the promise" + (
        " (each member)" if d.members else "")


def fault_codes() -> str:
    rows = [[code(d.fault.code), code(d.id), _means(d), d.fault.action, d.fault.actor.value]
            for d in CLAUSES if d.fault is not None]
    rows += [[code(f.fault.code), f"error kind {code(name)}", f.means, f.fault.action,
              f.fault.actor.value] for name, f in faults.KINDS.items()]
    rows += [[code(f.fault.code), code(name), f.means, f.fault.action, f.fault.actor.value]
             for name, f in faults.DERIVED.items()]
    return table(["Code", "Clause", "What it means", "Action", "Who acts"], rows)


# -- the simulated cluster's faults (contract/sections/sim.py)

def sim_faults() -> str:
    return textwrap.fill(f"Every key of a fault: {codes(sim.FAULT_KEYS)}.", 92,
                         break_long_words=False, break_on_hyphens=False) + "\n"


def sim_node_faults() -> str:
    return table(["Node fault", "What it changes"],
                 ([code(key), what] for key, what in sim.NODE_FAULTS.items()))


def sim_lies() -> str:
    return table(["`lies:`", "What the node reports instead"],
                 ([code(key), what] for key, what in sim.LIES.items()))


def sim_storage_errors() -> str:
    return table(["`storage_error:`", "Its text"],
                 ([code(key), what] for key, what in sim.STORAGE_ERRORS.items()))


# -- what a node may claim (measure/plausible.py) --------------------------------------------

_BINARY = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))
_DECIMAL_RATE = (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6))


def _amount(value: float, unit: str) -> str:
    """One end of a range as the docs say it: '64 TiB', '2^70 bytes', '100 TB/s',
    '2^64 - 1'; a number of another unit alone (the range says its unit once)."""
    if value == plausible.MOST_COUNT:
        return "2^64 - 1"
    if unit == "bytes" and value:
        if value >= 2**50 and int(value).bit_count() == 1:
            return f"2^{int(value).bit_length() - 1} bytes"
        name, size = next(((n, s) for n, s in _BINARY if value >= s and value % s == 0),
                          ("B", 1))
        return f"{format_number(value / size)} {name}"
    if unit == "bytes/s" and value:
        rate, per = next(((n, s) for n, s in _DECIMAL_RATE if value >= s), ("B/s", 1.0))
        return f"{format_number(value / per)} {rate}"
    return format_number(value)


def _plausible(limit: plausible.Range) -> str:
    unit = "" if limit.unit in ("", "bytes", "bytes/s") else f" {limit.unit}"
    return f"{_amount(limit.low, limit.unit)} to {_amount(limit.high, limit.unit)}{unit}" \
        + (", whole" if limit.whole else "")


def plausible_facts() -> str:
    rows = [[code(family), code(limit.field), _plausible(limit)]
            for family, limit in plausible.FACTS.items()]
    rows += [["every `fabric.*` clause", f"a port's {code(limit.field)}", _plausible(limit)]
             for limit in (*plausible.PORT_FIELDS, plausible.COUNTER)]
    return table(["Clause", "Field the node reports", "Plausible"], rows)


def profiles() -> str:
    """The shipped profiles (contract/profiles/*.yaml): each name, what it is, and the
    values it supplies as written (each cited in its file's `sources:`)."""
    found = []
    for name in shipped_profiles.names():
        profile = shipped_profiles.load(name)
        values = ", ".join(f"`{path}: {value}`"
                           for path, value in shipped_profiles.leaves(profile.root))
        found.append(f"- `{name}`: {profile.about}. Supplies {values}.")
    return "\n".join(found)


REGIONS: dict[str, Callable[[], str]] = {
    "sections": sections,
    "clauses": clauses,
    "launchers": launchers,
    "launchers-inline": launchers_inline,
    "error-kinds": error_kinds,
    "fault-codes": fault_codes,
    "sim-faults": sim_faults,
    "sim-node-faults": sim_node_faults,
    "sim-lies": sim_lies,
    "sim-storage-errors": sim_storage_errors,
    "plausible": plausible_facts,
    "profiles": profiles,
}


def regenerate(text: str, where: str = "") -> str:
    """`text` with each generated region rewritten; ValueError naming a region of no name
    REGIONS knows."""
    def one(match: re.Match[str]) -> str:
        name = match[2]
        if name not in REGIONS:
            raise ValueError(f"{where}: generated region {name!r}: none of {', '.join(REGIONS)}")
        return f"{match[1]}{REGIONS[name]()}{match[4]}"
    return REGION.sub(one, text)


def stale() -> list[str]:
    """The regions that are not current, as 'docs/spec.md: clauses'."""
    found = []
    for path in documents():
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT)
        new = regenerate(text, str(name))
        pairs = zip(REGION.finditer(text), REGION.finditer(new), strict=True)
        found += [f"{name}: {old[2]}" for old, now in pairs if old[0] != now[0]]
    return found


def undescribed(text: str) -> list[str]:
    """The keys a spec may write that `text` (docs/spec.md) does not describe in its
    section (its `## ` heading names it): named there as `key`, `key.member` or `key:`
    (within its map). The tables of keys with their meaning are prose, written by hand; this keeps a
    new key from going without one."""
    bodies: dict[str, str] = {}
    for part in re.split(r"^## ", text.split("\n## Every key", 1)[0], flags=re.M):
        for name in re.findall(r"`(\w+)`", part.split("\n", 1)[0]):
            bodies[name] = bodies.get(name, "") + part
    return [d.id for d in CLAUSES if d.written and not any(
        form in bodies.get(d.section, "")
        for form in (f"`{d.written_as}`", f"`{d.id}`", f"`{d.key}.", f"{d.written_as}:"))]


def main(argv: Sequence[str]) -> int:
    if "--check" in argv:
        found = [f"{line}: not current (run make docs)" for line in stale()]
        found += [f"docs/spec.md: {key} is not described in its section (write its row)"
                  for key in undescribed((ROOT / "docs" / "spec.md").read_text("utf-8"))]
        for line in found:
            print(line)
        return 1 if found else 0
    for path in documents():
        text = path.read_text(encoding="utf-8")
        new = regenerate(text, str(path.relative_to(ROOT)))
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
