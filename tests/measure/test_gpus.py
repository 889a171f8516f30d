"""The GPU probes a run reads (measure/gpus.py): each call once per run on every node."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_cluster.measure import gpus
from pytest_cluster.measure.calls import gpu_call, gpu_stress_call
from tests.measure.test_prober import Recording


def test_the_stress_level_waits_for_its_load_and_runs_once_for_every_node(
        tmp_path: Path) -> None:
    cluster = Recording(tmp_path)
    section = gpus.section(cluster)
    for node in cluster.nodes:
        assert gpus.gpu_stress(cluster, node).ok
    assert cluster.asked == [(gpu_stress_call(section), cluster.nodes,
                              section.stress_time_s + 600)]
    assert gpus.gpu_all(cluster)[cluster.nodes[1]].ok
    assert cluster.asked[1:] == [(gpu_call(section), cluster.nodes, 0.0)]


def test_a_spec_without_gpus_says_so(tmp_path: Path) -> None:
    cluster = Recording(tmp_path)
    cluster.spec = replace(cluster.spec, gpus=None)
    with pytest.raises(ValueError, match="the spec has no gpus section"):
        gpus.gpu(cluster, cluster.nodes[0])
    assert cluster.asked == []
