"""The cluster under test: the validated spec, its launcher and the shared probe cache:
what every measurement shares (measure/prober.py's Prober). The measurements themselves
are modules of functions taking it (checkpoint, dataloader, latency, node_search,
training, collectives, gpus, storage, rails)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_cluster.errors import ClusterError
from pytest_cluster.launchers import ErrorKind, Launcher, ProbeResult, get_launcher
from pytest_cluster.measure.cache import ProbeCache
from pytest_cluster.measure.network.fabric import NIC_END
from pytest_cluster.probes import ProbeCall

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec

#: Probes that load the nodes (GPUs, disks): one at a time across xdist workers.
LOADING_PROBES = ("gpu_perf", "storage", "import_latency", "dcgm")


def _why(result: ProbeResult) -> str:
    """Why a probe failed, less the node's name ('host probe unreachable: ...')."""
    return result.describe().split(": ", 1)[-1]


class Cluster:
    """What the `cluster` fixture gives a test: spec, nodes and probe results (a Prober)."""

    def __init__(self, spec: Spec, cache_dir: Path, launcher: Launcher | None = None,
                 selected_clauses: frozenset[str] | None = None) -> None:
        self.spec = spec
        #: The clauses this run's selection checks (from the plan the run wrote); None:
        #: every clause (no plan known).
        self.selected_clauses = selected_clauses
        self.launcher = launcher or get_launcher(spec)
        self.cache = ProbeCache(cache_dir)

    @property
    def name(self) -> str:
        return self.spec.cluster.name

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.spec.cluster.nodes

    def run(self, call: ProbeCall, nodes: Sequence[str],
            at_least_s: float = 0.0) -> dict[str, ProbeResult]:
        """`call` on `nodes` now (not cached), within the probe timeout or `at_least_s`;
        a call that loads the nodes runs alone (ProbeCache.alone)."""
        quiet = call.name in LOADING_PROBES or call == NIC_END
        alone = self.cache.alone() if quiet else contextlib.nullcontext()
        with alone:
            return self.launcher.run(call, nodes,
                                     max(self.spec.cluster.probe_timeout_s, at_least_s))

    def probe(self, call: ProbeCall, node: str) -> ProbeResult:
        """The result of `call` on `node`; the call runs once, on all nodes in parallel."""
        return self.cache.get(call, self.nodes, self.run)[node]

    def probe_all(self, call: ProbeCall) -> dict[str, ProbeResult]:
        return self.cache.get(call, self.nodes, self.run)

    def host(self, node: str) -> ProbeResult:
        return self.probe(ProbeCall("host"), node)

    def host_all(self) -> dict[str, ProbeResult]:
        return self.probe_all(ProbeCall("host"))

    def silent(self, nodes: Sequence[str]) -> ProbeResult | None:
        """The host probe of the first of `nodes` that did not answer, None if all did: a
        job over them fails at once, naming it, instead of its other ranks waiting out
        the rendezvous for it."""
        return next((r for r in map(self.host, nodes) if not r.ok), None)

    def left_out(self) -> dict[str, str]:
        """The nodes whose host probe did not answer, each with why (its line less the
        node's name): the jobs that pair or sample the nodes (the slow-node search, the
        latency ping-pong) run without them, so a dead node fails only its own cases (as
        unreachable) and never one of the others'."""
        return {node: _why(result) for node, result in self.host_all().items()
                if not result.ok}

    def stopped_answering(self, nodes: list[str]) -> dict[str, str]:
        """Of `nodes`, whose job failed, those whose host probe read again (not the
        run's cached answer) does not answer, each with why: they stopped answering
        since the run began. A launcher error, or a run interrupted, tells nothing."""
        try:
            fresh = self.launcher.run(ProbeCall("host"), nodes,
                                      self.spec.cluster.probe_timeout_s)
        except (ClusterError, OSError, ValueError):
            return {}
        return {node: _why(result) for node, result in fresh.items()
                if node in nodes and not result.ok and result.error is not ErrorKind.CANCELLED}

    def jobs_at_once(self, jobs: int) -> int:
        """Jobs on disjoint nodes run at once; where every "node" is this machine
        (Launcher.one_host), one at a time (they would share its CPUs and network)."""
        if self.launcher.one_host:
            return 1
        return max(1, min(jobs, self.spec.cluster.parallel))
