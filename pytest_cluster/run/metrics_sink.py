"""--cluster-metrics=FILE: a sink of the run's evidence (hookspecs.py) that keeps the
metrics (evidence/metrics.py) as the lines come and writes FILE when the run ends, and
after each round of a soak with its availability and credit so far."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.evidence.metrics import Metrics

METRICS_PLUGIN = "pytest-cluster-metrics"


class MetricsSink:
    def __init__(self, path: Path, cluster: str, run_id: str) -> None:
        self.path = path
        self.metrics = Metrics(cluster, run_id)

    @pytest.hookimpl
    def pytest_cluster_result_line(self, config: pytest.Config,
                                   record: Mapping[str, Any]) -> None:
        self.metrics.result(record)

    @pytest.hookimpl
    def pytest_cluster_node_verdict(self, config: pytest.Config,
                                    verdict: dict[str, Any]) -> None:
        self.metrics.verdict(verdict)

    @pytest.hookimpl
    def pytest_cluster_run_ended(self, config: pytest.Config, end: dict[str, Any]) -> None:
        self.metrics.ended(end)
        self.metrics.write(self.path)

    @pytest.hookimpl
    def pytest_cluster_soak_progress(self, config: pytest.Config, rounds: int,
                                     availability: dict[str, float], credit: str,
                                     currency: str) -> None:
        self.metrics.soak(rounds, availability, credit, currency)
        self.metrics.write(self.path)
