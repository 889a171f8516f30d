"""How many pytest-xdist workers a contract run starts: no more than this machine has CPUs
for, beside the controller's own.

What xdist can spread over workers in a contract run is CPU work on this machine:
collecting and running the cases (asserting on cached probe results). The probes and
benchmark jobs run once per call on all nodes and are shared through the probe cache, and
the measurements that load the nodes take turns (`ProbeCache.alone`), so workers do not
make the cluster measure faster. The controller is CPU-bound too: it takes every case's
report (terminal, pytest-html, JUnit, results.jsonl), about a third of a serial run's CPU,
and shipping a report from a worker to it costs about as much again (bench/xdist.py, 128
nodes: 30 s of CPU serially, 50 s with two workers). So a worker is started only where a
CPU is free for it beside the controller: `-n N` runs min(N, CPUs - 1) workers, and
serially where that is fewer than two (one worker only adds the shipping to the same
work). `--tx N*popen --dist load` starts N workers regardless. On this repository's
2-CPU machine, `-n 4` was 1.19 x serial at 128 nodes and 1.42 x on
examples/sim-h100-64.yaml before this rule; it now runs serially.
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
    """The workers to start when `requested` were asked for on `cpus` CPUs: as asked up to
    one per CPU beside the controller's; 0 (a serial run) where fewer than two fit."""
    if requested < cpus:
        return requested
    workers = cpus - 1
    return workers if workers >= 2 else 0


def cut_note(requested: int, workers: int, cpus: int) -> str:
    """The line that tells the user why fewer workers run than `-n` asked for."""
    run = f"{workers} workers" if workers else "serially"
    return (f"pytest-cluster: -n {requested} runs {run}: this machine has {cpus} CPU(s), one "
            f"for the controller, which takes every case's report; the cluster's "
            f"measurements take turns, so more workers would only contend for CPU "
            f"(--tx {requested}*popen --dist load starts {requested} regardless)")
