"""The storage probes a run reads of each filesystem (measure/storage/__init__.py)."""

from __future__ import annotations

from pathlib import Path

from pytest_cluster.contract import parse_spec
from pytest_cluster.measure import storage
from pytest_cluster.measure.calls import import_call
from tests.measure.test_prober import Recording


def test_the_storage_probe_measures_only_what_the_selection_checks(tmp_path: Path) -> None:
    """`-m sanity` checks capacity: the probe writes nothing (its parts skipped)."""
    spec = parse_spec("cluster: {name: t, nodes: [a, b], launcher: local}\n"
                      "storage:\n  - {path: /data, capacity: '>= 1 GB', write: '>= 1 GB/s',"
                      " read: '>= 1 GB/s'}\n", "t.yaml")
    fs = spec.storage[0]
    capacity = next(c.key for c in fs.clauses if c.key.endswith(".capacity"))
    cluster = Recording(tmp_path, selected_clauses=frozenset({capacity}))
    cluster.spec = spec
    assert storage.storage(cluster, cluster.nodes[0], fs).ok
    ((call, nodes, _),) = cluster.asked
    assert call.name == "storage" and nodes == cluster.nodes
    skipped = {call.args[i + 1] for i, arg in enumerate(call.args) if arg == "--skip"}
    assert skipped == {"write", "read", "metadata"}  # metadata: not in contract


def test_the_import_probe_runs_the_filesystems_interpreter(tmp_path: Path) -> None:
    cluster = Recording(tmp_path)
    fs = cluster.spec.storage[0]
    assert storage.import_latency(cluster, cluster.nodes[2], fs).ok
    assert cluster.asked == [(import_call(fs), cluster.nodes, 0.0)]
