"""--cluster-metrics=FILE: a bad FILE is a usage error before any test runs; the sink
writes FILE at the end, after each round of a soak, and says (never raises) when it
cannot."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from pytest_cluster.run.metrics_sink import MetricsSink, metrics_path
from tests.evidence.sinks.test_metrics import SPEC, samples


@pytest.mark.parametrize(("given", "said"), [
    ("", "is empty: expected a file"),
    ("{tmp}", "is a directory"),
    ("{tmp}/missing/m.prom", "does not exist"),
    ("/proc/version", "cannot be written"),
])
def test_a_bad_metrics_file_is_a_usage_error_before_any_test_runs(
        pytester: pytest.Pytester, given: str, said: str) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC)
    option = f"--cluster-metrics={given.format(tmp=pytester.path)}"
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    error = result.stderr.str()
    assert error.startswith(f"ERROR: {option} ") and said in error, error
    assert not (pytester.path / "reports").exists()  # no run directory made for it


@pytest.mark.slow
def test_a_soak_rewrites_the_metrics_after_each_round(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(
        SPEC.replace("interconnect:", "sla: {uptime: 99%, price_per_node_hour: 1000000, "
                     "down_after: 0 s, credits: [{below: 99%, credit: 10%}]}\n"
                     "interconnect:"))
    out = pytester.path / "soak.prom"
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", "--cluster-soak-rounds=2",
                                "-m", "sanity", f"--cluster-metrics={out}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    found = samples(out)
    assert found["pytest_cluster_soak_rounds"][0][1] == 2
    availability = {labels["node"]: value
                    for labels, value in found["pytest_cluster_soak_availability_ratio"]}
    assert availability["n1"] == 1.0 and availability["n2"] < 1.0
    (labels, credit), = found["pytest_cluster_soak_credit"]
    assert labels["currency"] == "USD" and credit > 0


def test_a_metrics_file_that_cannot_be_written_at_the_end_is_said(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its directory gone since the start: said on stderr, the run's evidence kept."""
    gone = tmp_path / "gone"
    gone.mkdir()
    sink = MetricsSink(metrics_path(str(gone / "m.prom")), "c", "run", "acceptance")
    gone.rmdir()
    sink.write(cast("pytest.Config", None))
    assert capsys.readouterr().err.startswith(
        f"pytest-cluster: --cluster-metrics={gone / 'm.prom'} cannot be written: ")
    (tmp_path / "gone").mkdir()
    sink.write(cast("pytest.Config", None))
    assert "pytest_cluster_" in (gone / "m.prom").read_text(encoding="utf-8")
    assert capsys.readouterr().err == ""
