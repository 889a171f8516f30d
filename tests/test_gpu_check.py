"""bench/gpu_check.py (`make gpu-check`, issue 29) where there is no GPU: it says so in one
line and exits 0; its spec for each model it knows is a valid spec; on the simulated
launcher it runs the suite at both levels, signs and verifies the evidence and prints its
table and `name=value` lines; its rows set each figure beside the plain loop's and the
published one. On a GPU machine it runs for real (docs/development.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import gpu_check  # noqa: E402 - bench/gpu_check.py

from pytest_cluster.contract import load_spec  # noqa: E402


def check(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH / "gpu_check.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
def test_without_cuda_it_says_so_in_one_line_and_exits_0(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the check would run for real")
    done = check(cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"gpu-check: no CUDA here (torch {torch.__version__} sees no GPU): nothing to check"]
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("model", sorted(gpu_check.EXAMPLES))
@pytest.mark.parametrize("count", [1, 2, 8])
def test_the_spec_of_each_model_is_a_valid_spec(tmp_path: Path, model: str, count: int) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(gpu_check.check_spec(model, count, nccl_tests=Path("/opt/nccl-tests/build")),
                    encoding="utf-8")
    found = load_spec(str(spec))
    assert found.gpus is not None and found.gpus.slots == count
    assert found.cluster.launcher == "local" and found.cluster.nodes == ("localhost",)
    assert found.training is not None and (found.training.ranks_per_node,
                                           found.training.backend) == (1, "nccl")
    if count == 1:  # one rank alone has no one to talk to
        assert found.interconnect is None
    else:
        assert found.interconnect is not None
        assert (found.interconnect.engine, found.interconnect.ranks_per_node) == (
            "nccl-tests", count)
    simulated = tmp_path / "sim.yaml"
    simulated.write_text(gpu_check.check_spec(model, count, simulate=True), encoding="utf-8")
    assert load_spec(str(simulated)).cluster.launcher == "sim"


@pytest.mark.slow
def test_on_the_simulator_it_runs_both_levels_signs_verifies_and_tabulates(
        tmp_path: Path) -> None:
    done = check("--simulate", "H100-SXM-80GB", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    default = next(line for line in lines if line.startswith("default: "))
    stress = next(line for line in lines if line.startswith("stress: "))
    assert "exit 0" in default and "verify: VERIFIED: FILES MATCH, SIGNED BY" in default
    assert "2 passed" in stress and "VERIFIED" in stress  # stress_throttle and sdc
    assert any(line.startswith("gpus.matmul.bf16 ") and "794.5" in line and "passed" in line
               for line in lines)  # the published figure beside ours
    assert "gpus.sdc: passed" in done.stdout
    values = dict(line.split("=", 1) for line in lines if "=" in line and " " not in line)
    assert values["signed_and_verified"] == "2/2"
    assert values["failed_cases"] == "0" and int(values["cases"]) > 15
    assert lines[-1].startswith("gpu_check_ratio=")  # nan: no torch loop on the simulator
    assert (tmp_path / "out" / "default" / "latest" / "verdict.json").is_file()
    assert (tmp_path / "out" / "throwaway-key.pub.pem").is_file()


def test_a_row_sets_ours_beside_the_torch_loop_and_the_published_figure() -> None:
    records = [
        {"spec_key": "gpus.matmul.bf16", "gpu": g, "measured_base": v, "unit": "TFLOPS",
         "comparison": ">=", "outcome": o, "reference_ratio": v / 794.5e12}
        for g, v, o in ((0, 700e12, "passed"), (1, 500e12, "failed"))]
    records.append({"spec_key": "training.step_time", "measured_base": 0.5, "unit": "s",
                    "comparison": "<=", "outcome": "passed"})
    records.append({"spec_key": "training.step_time", "measured_base": 0.7, "unit": "s",
                    "comparison": "<=", "outcome": "passed"})
    records.append({"spec_key": "gpus.model", "measured": "H100", "outcome": "passed"})
    rows = {row.figure: row for row in gpu_check.rows_of(records,
                                                         {"gpus.matmul.bf16": 625e12})}
    bf16 = rows["gpus.matmul.bf16"]
    assert (bf16.ours, bf16.plain, bf16.outcome) == (500.0, 625.0, "failed")  # the worst GPU
    assert bf16.vs_plain == pytest.approx(0.8)
    assert bf16.published == pytest.approx(794.5) and bf16.vs_published == pytest.approx(
        500 / 794.5)
    assert rows["training.step_time"].ours == 0.7  # the worst of a <= is its highest
    assert "gpus.model" not in rows
    shown = gpu_check.table(list(rows.values()))
    assert shown[2].split() == ["gpus.matmul.bf16", "TFLOPS", "500.0", "625.0", "0.80",
                                "794.5", "0.63", "failed"]


def test_nccl_tests_runs_through_our_probe_and_parser(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """With -g 1, on a stand-in binary that prints a published table (no GPU here)."""
    from tests.measure.network.test_nccl_tests import CAPTURES, STAND_IN

    binary = tmp_path / "all_reduce_perf"
    binary.write_text(STAND_IN)
    binary.chmod(0o755)
    monkeypatch.setenv("TABLE", str(CAPTURES / "2.13-nccl-tests-252.txt"))
    monkeypatch.delenv("DOCUMENT", raising=False)
    # the largest payload's out-of-place figures, from its table (the stand-in's -J file
    # is empty)
    assert gpu_check.nccl_tests_row(tmp_path, 60) == {
        "bytes": 8589934592, "algbw": 54.34e9, "busbw": 95.10e9, "wrong": 0,
        "source": "text", "version": None}
    monkeypatch.setenv("EXIT", "3")
    assert gpu_check.nccl_tests_row(tmp_path, 60)["error"].startswith("exit 3")
    assert "no executable" in gpu_check.nccl_tests_row(tmp_path / "absent", 60)["error"]
