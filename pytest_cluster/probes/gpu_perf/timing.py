"""Timing a measurement on the GPU (CUDA events, warmed up), and one failing measurement
kept from hiding the others."""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from .payload import Matmul, P2p, Rate, Sdc, Sustained, UsableMemory

Part = TypeVar("Part", UsableMemory, Rate, Matmul, Sustained, Sdc, P2p)


def load_torch() -> Any:
    return importlib.import_module("torch")


def errors_to_json(fn: Callable[[], Part]) -> Part:
    """fn() or {"error": reason}: one failing measurement does not hide the others."""
    try:
        return fn()
    except Exception as exc:
        return cast("Part", {"error": f"{type(exc).__name__}: {exc}".strip()[:500]})


def summary(rates: list[float]) -> dict[str, float]:
    return {"median": statistics.median(rates), "max": max(rates), "min": min(rates)}


def timed_events(torch: Any, body: Callable[[], Any], before: Callable[[], Any] | None,
                 warmup: int, iterations: int, warmup_s: float) -> list[float]:
    """Seconds per call of body(), timed with CUDA events; before() runs untimed.

    Warm-up is `warmup` calls and at least `warmup_s` seconds: an idle GPU takes a while to
    raise its clocks, and a few calls (a 2 GiB copy takes under 2 ms) would time it
    half-awake (an H100 copied at 2.6 TB/s after 5 calls and 3.0 TB/s warmed up)."""
    start, done = time.perf_counter(), 0
    while done < warmup or time.perf_counter() - start < warmup_s:
        if before is not None:
            before()
        body()
        done += 1
        if done % 10 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    pairs = []
    for _ in range(iterations):
        if before is not None:
            before()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        body()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    return [start.elapsed_time(end) / 1e3 for start, end in pairs]
