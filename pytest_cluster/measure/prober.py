"""What every measurement is given (measure/cluster.py's Cluster is one): the spec and its
nodes, the launcher and the run's probe cache, a probe call run once per run on every
node, who answers its host probe, and how many jobs may run at once.

Each measurement is a module of functions taking a Prober (checkpoint.run, latency.run,
node_search.run, training.run, collectives.intra_node, ...): none of them knows the
Cluster, and the Cluster knows none of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec
    from pytest_cluster.launchers import Launcher, ProbeResult
    from pytest_cluster.measure.cache import ProbeCache
    from pytest_cluster.probes import ProbeCall


class Prober(Protocol):
    """The cluster under test, as a measurement sees it."""

    #: The validated contract spec.
    spec: Spec
    #: What runs probes and jobs on the nodes.
    launcher: Launcher
    #: The run's probe results and documents, shared by every process of the run; its
    #: `kept` holds what is read once per process.
    cache: ProbeCache
    #: The clauses this run's selection checks; None: every clause.
    selected_clauses: frozenset[str] | None

    @property
    def name(self) -> str:
        """The cluster's name."""

    @property
    def nodes(self) -> tuple[str, ...]:
        """Every node of the spec, in its order."""

    def run(self, call: ProbeCall, nodes: Sequence[str],
            at_least_s: float = 0.0) -> dict[str, ProbeResult]:
        """`call` on `nodes` now (not cached), within the probe timeout or `at_least_s`;
        a call that loads the nodes runs alone (ProbeCache.alone)."""

    def probe(self, call: ProbeCall, node: str) -> ProbeResult:
        """The result of `call` on `node`; the call runs once, on all nodes in parallel."""

    def probe_all(self, call: ProbeCall) -> dict[str, ProbeResult]:
        """The results of `call` on every node, run once per run."""

    def host(self, node: str) -> ProbeResult:
        """The host probe's result on `node`."""

    def host_all(self) -> dict[str, ProbeResult]:
        """The host probe's result on every node."""

    def silent(self, nodes: Sequence[str]) -> ProbeResult | None:
        """The host probe of the first of `nodes` that did not answer; None if all did."""

    def left_out(self) -> dict[str, str]:
        """The nodes whose host probe did not answer, each with why."""

    def stopped_answering(self, nodes: list[str]) -> dict[str, str]:
        """Of `nodes`, those whose host probe read again does not answer, with why."""

    def jobs_at_once(self, jobs: int) -> int:
        """How many of `jobs` jobs on disjoint nodes run at once."""
