"""probes/gpu_perf/compute.py: matmul TFLOPS (mamf-finder's way), the sustained load and
the silent-data-corruption check, against the fake torch (no GPU here) or a stub."""

from __future__ import annotations

import statistics
import types
from typing import Any

import pytest

from pytest_cluster.probes.gpu_perf import compute
from tests.probes.gpu_perf.fake import fake_torch, timed

SHAPE = [256, 512, 128]
TIMES_MS = [0.5, 1.0, 2.0]


def test_tflops_are_2mnk_over_each_calls_time() -> None:
    found = compute.matmul(timed(TIMES_MS), "bf16", SHAPE, 1, len(TIMES_MS), 0.0)
    rates = [2 * 256 * 512 * 128 / (ms / 1e3) / 1e12 for ms in TIMES_MS]
    assert (found["tflops_median"], found["tflops_max"], found["tflops_min"]) == (
        statistics.median(rates), max(rates), min(rates))
    assert (found["shape"], found["warmup"], found["iterations"]) == (SHAPE, 1, len(TIMES_MS))


def test_tf32_is_allowed_only_while_it_is_measured() -> None:
    torch = timed([1.0])
    compute.matmul_operands(torch, "tf32", SHAPE)
    assert torch.backends.cuda.matmul.allow_tf32 is True
    compute.matmul(torch, "tf32", SHAPE, 0, 1, 0.0)
    assert torch.backends.cuda.matmul.allow_tf32 is False
    compute.matmul_operands(torch, "fp32", SHAPE)
    assert torch.backends.cuda.matmul.allow_tf32 is False


def test_a_dtype_it_cannot_measure_is_refused_with_the_reason() -> None:
    torch = fake_torch()
    with pytest.raises(ValueError, match="unknown dtype 'int4'"):
        compute.matmul_operands(torch, "int4", SHAPE)
    with pytest.raises(RuntimeError, match=r"torch._scaled_mm; this GPU is 9\.0$"):
        compute.matmul_operands(torch, "fp8", SHAPE)  # the fake has no _scaled_mm
    torch.cuda.get_device_capability = lambda index=None: (8, 0)
    torch._scaled_mm = lambda *args, **kwargs: "scaled"
    with pytest.raises(RuntimeError, match=r"compute capability 8\.9\+.*this GPU is 8\.0$"):
        compute.matmul_operands(torch, "fp8", SHAPE)


def test_fp8_goes_through_scaled_mm_where_the_gpu_has_it() -> None:
    torch = fake_torch()
    calls: list[dict[str, Any]] = []

    def scaled_mm(a: Any, b: Any, **kwargs: Any) -> str:
        calls.append(kwargs)
        return "scaled"

    torch._scaled_mm = scaled_mm
    assert compute.matmul_operands(torch, "fp8", SHAPE)() == "scaled"
    assert calls[0]["out_dtype"] == torch.bfloat16


def test_the_sustained_load_counts_its_matmuls_over_the_time_it_ran() -> None:
    torch = fake_torch()  # fp8 it cannot do: the load runs bf16
    found = compute.sustained_load(torch, "fp8", SHAPE, 0.01)
    assert found["matmuls"] > 0 and found["matmuls"] % 20 == 0
    assert found["tflops"] == pytest.approx(
        2 * 256 * 512 * 128 * found["matmuls"] / found["seconds"] / 1e12)


class Bits:
    """What the SDC check computes on the GPU, each checksum as `sums` gives them."""

    def __init__(self, sums: list[int]) -> None:
        self.sums = sums

    def __getattr__(self, name: str) -> Any:  # view, reshape, to: the same bits
        return lambda *args, **kwargs: self

    def __mul__(self, other: object) -> Bits:
        return self

    def __mod__(self, other: object) -> Bits:
        return self

    def __add__(self, other: object) -> Bits:
        return self

    def sum(self) -> int:
        return self.sums.pop(0)


def sdc_torch(sums: list[int]) -> Any:
    bits = Bits(sums)
    generator: Any = types.SimpleNamespace()
    generator.manual_seed = lambda seed: generator
    return types.SimpleNamespace(
        Generator=lambda device: generator, randn=lambda *args, **kwargs: bits,
        arange=lambda *args, **kwargs: bits, mm=lambda a, b: bits,
        bfloat16="bf16", int16="i16", int64="i64")


def test_a_healthy_gpu_gives_the_same_checksum_every_time() -> None:
    found = compute.sdc_check(sdc_torch([7] * compute.SDC_REPEATS))
    assert (found["checksum"], found["consistent"], found["repeats"]) == (
        7, True, compute.SDC_REPEATS)
    assert found["checksums"] == [7] * compute.SDC_REPEATS
    assert found["shape"] == [compute.SDC_SIDE] * 3


def test_one_checksum_that_differs_is_inconsistent() -> None:
    sums = [7] * compute.SDC_REPEATS
    sums[-1] = 7 ^ 1 << 12  # a flipped bit
    found = compute.sdc_check(sdc_torch(list(sums)))
    assert (found["checksum"], found["checksums"], found["consistent"]) == (7, sums, False)
