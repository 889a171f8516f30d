"""The contract spec: validated once, at configure time, into frozen records."""

from pytest_cluster.spec.loader import load_spec, parse_spec
from pytest_cluster.spec.model import (
    Clause,
    ClusterSpec,
    HostSpec,
    Spec,
    StorageSpec,
    VersionClause,
)

__all__ = ["Clause", "ClusterSpec", "HostSpec", "Spec", "StorageSpec", "VersionClause",
           "load_spec", "parse_spec"]
