"""probes/gpu_perf/processes.py: what torch says of the GPUs, one GPU's process run here
with the fake torch (no GPU, no fork), the GPU-to-GPU copies, and a torch without CUDA."""

from __future__ import annotations

import os
import threading
import types
from typing import Any

import pytest

from pytest_cluster.probes.gpu_perf import processes
from pytest_cluster.probes.gpu_perf.options import PARTS, parse_options
from tests.probes.gpu_perf.fake import fake_torch

SMALL = ["--shape", "64", "--copy-bytes", str(2**20), "--xfer-bytes", str(2**20),
         "--iterations", "5", "--warmup", "1", "--warmup-time", "0", "--load-time", "0.01"]


class Queue:
    def __init__(self) -> None:
        self.items: list[Any] = []

    def put(self, item: Any) -> None:
        self.items.append(item)


class Loaded:
    """multiprocessing.Value("i") as the worker uses it."""

    def __init__(self) -> None:
        self.value = 0
        self.seen: list[int] = []
        self.lock = threading.Lock()

    def get_lock(self) -> Loaded:
        return self

    def __enter__(self) -> None:
        self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.seen.append(self.value)
        self.lock.release()


def with_torch(monkeypatch: pytest.MonkeyPatch, torch: Any) -> Any:
    monkeypatch.setattr(processes, "load_torch", lambda: torch)
    return torch


def test_the_nccl_torch_loads_is_its_version() -> None:
    def torch(version: Any) -> Any:
        return types.SimpleNamespace(cuda=types.SimpleNamespace(
            nccl=types.SimpleNamespace(version=lambda: version)))

    assert processes.nccl_version(torch((2, 21, 5))) == "2.21.5"
    assert processes.nccl_version(torch(2708)) == "2708"
    assert processes.nccl_version(fake_torch()) is None  # none: not guessed


def test_what_torch_sees_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_CLUSTER_SIM_NODE", raising=False)
    monkeypatch.setenv("FAKE_TORCH_GPUS", "3")
    with_torch(monkeypatch, fake_torch())
    q = Queue()
    processes.device_info(q)
    assert q.items == [{"torch": "0.0+fake", "cuda": "12.4", "nccl": None, "count": 3,
                        "uuids": [f"fake-{index}" for index in range(3)]}]


def test_a_torch_without_cuda_or_one_that_fails_is_said(
        monkeypatch: pytest.MonkeyPatch) -> None:
    torch = with_torch(monkeypatch, fake_torch())
    torch.cuda.is_available = lambda: False
    q = Queue()
    processes.device_info(q)
    assert q.items[-1] == {"torch": "0.0+fake", "cuda": "12.4", "nccl": None,
                           "error": "torch 0.0+fake sees no CUDA GPU"}

    def broken() -> Any:
        raise OSError("libcudart.so.12: cannot open shared object file")

    monkeypatch.setattr(processes, "load_torch", broken)
    processes.device_info(q)
    assert q.items[-1] == {"error": "cannot use torch: OSError: libcudart.so.12: cannot open "
                                    "shared object file"}


def test_a_broken_barrier_does_not_stop_a_waiting_gpu() -> None:
    barrier = threading.Barrier(2)
    barrier.abort()
    processes.wait(barrier)  # returns


def test_one_gpus_process_measures_every_part_asked_for(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with_torch(monkeypatch, fake_torch())
    opts = parse_options([*SMALL, "--dtypes", "bf16,fp8", "--sdc"])
    q, loaded = Queue(), Loaded()
    processes.worker(1, opts, threading.Barrier(1), threading.Lock(), loaded, q)
    [out] = q.items
    assert (out["index"], out["name"], out["capability"]) == (1, "Fake GPU", [9, 0])
    assert "error" not in out
    for part in ("usable_memory", "copy", "h2d", "d2h", "sustained"):
        assert "error" not in out[part], part
    assert out["copy"]["buffer_bytes"] == 2**20
    assert set(out["matmul"]) == {"bf16", "fp8"}
    assert out["matmul"]["bf16"]["shape"] == [64, 64, 64]
    # the fake can do no fp8 nor the SDC check: each is its error, the rest measured
    assert out["matmul"]["fp8"]["error"].startswith("RuntimeError: fp8 matmul needs")
    assert out["sdc"]["error"].startswith("AttributeError: ")
    assert loaded.seen == [1, 0]  # loaded while the matmuls ran, then not


def test_the_parts_skipped_are_not_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    with_torch(monkeypatch, fake_torch())
    opts = parse_options([*SMALL, "--dtypes", "", "--load-time", "0",
                          *(arg for part in PARTS for arg in ("--skip", part))])
    q = Queue()
    processes.worker(0, opts, threading.Barrier(1), threading.Lock(), Loaded(), q)
    assert set(q.items[0]) == {"index", "name", "uuid", "capability", "matmul"}
    assert q.items[0]["matmul"] == {}


def test_a_gpu_process_that_fails_says_why_and_frees_the_others(
        monkeypatch: pytest.MonkeyPatch) -> None:
    torch = with_torch(monkeypatch, fake_torch())

    def lost(index: int) -> Any:
        raise RuntimeError("CUDA error: unspecified launch failure")

    torch.cuda.get_device_properties = lost
    barrier, q = threading.Barrier(2), Queue()
    processes.worker(0, parse_options(SMALL), barrier, threading.Lock(), Loaded(), q)
    [out] = q.items
    assert out["error"] == "RuntimeError: CUDA error: unspecified launch failure"
    assert "unspecified launch failure" in out["traceback"]
    assert barrier.broken  # the other GPUs' processes do not wait for it


def test_the_gpu_to_gpu_copies_are_every_ordered_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    with_torch(monkeypatch, fake_torch())
    q, count = Queue(), 3
    processes.p2p_worker(count, parse_options(SMALL), q)
    pairs = q.items[0]["p2p"]["pairs"]
    assert len(pairs) == count * (count - 1)
    assert q.items[0]["p2p"]["iterations"] == 1  # a tenth of 5, at least one


def test_a_torch_that_sees_no_gpu_is_the_payloads_error(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = with_torch(monkeypatch, fake_torch())  # the forked child inherits it
    torch.cuda.is_available = lambda: False
    opts = parse_options(SMALL)
    data = processes.run(opts)
    assert data == {"torch": "0.0+fake", "cuda": "12.4", "nccl": None, "pid": os.getpid(),
                    "options": opts, "error": "torch 0.0+fake sees no CUDA GPU"}
