"""Compute measurements: matmul TFLOPS (mamf-finder's way), a sustained load, and the
silent-data-corruption check."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from .options import MIB
from .timing import timed_events

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import Matmul, Sdc, Sustained


L2_FLUSH_BYTES = 256 * MIB  # larger than any L2 (H100: 50 MB, B200: 126 MB)


def matmul_operands(torch: Any, dtype: str, shape: list[int]) -> Callable[[], Any]:
    """A closure doing one (m x k) @ (k x n) matmul in `dtype` (raises if unsupported)."""
    m, n, k = shape
    device = "cuda"
    if dtype == "fp8":
        major, minor = torch.cuda.get_device_capability()
        if (major, minor) < (8, 9) or not hasattr(torch, "_scaled_mm"):
            raise RuntimeError(f"fp8 matmul needs compute capability 8.9+ and "
                               f"torch._scaled_mm; this GPU is {major}.{minor}")
        a = torch.randn(m, k, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=device).to(torch.float8_e4m3fn).t()  # column-major
        scale = torch.tensor(1.0, device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=scale, scale_b=scale,
                                        out_dtype=torch.bfloat16)
    kinds = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32,
             "fp32": torch.float32}
    if dtype not in kinds:
        raise ValueError(f"unknown dtype {dtype!r}")
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    a = torch.randn(m, k, device=device, dtype=kinds[dtype])
    b = torch.randn(k, n, device=device, dtype=kinds[dtype])
    out = torch.empty(m, n, device=device, dtype=kinds[dtype])
    return lambda: torch.mm(a, b, out=out)


def matmul(torch: Any, dtype: str, shape: list[int], warmup: int,
           iterations: int, warmup_s: float) -> Matmul:
    body = matmul_operands(torch, dtype, shape)
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    times = timed_events(torch, body, flush.zero_, warmup, iterations, warmup_s)
    flops = 2 * shape[0] * shape[1] * shape[2]
    rates = [flops / t / 1e12 for t in times]
    torch.backends.cuda.matmul.allow_tf32 = False
    return {"tflops_median": statistics.median(rates), "tflops_max": max(rates),
            "tflops_min": min(rates), "shape": list(shape), "warmup": warmup,
            "warmup_s": warmup_s, "iterations": iterations,
            "method": "mamf-style: flops = 2mnk, L2 flushed before each iteration, CUDA "
                      "events, median"}


def sustained_load(torch: Any, dtype: str, shape: list[int], seconds: float) -> Sustained:
    """Matmuls back to back for `seconds` (throttling only shows under load)."""
    body = matmul_operands(torch, dtype if dtype != "fp8" else "bf16", shape)
    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            body()
        torch.cuda.synchronize()
        count += 20
    elapsed = time.perf_counter() - start
    return {"seconds": elapsed, "matmuls": count,
            "tflops": 2 * shape[0] * shape[1] * shape[2] * count / elapsed / 1e12}


SDC_SIDE = 4096
SDC_REPEATS = 8


def sdc_check(torch: Any) -> Sdc:
    """The same bf16 matmul on the same inputs (a fixed seed: identical on every GPU)
    SDC_REPEATS times; each result reduced on the GPU to an exact checksum of its bits
    (int64 sum of each element's 16 bits times a weight by position, so a flipped bit or
    a swapped element changes it). A healthy GPU gives the same checksum every time, and
    the same as the node's other GPUs of its model."""
    seed = torch.Generator(device="cuda").manual_seed(20261123)
    a = torch.randn(SDC_SIDE, SDC_SIDE, device="cuda", dtype=torch.bfloat16, generator=seed)
    b = torch.randn(SDC_SIDE, SDC_SIDE, device="cuda", dtype=torch.bfloat16, generator=seed)
    weights = torch.arange(SDC_SIDE * SDC_SIDE, device="cuda", dtype=torch.int64) % 65521 + 1
    checksums = []
    for _ in range(SDC_REPEATS):
        bits = torch.mm(a, b).view(torch.int16).reshape(-1).to(torch.int64)
        checksums.append(int((bits * weights).sum()))
    return {"checksum": checksums[0], "checksums": checksums, "repeats": SDC_REPEATS,
            "consistent": len(set(checksums)) == 1, "shape": [SDC_SIDE] * 3,
            "method": f"bf16 {SDC_SIDE}^3 matmul of fixed-seed inputs, {SDC_REPEATS} times; "
                      "a position-weighted int64 sum of the result's bits"}
