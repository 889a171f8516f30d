"""The spec's `host:` section's records beyond its clauses: what host.golden compares each
node with (`Golden`). A leaf: it imports nothing of ours."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Golden:
    """What host.golden compares each node with: the cluster's strict majority (`node`
    and `file` None), a node of the cluster, or the values of a file (an inventory.json a
    run wrote, or a YAML of expected values), as written (relative to the spec's folder)."""

    node: str | None = None
    file: str | None = None

    @property
    def said(self) -> str:
        """How the clause's requirement names it: 'golden node gpu-001'."""
        if self.node is not None:
            return f"golden node {self.node}"
        return f"golden file {self.file}" if self.file is not None else "the nodes' majority"
