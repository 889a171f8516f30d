"""pytest-cluster: acceptance tests for the promises in a GPU-cluster contract.

The public API for your own tests and tools, by name from here (loaded when first used,
so that the plugin's start imports nothing it does not need):

- `JobSpec`, `JobResult`, `RankResult`, `run_job`: distributed jobs on the cluster's nodes
  (docs/development.md);
- `read_results`, `RunResults` and the run statuses `COMPLETE`, `PARTIAL`, `INTERRUPTED`,
  `INTERNAL_ERROR`: a run's results.jsonl, read back (docs/evidence.md).
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
    "read_results": "pytest_cluster.evidence.results",
    "RunResults": "pytest_cluster.evidence.results",
    "COMPLETE": "pytest_cluster.evidence.results",
    "PARTIAL": "pytest_cluster.evidence.results",
    "INTERRUPTED": "pytest_cluster.evidence.results",
    "INTERNAL_ERROR": "pytest_cluster.evidence.results",
}

__all__ = ["COMPLETE", "INTERNAL_ERROR", "INTERRUPTED", "PARTIAL", "JobResult", "JobSpec",
           "RankResult", "RunResults", "__version__", "read_results", "run_job"]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_cluster' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
