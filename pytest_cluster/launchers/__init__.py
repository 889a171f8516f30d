"""Launchers by name, from the one registry (spec/launchers.py's KINDS), imported lazily;
an unknown name is an error listing the known ones."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from pytest_cluster.errors import LaunchError
from pytest_cluster.launchers.base import Launcher
from pytest_cluster.launchers.result import ErrorKind, ProbeResult
from pytest_cluster.spec.launchers import KINDS

if TYPE_CHECKING:
    from pytest_cluster.spec.model import Spec


def launcher_class(name: str) -> type[Launcher]:
    kind = KINDS.get(name)
    if kind is None:
        raise LaunchError(f"unknown launcher {name!r}; known: {', '.join(KINDS)}")
    module_name, class_name = kind.implementation.split(":")
    cls: type[Launcher] = getattr(importlib.import_module(module_name), class_name)
    return cls


def get_launcher(spec: Spec) -> Launcher:
    return launcher_class(spec.cluster.launcher).from_spec(spec)


__all__ = ["ErrorKind", "Launcher", "ProbeResult", "get_launcher", "launcher_class"]
