"""--cluster-valid-for (run/validity.py): verdict.json's made_at is the run's end and its
valid_until that plus the duration given (a day by default); a value that is no duration
is a usage error before anything runs (more forms: tests/run/test_configure.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_cluster.evidence.verdict.age import DEFAULT_VALID_FOR_S, parse_utc

SPEC = "cluster: {name: held, nodes: [n1], launcher: sim}\ngpus: {count: 8}\nsim: {}\n"


def held_for(verdict: dict[str, Any]) -> float:
    return parse_utc(verdict["valid_until"], "valid_until") - parse_utc(verdict["made_at"],
                                                                        "made_at")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    (pytester.path / "trial.yaml").write_text(SPEC)
    return pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", *args)


@pytest.mark.parametrize(("args", "seconds"), [
    (["--cluster-valid-for=30min"], 1800), (["--cluster-valid-for", "2 h"], 7200),
    (["--cluster-valid-for=90"], 90), ([], DEFAULT_VALID_FOR_S)])
def test_the_verdict_holds_for_cluster_valid_for_from_the_runs_end(
        pytester: pytest.Pytester, args: list[str], seconds: float) -> None:
    assert _run(pytester, *args).ret == pytest.ExitCode.OK
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    assert verdict["made_at"] == verdict["ended_at"]
    assert held_for(verdict) == seconds


def test_a_valid_for_that_is_no_duration_runs_nothing(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--cluster-valid-for=a week")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: --cluster-valid-for=a week: expected a duration like '24 h', '30 min' or "
            "seconds (3600), above 0 and at most 366 days, got 'a week'") in result.stderr.lines
    assert not (pytester.path / "reports").exists()
