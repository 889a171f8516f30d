"""pytest-cluster: acceptance tests for the promises in a GPU-cluster contract.

The public API for your own tests and tools, by name from here (loaded when first used,
so that the plugin's start imports nothing it does not need):

- `JobSpec`, `JobResult`, `RankResult`, `run_job`: distributed jobs on the cluster's nodes
  (docs/development.md);
- `read_results`, `RunResults` and the run statuses `COMPLETE`, `PARTIAL`, `INTERRUPTED`,
  `INTERNAL_ERROR`: a run's results.jsonl, read back (docs/evidence.md);
- `Extension`, `ExtensionSection`, `Declaration`, `Reads`, `Value`, `Fault`, `Actor`, `Dim`,
  `LauncherKind`, `Launcher`: what an installed package adds - launchers, spec sections,
  clauses, probes - through the entry point group `pytest_cluster.extensions`
  (docs/development.md).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Each public name and the module that holds it.
_PUBLIC = {
    "JobSpec": "pytest_cluster.launchers.jobs",
    "JobResult": "pytest_cluster.launchers.jobs",
    "RankResult": "pytest_cluster.launchers.jobs",
    "run_job": "pytest_cluster.launchers.jobs",
    "read_results": "pytest_cluster.evidence.sinks.results",
    "RunResults": "pytest_cluster.evidence.sinks.results",
    "COMPLETE": "pytest_cluster.evidence.sinks.results",
    "PARTIAL": "pytest_cluster.evidence.sinks.results",
    "INTERRUPTED": "pytest_cluster.evidence.sinks.results",
    "INTERNAL_ERROR": "pytest_cluster.evidence.sinks.results",
    "Extension": "pytest_cluster.contract.extensions",
    "ExtensionSection": "pytest_cluster.contract.extensions",
    "Declaration": "pytest_cluster.contract.declaration",
    "Reads": "pytest_cluster.contract.declaration",
    "Value": "pytest_cluster.contract.declaration",
    "Fault": "pytest_cluster.contract.declaration",
    "Actor": "pytest_cluster.contract.declaration",
    "Dim": "pytest_cluster.units",
    "LauncherKind": "pytest_cluster.contract.launcher_kind",
    "Launcher": "pytest_cluster.launchers.base",
}

__all__ = ["COMPLETE", "INTERNAL_ERROR", "INTERRUPTED", "PARTIAL", "Actor", "Declaration",
           "Dim", "Extension", "ExtensionSection", "Fault", "JobResult", "JobSpec", "Launcher",
           "LauncherKind", "RankResult", "Reads", "RunResults", "Value", "__version__",
           "read_results", "run_job"]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_cluster' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
