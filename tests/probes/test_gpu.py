"""The GPU probes against the simulated NVML (which is itself checked against the real
nvidia-ml-py in tests/sim/nvml/test_pynvml.py) and the torch probe without CUDA (reading
their payloads: tests/measure/test_gpu_facts.py)."""

from __future__ import annotations

import getopt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.contract.loader import parse_spec
from pytest_cluster.contract.model import GpuSpec
from pytest_cluster.contract.sections.sim_records import SimSpec
from pytest_cluster.launchers.sim import SIM_NVML_DIR, gpu_probe_env
from pytest_cluster.measure.calls import gpu_perf_call
from pytest_cluster.probes import probe_source
from pytest_cluster.sim.cluster import SimNode, describe_node
from tests.sim.nvml.test_pynvml import simulated_pynvml
from tests.sim.test_cluster import SIM


def run_gpu_probe(description: SimNode | None, *args: str) -> dict[str, Any]:
    env = dict(os.environ)
    if description is not None:
        env = gpu_probe_env(env, description)
    else:
        env["PYTHONPATH"] = str(SIM_NVML_DIR)
    done = subprocess.run([sys.executable, "-", *args, "--no-kernel-log"],
                          input=probe_source("gpu"), capture_output=True, text=True,
                          env=env, timeout=60, check=True)
    document = json.loads(done.stdout.splitlines()[-1])
    assert document["probe"] == "gpu"
    data: dict[str, Any] = document["data"]
    return data


def test_gpu_probe_reads_every_field_through_the_simulated_nvml() -> None:
    data = run_gpu_probe(describe_node(SIM, "n2"), "--xid-window", "0.2")
    assert data["simulated_nvml"] is True
    assert data["count"] == 8
    assert data["driver"] == "550.90.07"
    assert data["cuda_driver"] == "12.4"
    gpu = data["gpus"][2]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["uuid"].startswith("GPU-")
    assert gpu["memory"]["used"] == 5 * 2**30
    assert gpu["processes"] == [{"pid": 4242, "used_bytes": 5 * 2**30}]
    assert gpu["pcie"] == {"gen": 1, "max_gen": 5, "width": 16, "max_width": 16, "replays": 0}
    assert gpu["nvlink"]["total"] == 18
    assert gpu["nvlink"]["up"] == 18
    assert gpu["row_remap"]["pending"] is False
    assert gpu["ecc"]["mode"] == {"current": 1, "pending": 1}
    assert gpu["pci_bus_id"] == "00000000:3a:00.0"
    assert (gpu["vbios"], gpu["inforom"]) == ("96.00.74.00.0F", "G520.0200.00.05")
    assert gpu["power_limit_w"] == 700.0
    assert data["xid"]["events"] == [{"gpu": 2, "xid": 79}]
    assert "kernel_log" not in data["xid"]


def test_gpu_probe_without_nvml_says_so() -> None:
    data = run_gpu_probe(None)
    assert data["error"] == "NVML not available: NVML Shared Library Not Found"
    assert "gpus" not in data


def test_gpu_probe_without_nvidia_ml_py_says_so(tmp_path: Path) -> None:
    (tmp_path / "pynvml.py").write_text("raise ImportError('no module named pynvml')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-"], input=probe_source("gpu"), env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    data = json.loads(done.stdout)["data"]
    assert data["error"].startswith("nvidia-ml-py is not installed")


@pytest.mark.slow
def test_gpu_perf_without_cuda_says_so() -> None:
    done = subprocess.run([sys.executable, "-", "--load-time", "1"],
                          input=probe_source("gpu_perf"), capture_output=True, text=True,
                          timeout=300, check=True)
    data = json.loads(done.stdout.splitlines()[-1])["data"]
    try:
        import torch
    except ImportError:
        assert data["error"].startswith("torch is not installed")
        return
    if torch.cuda.is_available():  # pragma: no cover - the accelerator machine
        assert data["count"] == torch.cuda.device_count()
        return
    assert data["error"] == f"torch {torch.__version__} sees no CUDA GPU"
    assert "gpus" not in data


def test_matmul_shape_from_the_spec() -> None:
    gpus = gpus_of("  count: 8\n  matmul: {bf16: '>= 1 TFLOPS'}\n"
                   "  matmul_size: [4096, 8192, 1024]\n")
    assert gpus.matmul_shape == (4096, 8192, 1024)
    call = gpu_perf_call(gpus)
    assert call is not None and call.args[2:4] == ("--shape", "4096,8192,1024")
    assert gpus_of("  count: 8\n  matmul_size: 2048\n").matmul_shape == (2048, 2048, 2048)


def gpus_of(text: str) -> GpuSpec:
    spec = parse_spec("cluster: {name: x, nodes: a}\ngpus:\n" + text, "t.yaml")
    assert spec.gpus is not None
    return spec.gpus


FAKE_TORCH = Path(__file__).resolve().parent / "fakes"


def run_gpu_perf(gpus: int, *args: str, die: int | None = None) -> dict[str, Any]:
    """The real gpu_perf probe with the fake torch (no GPU here) and the simulated NVML."""
    sim = SimSpec("H100-SXM-80GB", gpus)
    env = gpu_probe_env(dict(os.environ), describe_node(sim, "n1"))
    env["PYTHONPATH"] = f"{FAKE_TORCH}{os.pathsep}{env['PYTHONPATH']}"
    env["FAKE_TORCH_GPUS"] = str(gpus)
    if die is not None:
        env["FAKE_TORCH_DIE"] = str(die)
    done = subprocess.run([sys.executable, "-", "--iterations", "10", "--warmup", "2",
                           "--warmup-time", "0", "--load-time", "0.3",
                           "--copy-bytes", str(2**20), *args],
                          input=probe_source("gpu_perf"), env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    data: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])["data"]
    return data


def test_gpu_perf_runs_one_process_per_gpu_and_collects_all() -> None:
    data = run_gpu_perf(3, "--dtypes", "bf16,fp16")
    assert data["torch"] == "0.0+fake"
    assert data["count"] == 3
    assert [g["index"] for g in data["gpus"]] == [0, 1, 2]
    for gpu in data["gpus"]:
        assert "error" not in gpu, gpu
        assert set(gpu["matmul"]) == {"bf16", "fp16"}
        assert gpu["matmul"]["bf16"]["shape"] == [8192, 8192, 8192]
        total = 3 * 2**30 + 100 * 2**20  # what the fake GPU has
        assert total - 4 * 2**20 <= gpu["usable_memory"]["allocated_bytes"] <= total
        for part in ("copy", "h2d", "d2h"):
            assert gpu[part]["bytes_per_s"] > 0
        assert gpu["sustained"]["matmuls"] > 0
        # the sampler read the (simulated) NVML while the processes ran, joined by UUID
        assert gpu["load"]["samples"] > 0
        assert gpu["load"]["load_samples"] > 0
        assert gpu["load"]["pcie_gen_max"] == 1  # the simulated GPUs idle at Gen1
    assert len(data["p2p"]["pairs"]) == 3 * 2


@pytest.mark.slow
def test_gpu_perf_skips_parts_and_survives_a_dying_gpu_process() -> None:
    data = run_gpu_perf(3, "--dtypes", "bf16", "--skip", "p2p", "--skip", "usable_memory",
                        die=1)
    assert "p2p" not in data
    by_index = {g["index"]: g for g in data["gpus"]}
    assert by_index[1]["error"] == "the process for GPU 1 died (exit code 3)"
    for index in (0, 2):
        assert "usable_memory" not in by_index[index]
        assert by_index[index]["matmul"]["bf16"]["tflops_median"] > 0


def test_simulated_handles_are_like_ctypes_pointers() -> None:
    """The real binding's handles are ctypes pointers: unhashable, equal only to
    themselves (a probe that keyed a dict by handle crashed on a real H100)."""
    import ctypes

    with pytest.raises(TypeError):
        hash(ctypes.pointer(ctypes.c_int(0)))
    fake = simulated_pynvml()
    handle = fake._Handle(0)
    with pytest.raises(TypeError):
        hash(handle)
    assert handle != type(handle)(0)


def test_gpu_probe_options() -> None:
    from pytest_cluster.probes.gpu import options

    assert options([]) == (2.0, False)
    assert options(["--xid-window", "5", "--no-kernel-log"]) == (5.0, True)
    assert options(["--xid-window=0.5"]) == (0.5, False)
    for bad in (["--bogus"], ["--xid-window", "x"], ["extra"], ["--xid-window"]):
        with pytest.raises((ValueError, getopt.GetoptError)):
            options(bad)


def test_gpu_probe_refuses_unknown_options_with_usage() -> None:
    done = subprocess.run([sys.executable, "-S", "-", "--bogus"], input=probe_source("gpu"),
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "usage: gpu.py" in done.stderr and "--bogus" in done.stderr
    assert done.stdout == ""


def test_the_gpu_probe_starts_without_typing_or_argparse() -> None:
    """On a simulated node the probe starts once per node: what it imports is its cost
    (typing and argparse were a third of it)."""
    env = gpu_probe_env(dict(os.environ), describe_node(SIM, "n1"))
    done = subprocess.run([sys.executable, "-X", "importtime", "-S", "-", "--no-kernel-log",
                           "--xid-window", "0"], input=probe_source("gpu"), env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["data"]["simulated_nvml"] is True
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:") and line.count("|") == 2}
    assert "pynvml" in imported
    assert not imported & {"typing", "argparse", "shutil", "dataclasses", "subprocess"}


def test_an_inforom_nvml_cannot_read_is_its_error_never_a_version() -> None:
    from pytest_cluster.probes import gpu as probe

    class Nvml:
        class NVMLError(Exception):
            pass

        @staticmethod
        def nvmlDeviceGetInforomImageVersion(handle: object) -> str:
            raise Nvml.NVMLError("Not Supported")

    assert probe.inforom(Nvml, None) == {
        "error": "nvmlDeviceGetInforomImageVersion: Not Supported"}
    assert probe.inforom(object(), None) == {
        "error": "nvmlDeviceGetInforomImageVersion: not in this nvidia-ml-py"}
