"""The contract spec: validated once, at configure time, into frozen records.

`load_spec`, `parse_spec` and the spec's records by name from here, each loaded from its
module when first used (so that importing one module of contract/ loads no other)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_cluster.contract.loader import load_spec as load_spec
    from pytest_cluster.contract.loader import parse_spec as parse_spec
    from pytest_cluster.contract.model import Clause as Clause
    from pytest_cluster.contract.model import ClusterSpec as ClusterSpec
    from pytest_cluster.contract.model import HostSpec as HostSpec
    from pytest_cluster.contract.model import Spec as Spec
    from pytest_cluster.contract.model import StorageSpec as StorageSpec
    from pytest_cluster.contract.model import VersionClause as VersionClause

#: Each name and the module that holds it.
_NAMES = {"load_spec": "loader", "parse_spec": "loader", "Clause": "model",
          "ClusterSpec": "model", "HostSpec": "model", "Spec": "model", "StorageSpec": "model",
          "VersionClause": "model"}

__all__ = ["Clause", "ClusterSpec", "HostSpec", "Spec", "StorageSpec", "VersionClause",
           "load_spec", "parse_spec"]


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_cluster.contract' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pytest_cluster.contract.{module}"), name)
