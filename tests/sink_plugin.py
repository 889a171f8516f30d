"""An outside plugin that takes pytest-cluster's evidence elsewhere through its hooks (see
pytest_cluster/hookspecs.py): each call appended to the JSON Lines file named by
$PYTEST_CLUSTER_SINK. Load it with `-p tests.sink_plugin`; it touches none of our code."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest


def _put(hook: str, **fields: Any) -> None:
    with Path(os.environ["PYTEST_CLUSTER_SINK"]).open("a", encoding="utf-8") as sink:
        sink.write(json.dumps({"hook": hook, **fields}, sort_keys=True, default=str) + "\n")


def pytest_cluster_result_line(record: dict[str, Any]) -> None:
    _put("result_line", record=record)


def pytest_cluster_soak_round(record: dict[str, Any]) -> None:
    _put("soak_round", record=record)


def pytest_cluster_node_verdict(verdict: dict[str, Any]) -> None:
    _put("node_verdict", verdict=verdict)


def pytest_cluster_run_ended(config: pytest.Config, end: dict[str, Any]) -> None:
    _put("run_ended", end=end, cluster=config.getoption("cluster"))


def pytest_cluster_evidence_sealed(run_dir: Path, manifest: Path) -> None:
    _put("evidence_sealed", run_dir=str(run_dir), manifest=str(manifest),
         exists=manifest.is_file())
