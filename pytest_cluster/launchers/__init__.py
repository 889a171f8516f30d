"""Launchers by name, imported lazily; an unknown name is a usage error listing valid ones."""

from __future__ import annotations

import importlib

from pytest_cluster.errors import LaunchError
from pytest_cluster.launchers.base import Launcher
from pytest_cluster.launchers.result import ErrorKind, ProbeResult
from pytest_cluster.spec.model import Spec

REGISTRY: dict[str, str] = {
    "local": "pytest_cluster.launchers.local:LocalLauncher",
    "sim": "pytest_cluster.launchers.sim:SimLauncher",
    "ssh": "pytest_cluster.launchers.ssh:SshLauncher",
    "slurm": "pytest_cluster.launchers.slurm:SlurmLauncher",
}


def launcher_class(name: str) -> type[Launcher]:
    target = REGISTRY.get(name)
    if target is None:
        raise LaunchError(f"unknown launcher {name!r}; known: {', '.join(REGISTRY)}")
    module_name, class_name = target.split(":")
    cls: type[Launcher] = getattr(importlib.import_module(module_name), class_name)
    return cls


def get_launcher(spec: Spec) -> Launcher:
    return launcher_class(spec.cluster.launcher).from_spec(spec)


def default_python(name: str) -> str:
    """The interpreter the nodes of launcher `name` run when the spec names none."""
    return launcher_class(name).default_python()


__all__ = ["REGISTRY", "ErrorKind", "Launcher", "ProbeResult", "default_python",
           "get_launcher", "launcher_class"]
