"""Launchers by name, from the one registry (contract/launchers.py's KINDS), imported lazily;
an unknown name is an error listing the known ones. An installed extension's launcher is
imported guarded (contract/guarded.py: what it raises or prints at import is caught, a loop is
stopped) and its answers checked (checked.py); a class that is not there is a LaunchError
naming the extension."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from pytest_cluster.contract import guarded
from pytest_cluster.contract.extensions import described, said
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.errors import LaunchError
from pytest_cluster.launchers.base import Launcher
from pytest_cluster.launchers.checked import checked
from pytest_cluster.launchers.result import ErrorKind, ProbeResult

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec


#: How long an extension's launcher module may take to import (s)
IMPORT_LIMIT_S = 10.0


def _import(implementation: str) -> object:
    module_name, _, class_name = implementation.partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def launcher_class(name: str) -> type[Launcher]:
    """The class of launcher kind `name`; LaunchError if there is none (an extension's
    that cannot be imported, or is not a Launcher, named with its extension)."""
    kind = KINDS.get(name)
    if kind is None:
        raise LaunchError(f"unknown launcher {name!r}; known: {', '.join(KINDS)}")
    if not kind.extension:
        cls: type[Launcher] = _import(kind.implementation)  # type: ignore[assignment]
        return cls
    where = f"launcher {name} of {kind.extension}: {said(kind.implementation, 160)}"
    outcome = guarded.run(lambda: _import(kind.implementation), IMPORT_LIMIT_S,
                          f"{where}, imported,")
    printed = (f" (it printed {outcome.printed.size} character(s) at import, not shown)"
               if outcome.printed.size else "")
    if isinstance(outcome.failure, guarded.Overdue):
        raise LaunchError(f"{where} was not imported within {IMPORT_LIMIT_S:g} s{printed}")
    if outcome.failure is not None:
        raise LaunchError(f"{where} cannot be imported: {described(outcome.failure)}"
                          f"{printed}")
    found = outcome.value
    if not (isinstance(found, type) and issubclass(found, Launcher)):
        raise LaunchError(f"{where} names a {said(type(found).__name__, 80)}, not a "
                          f"pytest_cluster.Launcher class{printed}")
    return checked(found, kind.extension)


def get_launcher(spec: Spec) -> Launcher:
    return launcher_class(spec.cluster.launcher).from_spec(spec)


__all__ = ["ErrorKind", "Launcher", "ProbeResult", "get_launcher", "launcher_class"]
