"""Memory measurements: usable memory, device, host<->device and GPU<->GPU copies."""

from __future__ import annotations

import statistics
import time
from typing import Any

from .options import GIB, MIB
from .timing import summary, timed_events

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import P2p, P2pPair, Rate, UsableMemory


# -- measurements, one GPU (the current device) ------------------------------------------

def usable_memory(torch: Any) -> UsableMemory:
    """Allocate until allocation fails (1 GiB chunks, then halved down to 2 MiB), touch
    every byte, report what was allocated, and free it all."""
    free_before, total = torch.cuda.mem_get_info()
    chunks = []
    allocated = 0
    step = GIB
    failures = 0
    try:
        while step >= 2 * MIB:
            try:
                chunk = torch.empty(step, dtype=torch.uint8, device="cuda")
                chunk.fill_(0xA5)
            except torch.cuda.OutOfMemoryError:
                failures += 1
                step //= 2
                continue
            chunks.append(chunk)
            allocated += step
        torch.cuda.synchronize()
    finally:
        chunks.clear()
        torch.cuda.empty_cache()
    return {"allocated_bytes": allocated, "cuda_total_bytes": total,
            "cuda_free_before_bytes": free_before, "failed_allocations": failures,
            "method": "torch.empty until out of memory (1 GiB chunks halved to 2 MiB), "
                      "every byte written"}


def copy_bandwidth(torch: Any, nbytes: int, iterations: int, warmup_s: float) -> Rate:
    """Device-to-device copy; bytes read + bytes written counted (like BabelStream)."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").fill_(1.0)
    dst = torch.empty_like(src)
    times = timed_events(torch, lambda: dst.copy_(src), None, 5, iterations, warmup_s)
    moved = 2 * src.numel() * 4
    rates = [moved / t for t in times]
    stats = summary(rates)
    return {"bytes_per_s": statistics.median(rates), "median_bytes_per_s": stats["median"],
            "max_bytes_per_s": stats["max"], "min_bytes_per_s": stats["min"],
            "buffer_bytes": nbytes, "iterations": iterations, "warmup_s": warmup_s,
            "method": "tensor.copy_ on one GPU, read + write bytes counted, CUDA events, "
                      "median"}


def host_bandwidth(torch: Any, nbytes: int, iterations: int, to_device: bool,
                   warmup_s: float) -> Rate:
    """Host<->device copy from/to pinned memory; bytes counted once."""
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    if to_device:
        times = timed_events(torch, lambda: dev.copy_(host, non_blocking=True), None, 3,
                             iterations, warmup_s)
    else:
        times = timed_events(torch, lambda: host.copy_(dev, non_blocking=True), None, 3,
                             iterations, warmup_s)
    rates = [nbytes / t for t in times]
    direction = "host to device" if to_device else "device to host"
    stats = summary(rates)
    return {"bytes_per_s": statistics.median(rates), "median_bytes_per_s": stats["median"],
            "max_bytes_per_s": stats["max"], "min_bytes_per_s": stats["min"],
            "buffer_bytes": nbytes, "iterations": iterations,
            "method": f"{direction} copy_, pinned host memory, CUDA events, median"}


def p2p_bandwidth(torch: Any, count: int, nbytes: int, iterations: int) -> P2p:
    """GPU->GPU copy for every ordered pair (the NVLink check); bytes counted once."""
    pairs: list[P2pPair] = []
    for src in range(count):
        for dst in range(count):
            if src == dst:
                continue
            peer = bool(torch.cuda.can_device_access_peer(src, dst))
            a = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{src}")
            b = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{dst}")
            b.copy_(a)
            torch.cuda.synchronize(src)
            torch.cuda.synchronize(dst)
            rates = []
            for _ in range(iterations):
                start = time.perf_counter()
                b.copy_(a)
                torch.cuda.synchronize(src)
                torch.cuda.synchronize(dst)
                rates.append(nbytes / (time.perf_counter() - start))
            pairs.append({"src": src, "dst": dst, "peer_access": peer,
                          "bytes_per_s": statistics.median(rates)})
            del a, b
    torch.cuda.empty_cache()
    return {"pairs": pairs, "buffer_bytes": nbytes, "iterations": iterations,
            "method": "tensor.copy_ between GPUs, every ordered pair, median"}
