"""--cluster-valid-for: how long this run's verdict holds (verdict.json's valid_until after
its made_at; evidence/verdict/age.py), checked at configure time: a value that is no
duration is a usage error (exit 4) before anything runs."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_cluster.errors import UnitError, head
from pytest_cluster.evidence.verdict import age
from pytest_cluster.units import parse_duration


def add_options(group: Any) -> None:
    group.addoption(
        "--cluster-valid-for", metavar="DURATION", default=None,
        help="how long the verdict holds (verdict.json's valid_until, after its made_at): "
             "e.g. 24h, 30min or seconds (default 24h, a fleet's daily acceptance run: a "
             "health check reruns far more often, so a verdict older than a day means the "
             "loop that renews it stopped); `pytest-cluster gate` refuses it after that as "
             "stale, an ERROR that drains nothing")


def valid_for(config: pytest.Config) -> float:
    """How long this run's verdict holds (--cluster-valid-for), in seconds; a usage error
    where it is no duration."""
    raw = config.getoption("cluster_valid_for")
    if raw is None:
        return age.DEFAULT_VALID_FOR_S
    try:
        return parse_duration(raw)
    except UnitError as exc:
        raise pytest.UsageError(f"--cluster-valid-for={head(str(raw), 40)}: {exc}") from None
