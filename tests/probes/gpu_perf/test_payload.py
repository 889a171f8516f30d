"""probes/gpu_perf/payload.py: the types of what the probe prints hold every key it prints,
and its options' type is exactly what parse_options gives."""

from __future__ import annotations

import threading
import typing
from typing import Any

import pytest

from pytest_cluster.probes.gpu_perf import payload, processes
from pytest_cluster.probes.gpu_perf.options import parse_options
from tests.probes.gpu_perf.fake import fake_torch
from tests.probes.gpu_perf.test_processes import SMALL, Loaded, Queue


def keys(kind: Any) -> frozenset[str]:
    return frozenset(kind.__required_keys__ | kind.__optional_keys__)


def undeclared(value: Any, kind: Any, where: str = "") -> list[str]:
    """The keys of `value`, at any depth, that its TypedDict `kind` does not declare."""
    if typing.is_typeddict(kind):
        hints = typing.get_type_hints(kind)
        return [found for key, inner in value.items()
                for found in ([f"{where}.{key}"] if key not in hints
                              else undeclared(inner, hints[key], f"{where}.{key}"))]
    if typing.get_origin(kind) is dict:
        inner_kind = typing.get_args(kind)[1]
        return [found for key, inner in value.items()
                for found in undeclared(inner, inner_kind, f"{where}[{key}]")]
    if typing.get_origin(kind) is list:
        inner_kind = typing.get_args(kind)[0]
        return [found for index, inner in enumerate(value)
                for found in undeclared(inner, inner_kind, f"{where}[{index}]")]
    return []


def test_the_options_type_is_what_parse_options_gives() -> None:
    assert set(parse_options([])) == keys(payload.Options)


def test_a_gpus_measurements_are_declared_key_by_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "load_torch", fake_torch)
    q = Queue()
    processes.worker(0, parse_options([*SMALL, "--dtypes", "bf16,fp16", "--sdc"]),
                     threading.Barrier(1), threading.Lock(), Loaded(), q)
    processes.p2p_worker(2, parse_options(SMALL), q)
    gpu, p2p = q.items
    assert {"usable_memory", "copy", "h2d", "d2h", "matmul", "sustained"} <= set(gpu)
    assert undeclared(gpu, payload.PerfGpu) == []
    assert undeclared(p2p, payload.GpuPerfData) == []
    assert p2p["p2p"]["pairs"] and set(p2p["p2p"]["pairs"][0]) == keys(payload.P2pPair)


def test_a_key_the_types_do_not_declare_is_found() -> None:
    """The check above can fail."""
    gpu = {"index": 0, "copy": {"bytes_per_s": 1.0, "speed": 2},
           "matmul": {"bf16": {"tflops_median": 1.0, "flops": 3}}}
    assert undeclared(gpu, payload.PerfGpu) == [".copy.speed", ".matmul[bf16].flops"]


def test_each_measured_part_can_be_its_error() -> None:
    parts = [payload.UsableMemory, payload.Rate, payload.Matmul, payload.Sustained,
             payload.Sdc, payload.P2p, payload.Load, payload.PerfGpu, payload.GpuPerfData]
    assert [kind.__name__ for kind in parts if "error" not in keys(kind)] == []
