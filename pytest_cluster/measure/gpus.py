"""The GPU probes a run reads (measure/calls.py's calls, run once per run on every node):
NVML's inventory and health, torch's measurements, and the stress level's sustained load."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from pytest_cluster.measure.calls import (
    DCGM_LIMITS_S,
    dcgm_call,
    gpu_call,
    gpu_perf_call,
    gpu_stress_call,
)

if TYPE_CHECKING:
    from pytest_cluster.contract.model import GpuSpec
    from pytest_cluster.launchers import ProbeResult
    from pytest_cluster.measure.prober import Prober


def section(prober: Prober) -> GpuSpec:
    """The spec's gpus section; ValueError where it has none."""
    if prober.spec.gpus is None:
        raise ValueError("the spec has no gpus section")
    return prober.spec.gpus


def gpu(prober: Prober, node: str) -> ProbeResult:
    """NVML inventory and health of every GPU of `node`."""
    return prober.probe(gpu_call(section(prober)), node)


def gpu_all(prober: Prober) -> dict[str, ProbeResult]:
    return prober.probe_all(gpu_call(section(prober)))


def gpu_perf(prober: Prober, node: str) -> ProbeResult | None:
    """torch measurements on every GPU of `node` at once; None if none is in contract."""
    call = gpu_perf_call(section(prober))
    return None if call is None else prober.probe(call, node)


def gpu_stress(prober: Prober, node: str) -> ProbeResult:
    """The stress level on `node`: sustained load on every GPU at once, then the same
    matmul on each, compared (gpu_stress_call)."""
    gpus = section(prober)
    # its timeout: the stress itself, and 10 minutes for starting up and the check
    longer = functools.partial(prober.run, at_least_s=gpus.stress_time_s + 600)
    return prober.cache.get(gpu_stress_call(gpus), prober.nodes, longer)[node]


def dcgm(prober: Prober, node: str) -> ProbeResult:
    """DCGM's diagnostic on `node` (dcgmi diag -r N -j), run once per run on every node at
    once, within the level's time limit and a minute more for the probe itself."""
    gpus = section(prober)
    assert gpus.dcgm_level is not None, "gpus.dcgm_diag is not in the contract"
    longer = functools.partial(prober.run, at_least_s=DCGM_LIMITS_S[gpus.dcgm_level] + 60)
    return prober.cache.get(dcgm_call(gpus), prober.nodes, longer)[node]
