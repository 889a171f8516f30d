"""How many pytest-xdist workers a contract run starts: never more than this machine has
CPUs for.

What xdist can spread over workers in a contract run is CPU work on the controller's
machine: collecting the cases, asserting, building the reports. The probes and benchmark
jobs run once per call on all nodes and are shared through the probe cache, and the
measurements that load the nodes take turns (`ProbeCache.alone`), so workers beyond the
CPUs only contend for them, and each adds its own start-up and collection and the
shipping of its reports to the controller (on the 2-CPU machine of bench/xdist.py, `-n 4`
was 1.19-1.42 x serial). A worker count above the CPUs is cut to the CPUs; on one CPU the
run is serial.
"""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask: taskset, cpusets)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def fit_workers(requested: int, cpus: int) -> int:
    """The workers to start when `requested` were asked for on `cpus` CPUs: as asked up
    to one per CPU; above, one per CPU, and 0 (a serial run) where that would be a single
    worker, which only adds the shipping of its reports to the same work."""
    if requested <= cpus:
        return requested
    return cpus if cpus >= 2 else 0


def cut_note(requested: int, workers: int, cpus: int) -> str:
    """The line that tells the user why fewer workers run than `-n` asked for."""
    run = f"{workers} workers" if workers else "serially"
    return (f"pytest-cluster: -n {requested} runs {run}: this machine has {cpus} CPU(s), and "
            f"the cluster's measurements take turns, so more workers would only wait "
            f"for CPU")
