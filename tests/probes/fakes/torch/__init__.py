"""A stand-in for torch with CUDA, for testing how the gpu_perf probe runs its processes
(fork per GPU, barriers, result collection, a dying GPU process) on a machine without a
GPU. It computes nothing: the numbers it yields are meaningless and only checked for shape.
FAKE_TORCH_GPUS sets the GPU count; FAKE_TORCH_DIE=N makes GPU N's process die."""

from __future__ import annotations

import json
import os
import time
import types
from typing import Any

__version__ = "0.0+fake"
version = types.SimpleNamespace(cuda="12.4")
uint8, float32, bfloat16, float16, float8_e4m3fn = "uint8", "float32", "bf16", "fp16", "fp8"
backends = types.SimpleNamespace(cuda=types.SimpleNamespace(
    matmul=types.SimpleNamespace(allow_tf32=False)))
_TOTAL = 3 * 2**30 + 100 * 2**20
_used = [0]
#: Bytes per element of each dtype (torch's default, float32, when none is given).
_ITEMSIZE = {uint8: 1, float32: 4, bfloat16: 2, float16: 2, float8_e4m3fn: 1, None: 4}


class Tensor:
    def __init__(self, nbytes: int, device: str, itemsize: int = 4) -> None:
        self.nbytes, self.device, self.counted = nbytes, device, False
        self.itemsize = itemsize
        if device.startswith("cuda"):
            if _used[0] + nbytes > _TOTAL:
                raise cuda.OutOfMemoryError("CUDA out of memory (fake)")
            _used[0] += nbytes
            self.counted = True

    def __del__(self) -> None:
        if self.counted:
            _used[0] -= self.nbytes

    def fill_(self, value: Any) -> Tensor:
        return self

    def zero_(self) -> Tensor:
        return self

    def copy_(self, other: Tensor, non_blocking: bool = False) -> Tensor:
        time.sleep(0.0001)
        return self

    def numel(self) -> int:
        return self.nbytes // self.itemsize

    def to(self, dtype: Any) -> Tensor:
        return self

    def t(self) -> Tensor:
        return self


def _size(shape: tuple[Any, ...]) -> int:
    total = 1
    for value in shape:
        total *= int(value)
    return total


def empty(*shape: Any, dtype: Any = None, device: str = "cpu", pin_memory: bool = False) -> Tensor:
    return Tensor(_size(shape) * _ITEMSIZE[dtype], device, _ITEMSIZE[dtype])


def empty_like(other: Tensor) -> Tensor:
    return Tensor(other.nbytes, other.device, other.itemsize)


def randn(*shape: Any, device: str = "cpu", dtype: Any = None) -> Tensor:
    return Tensor(_size(shape), device)


def tensor(value: Any, device: str = "cpu") -> Tensor:
    return Tensor(4, device)


def mm(a: Tensor, b: Tensor, out: Tensor | None = None) -> Tensor:
    time.sleep(0.0001)
    return out or a


class _Event:
    def __init__(self, enable_timing: bool = False) -> None:
        self.at = 0.0

    def record(self) -> None:
        self.at = time.perf_counter()

    def elapsed_time(self, end: _Event) -> float:
        return max(end.at - self.at, 1e-6) * 1e3


class _Props:
    def __init__(self, index: int) -> None:
        self.name = "Fake GPU"
        # the simulated NVML's UUIDs when it runs too, so the probe can join the two
        node = json.loads(os.environ.get("PYTEST_CLUSTER_SIM_NODE", '{"gpus": []}'))
        uuids = [str(gpu["uuid"]).removeprefix("GPU-") for gpu in node["gpus"]]
        self.uuid = uuids[index] if index < len(uuids) else f"fake-{index}"
        self.total_memory = _TOTAL


class _OutOfMemoryError(RuntimeError):
    pass


def _set_device(index: int) -> None:
    if os.environ.get("FAKE_TORCH_DIE") == str(index):
        os._exit(3)


cuda = types.SimpleNamespace(
    OutOfMemoryError=_OutOfMemoryError,
    Event=_Event,
    is_available=lambda: True,
    device_count=lambda: int(os.environ.get("FAKE_TORCH_GPUS", "2")),
    get_device_properties=_Props,
    get_device_capability=lambda index=None: (9, 0),
    set_device=_set_device,
    mem_get_info=lambda: (_TOTAL - _used[0], _TOTAL),
    synchronize=lambda device=None: None,
    empty_cache=lambda: None,
    can_device_access_peer=lambda a, b: True,
)
