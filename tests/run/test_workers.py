"""`-n N` with --cluster starts no more pytest-xdist workers than the machine has CPUs
beside the controller's (pytest_cluster.run.workers): above that they only contend for the
CPUs (bench/xdist.py)."""

from __future__ import annotations

import pytest

from pytest_cluster.run.workers import fit_workers
from tests.conftest import planned

SPEC = """\
cluster:
  name: tiny
  nodes: sim-[1-2]
  launcher: sim
host:
  cpu_cores: ">= 1"
sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 8
"""


@pytest.mark.parametrize(("requested", "cpus", "workers"), [
    (4, 16, 4), (4, 5, 4), (1, 2, 1), (4, 4, 3), (16, 3, 2), (4, 2, 0), (2, 2, 0),
    (2, 1, 0)])
def test_workers_are_cut_to_the_cpus_beside_the_controller_and_one_is_a_serial_run(
        requested: int, cpus: int, workers: int) -> None:
    assert fit_workers(requested, cpus) == workers


def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cpus: int,
        *args: str) -> pytest.RunResult:
    monkeypatch.setattr("pytest_cluster.run.configure.usable_cpus", lambda: cpus)
    (pytester.path / "t.yaml").write_text(SPEC, encoding="utf-8")
    return pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", *args)


@pytest.mark.slow
def test_more_workers_than_cpus_start_one_per_cpu(pytester: pytest.Pytester,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(pytester, monkeypatch, 3, "-n", "5")
    every = len(planned(pytester, SPEC))
    result.assert_outcomes(passed=every)
    result.stdout.fnmatch_lines([
        "pytest-cluster: -n 5 runs 2 workers: this machine has 3 CPU(s)*",
        f"2 workers ?{every} items?"])
    assert (pytester.path / "reports" / "latest" / "results.jsonl").is_file()


def test_two_cpus_run_serially_and_say_why(pytester: pytest.Pytester,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(pytester, monkeypatch, 2, "-n", "4")
    every = len(planned(pytester, SPEC))
    result.assert_outcomes(passed=every)
    result.stdout.fnmatch_lines(["pytest-cluster: -n 4 runs serially: this machine has 2 CPU(s)*"])
    result.stdout.no_fnmatch_line("*workers*items*")


@pytest.mark.slow
def test_workers_the_cpus_allow_are_started_as_asked(pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(pytester, monkeypatch, 8, "-n", "2")
    every = len(planned(pytester, SPEC))
    result.assert_outcomes(passed=every)
    result.stdout.fnmatch_lines([f"2 workers ?{every} items?"])
    result.stdout.no_fnmatch_line("pytest-cluster: -n*")


@pytest.mark.slow
def test_workers_given_as_gateways_are_started_regardless(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(pytester, monkeypatch, 1, "--tx", "2*popen", "--dist", "load")
    every = len(planned(pytester, SPEC))
    result.assert_outcomes(passed=every)
    result.stdout.fnmatch_lines([f"2 workers ?{every} items?"])
    result.stdout.no_fnmatch_line("pytest-cluster: -n*")
