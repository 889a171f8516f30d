"""Collective benchmarks as distributed jobs: the collective probe on every rank of a job
(jobs.run_job through the cluster's launcher), its per-rank times turned into nccl-tests'
numbers (busbw.aggregate). Every launcher answers the same job the same way, the sim too
(it simulates the ranks' output).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pytest_cluster.busbw import CollectiveRun, aggregate
from pytest_cluster.errors import ClusterError
from pytest_cluster.jobs import JobSpec, run_job
from pytest_cluster.launchers.base import Launcher
from pytest_cluster.probes import probe_source
from pytest_cluster.spec.model import InterconnectSpec


def collective_job(spec: InterconnectSpec, collective: str, nodes: Sequence[str],
                   sizes: Sequence[int]) -> JobSpec:
    return JobSpec(nodes=tuple(nodes), program=probe_source("collective"),
                   ranks_per_node=spec.ranks_per_node,
                   args=("--collective", collective, "--sizes", ",".join(map(str, sizes)),
                         "--warmup", str(spec.warmup), "--iterations", str(spec.iterations),
                         "--backend", spec.backend),
                   init_timeout_s=min(120.0, spec.timeout_s), wall_timeout_s=spec.timeout_s)


def run_collective(launcher: Launcher, spec: InterconnectSpec, collective: str,
                   nodes: Sequence[str], sizes: Sequence[int]) -> CollectiveRun:
    """Run the benchmark as one distributed job; failures become the run's error. The
    run is simulated when the job's results are (the sim launcher's); its details are
    what the first rank reports of its software and device, and the ranks' hosts."""
    base = CollectiveRun(collective, spec.backend, tuple(nodes), spec.ranks_per_node)
    try:
        result = run_job(launcher, collective_job(spec, collective, nodes, sizes))
    except (ClusterError, OSError, ValueError) as exc:  # the job's failure is the result
        return replace(base, error=str(exc))
    base = replace(base, simulated=result.simulated)
    if not result.ok:
        return replace(base, error=result.first_failure())
    data = [r.data for r in result.ranks if r.data is not None]
    first = data[0]
    details: dict[str, Any] = {k: first[k] for k in ("torch", "nccl", "device", "simulated")
                               if k in first}
    hosts = sorted({str(d["host"]) for d in data if "host" in d})  # none on simulated ranks
    if hosts:
        details["hosts"] = hosts
    try:
        points = aggregate(collective, data)
    except (KeyError, TypeError, ValueError) as exc:
        return replace(base, error=f"bad benchmark output: {exc!r}")
    return replace(base, points=points, details=details)
