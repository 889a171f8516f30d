"""--cluster-metrics=FILE: a sink of the run's evidence (hookspecs.py) that keeps the
metrics (evidence/sinks/metrics.py) as the lines come and writes FILE when the run ends, and
after each round of a soak with its availability and credit so far."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_cluster.evidence.record.plan import level_of_run, selection
from pytest_cluster.evidence.sinks.metrics import Metrics

if TYPE_CHECKING:
    from pytest_cluster.evidence.record.lines import EndLine, Line
    from pytest_cluster.evidence.verdict.nodes import NodeEntry

METRICS_PLUGIN = "pytest-cluster-metrics"


def metrics_path(given: str) -> Path:
    """--cluster-metrics' FILE, checked before any test runs: a file that can be written
    in a directory that exists (the textfile collector's); ValueError says what is wrong."""
    if not given:
        raise ValueError("is empty: expected a file to write the metrics to (e.g. "
                         "/var/lib/node_exporter/textfile/pytest_cluster.prom)")
    path = Path(given)
    if path.is_dir():
        raise ValueError("is a directory: expected a file in it (e.g. "
                         f"{path / 'pytest_cluster.prom'})")
    if path.exists() and not path.is_file():
        raise ValueError("is not a regular file")
    parent = path.parent
    if not parent.is_dir():
        raise ValueError(f"its directory {parent} does not exist")
    try:  # as the write will: a temporary file beside it, renamed over it
        with tempfile.NamedTemporaryFile(dir=parent, prefix=f".{path.name}."):
            pass
    except OSError as exc:
        raise ValueError(f"its directory {parent} cannot be written (the file is replaced "
                         "atomically: a temporary file is written beside it): "
                         f"{exc.strerror or exc}") from None
    return path


def run_level(config: pytest.Config) -> str:
    """The level this run judges (-m), as the metrics label it."""
    return level_of_run(selection(config))


class MetricsSink:
    def __init__(self, path: Path, cluster: str, run_id: str, level: str) -> None:
        self.path = path
        self.metrics = Metrics(cluster, run_id, level)

    @pytest.hookimpl
    def pytest_cluster_result_line(self, config: pytest.Config, record: Line) -> None:
        self.metrics.result(record)

    @pytest.hookimpl
    def pytest_cluster_node_verdict(self, config: pytest.Config,
                                    verdict: NodeEntry) -> None:
        self.metrics.verdict(verdict)

    @pytest.hookimpl
    def pytest_cluster_run_ended(self, config: pytest.Config, end: EndLine) -> None:
        self.metrics.ended(end)
        self.write(config)

    def write(self, config: pytest.Config) -> None:
        """Write the file; one that cannot be written now (its disk full, its directory
        gone since the start) is said on stderr: the run's evidence is kept all the same."""
        try:
            self.metrics.write(self.path)
        except OSError as exc:
            sys.stderr.write(f"pytest-cluster: --cluster-metrics={self.path} cannot be "
                             f"written: {exc.strerror or exc}\n")

    @pytest.hookimpl
    def pytest_cluster_soak_progress(self, config: pytest.Config, rounds: int,
                                     availability: dict[str, float], credit: str,
                                     currency: str) -> None:
        self.metrics.soak(rounds, availability, credit, currency)
        self.write(config)
