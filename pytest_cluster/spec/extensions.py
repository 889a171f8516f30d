"""Extensions: what an installed package adds to pytest-cluster - launchers, spec sections
with their clauses and probes, the simulated cluster's answers to those probes - without a
change here. A package names an `Extension` in the entry point group
`pytest_cluster.extensions` of its metadata:

    [project.entry-points."pytest_cluster.extensions"]
    bmc = "bmc_checks:EXTENSION"

Each registry adds what the extensions declare to its own table, after ours
(spec/clauses.py CLAUSES, spec/launchers.py KINDS, spec/loader.py SECTIONS, probes PROBES,
sim/answers.py PROBES), so everything that derives from a registry derives from them too:
the spec's keys and errors, the tests made from the clauses (acceptance/test_extensions.py),
the selection, the evidence and the reports. An extension's module is loaded while those tables are
built: it imports only the public records (`from pytest_cluster import Declaration, ...`).
Sinks need no entry here: they are pytest plugins implementing our hooks (hookspecs.py).

An extension that cannot be loaded, a name taken twice or a probe file that is not there
never breaks an import (a plain pytest run stays untouched): the faulty part is left out
and said, and a run with a spec refuses to start, naming each problem (`check`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_cluster.errors import ExtensionError

if TYPE_CHECKING:
    from pytest_cluster.spec.declaration import Declaration
    from pytest_cluster.spec.launcher_kind import LauncherKind

GROUP = "pytest_cluster.extensions"


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
    sim: Mapping[str, Callable[..., dict[str, Any]]] = field(default_factory=dict)


#: The entry point being loaded (a module that imports a registry calls back here)
_LOADING: list[str] = []
#: What is wrong with the installed extensions, in the order found (each said once): the
#: registries leave the faulty parts out, and a run refuses to start while there are any
#: (`check`), so a broken package never changes what a run checks without saying so.
_PROBLEMS: dict[str, None] = {}


def problem(text: str) -> None:
    """Record what is wrong with an installed extension (its part is left out)."""
    _PROBLEMS[text] = None


def problems() -> tuple[str, ...]:
    return tuple(_PROBLEMS)


def check() -> None:
    """ExtensionError listing what is wrong with the installed extensions, if anything:
    asked before a spec is read, so that no run goes on without a part it was given."""
    found = problems()
    if found:
        listed = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5
                                         else "")
        raise ExtensionError(f"pytest-cluster: {len(found)} problem(s) with the installed "
                             f"extensions (fix or uninstall them): {listed}")


def _where(point: EntryPoint) -> str:
    dist = getattr(point, "dist", None)
    by = f", from {dist.name} {dist.version}" if dist is not None else ""
    return f"extension {point.name} = {point.value} (entry point group {GROUP}{by})"


def _load(point: EntryPoint) -> Extension | None:
    """The Extension the entry point names; None (and the problem recorded) if it is
    not one or cannot be loaded."""
    try:
        loaded = point.load()
    except Exception as exc:
        problem(f"{_where(point)} cannot be loaded: {type(exc).__name__}: {exc} (an "
                "extension's module imports only pytest_cluster's public records)")
        return None
    if not isinstance(loaded, Extension):
        problem(f"{_where(point)} names a {type(loaded).__name__}, not a "
                "pytest_cluster.Extension")
        return None
    return loaded


@functools.cache
def extensions() -> tuple[Extension, ...]:
    """The installed extensions, by entry point name; loaded once. One that cannot be
    loaded, is not an Extension or repeats another's name is left out, and said
    (`problems`)."""
    if _LOADING:
        raise ExtensionError(f"extension {_LOADING[0]}: its module imported pytest-cluster's "
                             "registries while it was loaded; it may import only "
                             "pytest_cluster's public records (`from pytest_cluster import "
                             "Declaration`)")
    found = []
    for point in sorted(entry_points(group=GROUP), key=lambda p: (p.name, p.value)):
        _LOADING.append(f"{point.name} = {point.value}")
        try:
            loaded = _load(point)
        finally:
            _LOADING.clear()
        if loaded is not None:
            found.append(loaded)
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
    return tuple(k for e in extensions() for k in e.launchers)


def added_probes() -> list[tuple[str, Path]]:
    """Each extension probe's name and file, in order (names taken twice are for `free`
    to refuse); one whose file is not there is left out and said (`problems`)."""
    found: list[tuple[str, Path]] = []
    for extension in extensions():
        for name, path in extension.probes.items():
            if Path(path).is_file():
                found.append((name, Path(path)))
            else:
                problem(f"extension {extension.name}: probe {name}: no file at {path}")
    return found


def added_sim_answers() -> list[tuple[str, Callable[..., dict[str, Any]]]]:
    return [(name, answer) for e in extensions() for name, answer in e.sim.items()]
