"""measure/network/benchmark.py: a collective benchmark as one distributed job, through the sim
launcher as through any other."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cluster.contract.loader import load_spec
from pytest_cluster.errors import ClusterError
from pytest_cluster.launchers.sim import SimLauncher
from pytest_cluster.measure.network import benchmark
from pytest_cluster.measure.network.benchmark import (
    HANG_MARGIN_S,
    collective_job,
    run_collective,
    stress_job,
)
from pytest_cluster.probes.jobs import job_source
from tests.contract.sections.test_interconnect import sim_cluster

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_a_benchmark_takes_the_same_path_on_the_sim() -> None:
    """run_collective through the sim launcher: simulated from the results themselves,
    one job one number (the slow-node search's pair and the 2-node case agree)."""
    spec = load_spec(EXAMPLES / "sim-h100-64.yaml")
    assert spec.interconnect is not None
    launcher = SimLauncher.from_spec(spec)
    pair = run_collective(launcher, spec.interconnect, "all_reduce",
                          ("sim-gpu-01", "sim-gpu-02"), [4 * 2**30])
    again = run_collective(launcher, spec.interconnect, "all_reduce",
                           ["sim-gpu-01", "sim-gpu-02"], [4 * 2**30, 2**30])
    assert pair.ok and pair.simulated
    assert set(pair.details) == {"simulated", "transport", "nccl_log_first_rank"}
    assert pair.details["transport"]["inter_node"] == {"ib": "0-15"}
    assert [p.busbw for p in pair.points] == [360332347938.57837]
    assert again.at(4 * 2**30) == pair.points[0]
    one = run_collective(launcher, spec.interconnect, "all_reduce", ["sim-gpu-01"],
                         [4 * 2**30])  # what the sim gave before jobs went through it
    assert one.points[0].busbw == pytest.approx(364756480670.0723, rel=1e-12)


def test_a_rank_without_a_gpu_fails_the_simulated_job() -> None:
    launcher, spec = sim_cluster("nccl")
    run = run_collective(launcher, spec, "all_reduce", ["n1", "n3"], [2**20])
    assert run.simulated and not run.ok
    assert run.error == "n3 rank 3 exited with code 1: LOCAL_RANK 1 but n3 has 1 GPU(s)"
    assert run_collective(launcher, spec, "all_reduce", ["n1"], [2**20]).ok


def test_a_benchmark_job_is_the_collective_probe_with_the_sections_settings() -> None:
    _, spec = sim_cluster()
    env = (("NCCL_IB_HCA", "=mlx5_0:1"),)
    job = collective_job(spec, "all_gather", ("n1", "n3"), [2**20, 2**30], env)
    assert (job.nodes, job.program, job.env, job.ranks_per_node) == (
        ("n1", "n3"), job_source("collective"), env, spec.ranks_per_node)
    assert job.args == ("--collective", "all_gather", "--sizes", f"{2**20},{2**30}",
                        "--warmup", str(spec.warmup), "--iterations", str(spec.iterations),
                        "--backend", "gloo", "--hang-bound",
                        f"{max(spec.timeout_s / 2, spec.timeout_s - HANG_MARGIN_S):g}")
    assert (job.init_timeout_s, job.wall_timeout_s) == (min(120.0, spec.timeout_s),
                                                        spec.timeout_s)
    stress = stress_job(spec, ["n1"])
    assert stress.args == ("--collective", "all_reduce", "--sizes", str(spec.search_payload),
                           "--warmup", str(spec.warmup), "--iterations", "1",
                           "--backend", "gloo", "--seconds", f"{spec.stress_time_s:g}",
                           "--hang-bound", f"{stress.wall_timeout_s - HANG_MARGIN_S:g}")
    assert stress.wall_timeout_s > spec.stress_time_s  # the loop's time and its start


def test_a_job_the_launcher_could_not_run_is_the_runs_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    launcher, spec = sim_cluster()

    def refused(*args: object, **kwargs: object) -> object:
        raise ClusterError("srun: error: Unable to allocate resources")

    monkeypatch.setattr(benchmark, "run_job", refused)
    run = run_collective(launcher, spec, "all_reduce", ["n1"], [2**20])
    assert not run.ok and run.error == "srun: error: Unable to allocate resources"
    assert (run.nodes, run.points) == (("n1",), ())
    stress = benchmark.run_collective_stress(launcher, spec, ["n1"])
    assert stress.error == "srun: error: Unable to allocate resources"
