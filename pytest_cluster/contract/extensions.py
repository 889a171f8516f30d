"""Extensions: what an installed package adds to pytest-cluster - launchers, spec sections
with their clauses and probes, the simulated cluster's answers to those probes - without a
change here. A package names an `Extension` in the entry point group
`pytest_cluster.extensions` of its metadata:

    [project.entry-points."pytest_cluster.extensions"]
    bmc = "bmc_checks:EXTENSION"

Extensions are loaded by `load`, which a run with `--cluster` asks for before it reads the
spec: a plain pytest run in the same environment never imports one. Each registry holds
ours from its import on and adds the extensions' entries in place once they are loaded
(`adds_to`: contract/clauses.py CLAUSES, contract/launchers.py KINDS, contract/sections/__init__.py
SECTIONS,
probes PROBES, sim/answers.py PROBES), so everything that derives from a registry derives
from them too: the spec's keys and errors, the tests made from the clauses
(acceptance/test_extensions.py), the selection, the evidence and the reports.

Another party's code is not trusted to behave. Each extension's module is imported by
guarded.run: whatever it raises (SystemExit and KeyboardInterrupt included) is caught, an
import that runs past LOAD_LIMIT_S is stopped (SIGALRM, where there is one), and what it
prints is taken, counted and cut to an excerpt. One that cannot be loaded, is not an
Extension, repeats a name or ships a probe file that cannot be read (not a regular file,
over MAX_PROBE_BYTES, not UTF-8) is left out, and said once, one bounded line naming its
entry point and distribution (`problems`); the run goes on without it, and a spec that
needed what it would have declared is refused naming it (run/configure.py).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, TypeVar

from pytest_cluster.contract import guarded
from pytest_cluster.contract.declaration import Declaration
from pytest_cluster.contract.launcher_kind import LauncherKind
from pytest_cluster.errors import BadAnswer

GROUP = "pytest_cluster.extensions"
#: An entry point's value as importlib.metadata reads it, 'module:object' (the object
#: optional there: an extension's is the Extension in the module)
ENTRY_POINT = re.compile(r"[\w.]+\s*:\s*[\w.]+\s*(\[.*\]\s*)?$")
#: How long one extension's module may take to load (s; `--cluster-extension-limit`): it
#: declares records and imports little else (its launcher's module is imported when used)
LOAD_LIMIT_S = 1.0
#: The largest probe file an extension may ship (bytes): ours are under 32 kB
MAX_PROBE_BYTES = 1 << 20
#: The longest line said about an extension (characters)
MAX_SAID = 400
#: The largest answer an extension's sim may give for one probe (bytes of JSON)
MAX_ANSWER_BYTES = 1 << 20
#: How long an extension's sim answer to one probe may take (s): a simulated node answers
#: at once
SIM_ANSWER_LIMIT_S = 5.0


@dataclass(frozen=True)
class ExtensionSection:
    """A section of the spec an extension adds: a map of its declared clauses (each
    parsed as declared, its record a SectionSpec: `spec.section(name)`), checked against
    `probes`' results. `checked`: a spec with only this section is something to test."""

    name: str
    probes: tuple[str, ...] = ()
    checked: bool = True


@dataclass(frozen=True, eq=False)
class Extension:
    """What one installed package adds. `probes`: each probe's name and the path of its
    file (one stdlib-only program that prints `{"probe": NAME, "schema": 1, "data":
    {...}}`); `sim`: what a simulated node answers to a probe, (sim description, the
    spec's links, node, the call's arguments) -> the probe's payload (its `data`)."""

    name: str
    clauses: tuple[Declaration, ...] = ()
    sections: tuple[ExtensionSection, ...] = ()
    launchers: tuple[LauncherKind, ...] = ()
    probes: Mapping[str, str | Path] = field(default_factory=dict)
    sim: Mapping[str, Callable[..., Mapping[str, object]]] = field(default_factory=dict)


@dataclass
class _State:
    """The extensions of this process: None until `load`; each one's entry point, for
    messages; what is wrong with them, in the order found (each said once); the registries'
    functions that add the extensions' entries (`adds_to`)."""

    loaded: tuple[Extension, ...] | None = None
    loading: bool = False
    where: dict[Extension, str] = field(default_factory=dict)
    problems: dict[str, None] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    probes: dict[Extension, dict[str, str]] = field(default_factory=dict)
    extenders: list[Callable[[], None]] = field(default_factory=list)


_STATE = _State()


def said(text: str, limit: int = MAX_SAID) -> str:
    """`text` as one line: its first `limit` characters, control characters escaped (at
    most twice as long), and how long it was where that was longer."""
    cut = text[:limit]
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)
    shown = shown[:2 * limit]  # escapes are longer than what they stand for
    return shown if len(text) <= limit else f"{shown}... ({len(text)} characters)"


def problem(text: str) -> None:
    """Record what is wrong with an installed extension (its part is left out)."""
    _STATE.problems[said(text, 2 * MAX_SAID)] = None


def problems() -> tuple[str, ...]:
    return tuple(_STATE.problems)


def _leave_out(text: str) -> None:
    """Record why an extension is left out of the run (`problems`, `left_out`)."""
    problem(text)
    _STATE.left_out.append(said(text, 2 * MAX_SAID))


def left_out() -> tuple[str, ...]:
    """Why each extension that could not be loaded was left out (naming its entry point)."""
    return tuple(_STATE.left_out)


def loaded() -> bool:
    return _STATE.loaded is not None


def adds_to(extend: Callable[[], None]) -> Callable[[], None]:
    """Register `extend`, a registry's function that adds the loaded extensions' entries to
    it in place (run at `load`, or now if they are loaded already)."""
    _STATE.extenders.append(extend)
    if _STATE.loaded is not None:
        extend()
    return extend


def load(limit_s: float = LOAD_LIMIT_S) -> tuple[str, ...]:
    """Load the installed extensions (once per process) and add them to every registry;
    what is wrong with them (`problems`), each part concerned left out."""
    if _STATE.loaded is None and not _STATE.loading:
        _STATE.loading = True
        try:
            try:
                points = list(entry_points(group=GROUP))
            except Exception as exc:  # the installed distributions' metadata
                problem(f"the entry points of group {GROUP} cannot be read: "
                        f"{described(exc)}: no extension is loaded")
                points = []
            _STATE.loaded = load_points(points, limit_s)
        finally:
            _STATE.loading = False
        for extend in list(_STATE.extenders):
            extend()
    return problems()


def extensions() -> tuple[Extension, ...]:
    """The loaded extensions, by entry point name (none before `load`)."""
    return _STATE.loaded or ()


def where(extension: Extension) -> str:
    """Which extension it is, for a message: its name and entry point."""
    return _STATE.where.get(extension, f"extension {said(str(extension.name), 80)}")


def _where(point: EntryPoint) -> str:
    dist = getattr(point, "dist", None)
    by = ""
    with contextlib.suppress(Exception):  # metadata written by another party
        if dist is not None:
            by = f", from {said(str(dist.name), 80)} {said(str(dist.version), 40)}"
    return (f"extension {said(point.name, 80)} = {said(point.value, 120)} (entry point "
            f"group {GROUP}{by})")


def described(exc: BaseException) -> str:
    """What another party's code raised, as one bounded line: 'Type: message'."""
    try:
        text = str(exc)
    except Exception:  # its own __str__ may fail too
        text = "(its message cannot be shown)"
    kind = said(type(exc).__name__, 80)
    return f"{kind}: {said(text, 200)}" if text else kind


def _failure(exc: BaseException, limit_s: float) -> str:
    if isinstance(exc, guarded.Overdue):
        return (f"did not finish loading within {limit_s:g} s (a loop at import?; "
                "--cluster-extension-limit)")
    if isinstance(exc, SystemExit | KeyboardInterrupt):
        return f"stopped loading with {described(exc)}"
    return f"cannot be loaded: {described(exc)}"


def _load(point: EntryPoint, limit_s: float) -> Extension | None:
    """The Extension the entry point names; None (and the problem recorded) if it is
    not one or cannot be loaded. What its import printed is said, never shown."""
    name = _where(point)
    if not isinstance(point.value, str) or not ENTRY_POINT.match(point.value):
        _leave_out(f"{name}: its value is not 'module:object' (a module, and the Extension "
                   "in it, by their dotted names): left out")
        return None
    outcome = guarded.run(point.load, limit_s, f"{name}, loading,")
    if outcome.printed.size:
        problem(f"{name} printed {outcome.printed.size} character(s) while it was loaded "
                f"(not shown; the first {len(outcome.printed.excerpt)}: "
                f"'{said(outcome.printed.excerpt, guarded.EXCERPT)}')")
    if outcome.left:
        names = ", ".join(said(thread.name, 60) for thread in outcome.left[:3])
        kept = guarded.not_waited_for(outcome.left)
        problem(f"{name} left {len(outcome.left)} thread(s) running once it was loaded "
                f"({names}{', ...' if len(outcome.left) > 3 else ''}): what they print is "
                + ("not taken; the run ends without waiting for them" if kept else
                   "not taken, and the run cannot end before they do"))
    if outcome.failure is not None:
        _leave_out(f"{name} {_failure(outcome.failure, limit_s)}: left out")
        return None
    if not isinstance(outcome.value, Extension):
        _leave_out(f"{name} names a {said(type(outcome.value).__name__, 80)}, not a "
                   "pytest_cluster.Extension: left out")
        return None
    fault = _shape_fault(outcome.value)
    if fault is not None:
        _leave_out(f"{name}: {fault}: left out")
        return None
    texts = _probe_texts(name, outcome.value)
    if texts is None:
        return None
    _STATE.where[outcome.value] = name
    _STATE.probes[outcome.value] = texts
    return outcome.value


def _shape_fault(extension: Extension) -> str | None:
    """What in the extension is not of the declared types (None: nothing): each registry
    takes its entries as they are."""
    if not isinstance(extension.name, str):
        return f"its name is a {said(type(extension.name).__name__, 80)}, not a str"
    wanted: tuple[tuple[str, object, type], ...] = (
        ("clauses", extension.clauses, Declaration),
        ("sections", extension.sections, ExtensionSection),
        ("launchers", extension.launchers, LauncherKind))
    for what, items, kind in wanted:
        if not isinstance(items, tuple) or not all(isinstance(i, kind) for i in items):
            return f"its {what} are not a tuple of {kind.__name__}"
    for what, table in (("probes", extension.probes), ("sim", extension.sim)):
        if not isinstance(table, Mapping) or not all(isinstance(k, str) for k in table):
            return f"its {what} are not a map by probe name"
    if not all(callable(answer) for answer in extension.sim.values()):
        return "its sim answers are not all callable"
    return None


def _probe_texts(name: str, extension: Extension) -> dict[str, str] | None:
    """The text of each probe the extension ships, read now (`read_probe`); None (the
    problem recorded) when one cannot be read: its clauses could not be checked."""
    texts: dict[str, str] = {}
    try:
        probes = list(extension.probes.items())
    except Exception as exc:  # another party's mapping
        _leave_out(f"{name}: its probes cannot be listed: {described(exc)}: left out")
        return None
    for probe, path in probes:
        try:
            texts[str(probe)] = read_probe(Path(path))
        except (OSError, ValueError, TypeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            _leave_out(f"{name}: probe {said(str(probe), 80)}: its file "
                       f"{said(str(path), 200)} cannot be read: {said(str(why), 120)}: left out")
            return None
    return texts


def load_points(points: Iterable[EntryPoint],
                limit_s: float = LOAD_LIMIT_S) -> tuple[Extension, ...]:
    """The extensions the entry points name, by name; one that cannot be loaded, is not
    an Extension or repeats another's name is left out, and said (`problems`)."""
    found = []
    for point in sorted(points, key=lambda p: (p.name, p.value)):
        loaded_one = _load(point, limit_s)
        if loaded_one is not None:
            found.append(loaded_one)
    return tuple(unique(((e.name, e) for e in found), "the installed extensions"))


T = TypeVar("T")


def _twice(what: str, name: str) -> None:
    problem(f"{what}: {name!r} is declared twice (an installed extension repeats a name that "
            "is already taken; the second is left out)")


def unique(named: Iterable[tuple[str, T]], what: str) -> list[T]:
    """The items in order, ours first; an item whose name is taken already (an installed
    extension's) is left out and said (`problems`)."""
    return list(free(named, (), what).values())


def free(named: Iterable[tuple[str, T]], taken: Iterable[str], what: str) -> dict[str, T]:
    """The entries of `named` by name, in order, none taking a name of `taken` (ours) or
    of an earlier entry: such a one is left out and said (`problems`)."""
    ours = set(taken)
    found: dict[str, T] = {}
    for name, item in named:
        if name in ours or name in found:
            _twice(what, name)
        else:
            found[name] = item
    return found


def added_clauses() -> tuple[Declaration, ...]:
    return tuple(d for e in extensions() for d in e.clauses)


def added_sections() -> tuple[ExtensionSection, ...]:
    return tuple(s for e in extensions() for s in e.sections)


def added_launchers() -> tuple[LauncherKind, ...]:
    """The extensions' launcher kinds, each knowing which extension declared it."""
    return tuple(replace(k, extension=where(e)) for e in extensions() for k in e.launchers)


def read_probe(path: Path, limit: int = MAX_PROBE_BYTES) -> str:
    """A probe file's text: a regular file (opened without blocking: a FIFO is refused, not
    waited on) of at most `limit` bytes, in UTF-8; OSError or ValueError says why not."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if info.st_size > limit:
            raise ValueError(f"{info.st_size} bytes, more than the {limit} a probe may be")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"more than the {limit} bytes a probe may be")
    return data.decode("utf-8")


def added_probes() -> list[tuple[str, str]]:
    """Each extension probe's name and text (read when it was loaded), in order (names
    taken twice are for `free` to refuse)."""
    return [item for e in extensions() for item in _STATE.probes.get(e, {}).items()]


def _finite(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def checked_answer(owner: str, probe: str,
                   answer: Callable[..., Mapping[str, object]]
                   ) -> Callable[..., dict[str, object]]:
    """An extension's sim answer whose payload is checked: a map that is strict JSON (finite
    numbers, at most MAX_ANSWER_BYTES), given back as a copy; BadAnswer (bad output of the
    simulated node) names the extension; what the answer raises (KeyboardInterrupt too),
    ValueError naming it, and so where it has not answered within SIM_ANSWER_LIMIT_S (it
    runs in a thread of its own, guarded.within: left running past it)."""

    def run(*args: Any) -> dict[str, object]:
        copy, failure = guarded.within(lambda: checked(*args), SIM_ANSWER_LIMIT_S)
        if isinstance(failure, guarded.Overdue):
            raise ValueError(f"{owner}: its sim answer to probe {probe} did not return "
                             f"within {SIM_ANSWER_LIMIT_S:g} s: left running")
        if failure is not None:
            raise failure
        assert copy is not None  # within gives back one of the two
        return copy

    def checked(*args: Any) -> dict[str, object]:
        try:
            data = answer(*args)
        except BaseException as exc:  # another party's code: KeyboardInterrupt too
            raise ValueError(f"{owner}: its sim answer to probe {probe} raised "
                             f"{described(exc)}") from None
        if not isinstance(data, Mapping):
            raise BadAnswer(f"{owner}: its sim answer to probe {probe} is a "
                            f"{said(type(data).__name__, 80)}, not a map of the probe's data")
        try:
            text = json.dumps(dict(data), allow_nan=False)
        except Exception as exc:  # a map of its own class runs its code when read
            raise BadAnswer(f"{owner}: its sim answer to probe {probe} is not strict JSON "
                            f"({said(str(exc), 160)})") from None
        if len(text) > MAX_ANSWER_BYTES:
            raise BadAnswer(f"{owner}: its sim answer to probe {probe} is {len(text)} bytes "
                            f"of JSON, more than {MAX_ANSWER_BYTES}")
        copy: dict[str, object] = json.loads(text)  # a map, as dumped from one
        if not _finite(copy):  # json.dumps let through a float subclass's text
            raise BadAnswer(f"{owner}: its sim answer to probe {probe} has a number that "
                            "is not finite")
        return copy

    return run


def added_sim_answers() -> list[tuple[str, Callable[..., dict[str, object]]]]:
    """Each extension's sim answers, by probe, checked (`checked_answer`)."""
    return [(name, checked_answer(where(e), name, answer))
            for e in extensions() for name, answer in e.sim.items()]
