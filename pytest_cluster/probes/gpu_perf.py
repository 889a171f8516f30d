"""GPU performance probe (torch): usable memory, matmul TFLOPS, memory bandwidth,
host<->device and GPU<->GPU bandwidth, with NVML sampled DURING the load.

Runs ON a node; needs torch with CUDA (nvidia-ml-py for the sampling); shipped as a single
file. One process per GPU, forked before CUDA is initialised, so every GPU of the node is
loaded at once and one slow GPU stands out. Matmul is measured the way mamf-finder does:
flops = 2*m*n*k, L2 flushed before each iteration, warm-up, CUDA events, median and max.
Anything that cannot be measured is reported as {"error": reason}, never guessed.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import multiprocessing
import os
import queue
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Callable
from functools import partial
from typing import Any, Literal, TypedDict, TypeVar, cast

GIB = 2**30
MIB = 2**20
THROTTLE_BITS = {"hw_slowdown": 0x8, "sw_thermal": 0x20, "hw_thermal": 0x40,
                 "power_brake": 0x80}
PARTS = ("usable_memory", "copy", "h2d", "d2h", "p2p")
L2_FLUSH_BYTES = 256 * MIB  # larger than any L2 (H100: 50 MB, B200: 126 MB)
BARRIER_TIMEOUT_S = 600.0


# -- the payload: what this probe prints as its `data` -----------------------------------
# Each measured part is its figures or {"error": reason} (errors_to_json), hence total=False
# and an `error` key in each.

class Options(TypedDict):
    """The probe's options (parse_options), echoed in its payload."""

    dtypes: list[str]
    shape: list[int]
    warmup: int
    warmup_time: float
    iterations: int
    load_time: float
    copy_bytes: int
    xfer_bytes: int
    skip: list[str]
    sdc: bool


class UsableMemory(TypedDict, total=False):
    allocated_bytes: int
    cuda_total_bytes: int
    cuda_free_before_bytes: int
    failed_allocations: int
    method: str
    error: str


class Rate(TypedDict, total=False):
    """A copy's rate: device to device, host to device, device to host."""

    bytes_per_s: float
    median_bytes_per_s: float
    max_bytes_per_s: float
    min_bytes_per_s: float
    buffer_bytes: int
    iterations: int
    warmup_s: float
    method: str
    error: str


class Matmul(TypedDict, total=False):
    tflops_median: float
    tflops_max: float
    tflops_min: float
    shape: list[int]
    warmup: int
    warmup_s: float
    iterations: int
    method: str
    error: str


class Sustained(TypedDict, total=False):
    seconds: float
    matmuls: int
    tflops: float
    error: str


class Sdc(TypedDict, total=False):
    checksum: int
    checksums: list[int]
    repeats: int
    consistent: bool
    shape: list[int]
    method: str
    error: str


class P2pPair(TypedDict):
    src: int
    dst: int
    peer_access: bool
    bytes_per_s: float


class P2p(TypedDict, total=False):
    pairs: list[P2pPair]
    buffer_bytes: int
    iterations: int
    method: str
    error: str


class Load(TypedDict, total=False):
    """What NVML said of one GPU while the processes ran (Sampler)."""

    nvml_index: int
    samples: int
    load_samples: int
    reasons_mask: int
    throttle: list[str]
    temperature_max_c: float | None
    power_max_w: float | None
    sm_clock_min_mhz: int | None
    pcie_gen_max: int | None
    pcie_width_max: int | None
    error: str


class PerfGpu(TypedDict, total=False):
    """One GPU's measurements (worker), with its NVML samples (`load`)."""

    index: int
    name: str
    uuid: str
    capability: list[int]
    usable_memory: UsableMemory
    copy: Rate
    h2d: Rate
    d2h: Rate
    matmul: dict[str, Matmul]  # by dtype
    sustained: Sustained
    sdc: Sdc
    load: Load
    error: str
    traceback: str


class DeviceInfo(TypedDict, total=False):
    """What the forked child says of torch and the GPUs it sees (device_info)."""

    torch: str | None
    cuda: str | None
    nccl: str | None
    count: int
    uuids: list[str]
    error: str


class GpuPerfData(TypedDict, total=False):
    """The probe's payload."""

    torch: str | None
    cuda: str | None
    nccl: str | None
    pid: int
    options: Options
    count: int
    gpus: list[PerfGpu]
    p2p: P2p
    error: str
    simulated: bool  # the sim's answer says so


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


# -- processes ---------------------------------------------------------------------------

def nccl_version(torch: Any) -> str | None:
    """The NCCL torch loads (torch.cuda.nccl.version()), e.g. '2.21.5'; None without."""
    try:
        found = torch.cuda.nccl.version()
    except Exception:
        return None
    return ".".join(map(str, found)) if isinstance(found, tuple) else str(found)


def device_info(q: Any) -> None:
    """In a forked child: how many GPUs torch sees (the parent must not initialise CUDA)."""
    try:
        torch = load_torch()
        info: DeviceInfo = {"torch": torch.__version__, "cuda": torch.version.cuda,
                                "nccl": nccl_version(torch)}
        if not torch.cuda.is_available():
            info["error"] = f"torch {torch.__version__} sees no CUDA GPU"
        else:
            info["count"] = torch.cuda.device_count()
            info["uuids"] = [str(getattr(torch.cuda.get_device_properties(i), "uuid", ""))
                             for i in range(info["count"])]
    except Exception as exc:
        info = {"error": f"cannot use torch: {type(exc).__name__}: {exc}"}
    q.put(info)


def wait(barrier: Any) -> None:
    with contextlib.suppress(threading.BrokenBarrierError):
        barrier.wait(BARRIER_TIMEOUT_S)


def worker(index: int, opts: Options, barrier: Any, host_lock: Any, loaded: Any,
           q: Any) -> None:
    """One GPU: phases in step with the other GPUs' processes (barriers)."""
    out: PerfGpu = {"index": index}
    try:
        torch = load_torch()
        torch.cuda.set_device(index)
        props = torch.cuda.get_device_properties(index)
        out.update({"name": props.name, "uuid": str(getattr(props, "uuid", "")),  # torch >= 2.2
                    "capability": list(torch.cuda.get_device_capability(index))})
        skip = opts["skip"]
        if "usable_memory" not in skip:
            out["usable_memory"] = errors_to_json(lambda: usable_memory(torch))
        wait(barrier)
        if "copy" not in skip:
            out["copy"] = errors_to_json(
                lambda: copy_bandwidth(torch, opts["copy_bytes"], opts["iterations"],
                                       opts["warmup_time"]))
            torch.cuda.empty_cache()
        wait(barrier)
        with host_lock:  # one GPU at a time: each link alone, not the host's total
            directions: tuple[tuple[Literal["h2d", "d2h"], bool], ...] = (
                ("h2d", True), ("d2h", False))
            for part, to_device in directions:
                if part not in skip:
                    out[part] = errors_to_json(partial(
                        host_bandwidth, torch, opts["xfer_bytes"], opts["iterations"] // 5 or 1,
                        to_device, opts["warmup_time"]))
                    torch.cuda.empty_cache()
        wait(barrier)
        with loaded.get_lock():
            loaded.value += 1
        try:
            out["matmul"] = {dtype: errors_to_json(partial(
                matmul, torch, dtype, opts["shape"], opts["warmup"], opts["iterations"],
                opts["warmup_time"]))
                for dtype in opts["dtypes"]}
            if opts["load_time"] > 0:
                out["sustained"] = errors_to_json(lambda: sustained_load(
                    torch, (opts["dtypes"] or ["bf16"])[0], opts["shape"], opts["load_time"]))
            if opts["sdc"]:  # right after the load, while the GPU is hot
                out["sdc"] = errors_to_json(lambda: sdc_check(torch))
        finally:
            with loaded.get_lock():
                loaded.value -= 1
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["traceback"] = traceback.format_exc()[-2000:]
        barrier.abort()
    q.put(out)


def p2p_worker(count: int, opts: Options, q: Any) -> None:
    torch = load_torch()
    q.put({"p2p": errors_to_json(lambda: p2p_bandwidth(torch, count, opts["xfer_bytes"],
                                                       opts["iterations"] // 10 or 1))})


class Sampler:
    """NVML in the parent: clocks event reasons, temperature, power, SM clock and PCIe
    link, sampled every `period_s` while the children run; 'load' samples only while
    at least one child is running matmuls."""

    def __init__(self) -> None:
        self.nvml: Any = None
        self.handles: dict[str, Any] = {}
        self.data: dict[str, Load] = {}
        self.error = ""
        try:
            self.nvml = importlib.import_module("pynvml")
            self.nvml.nvmlInit()
            for i in range(self.nvml.nvmlDeviceGetCount()):
                handle = self.nvml.nvmlDeviceGetHandleByIndex(i)
                uuid = text(self.nvml.nvmlDeviceGetUUID(handle))
                self.handles[uuid] = handle
                self.data[uuid] = {"nvml_index": i, "samples": 0, "load_samples": 0,
                                   "reasons_mask": 0, "throttle": [],
                                   "temperature_max_c": None, "power_max_w": None,
                                   "sm_clock_min_mhz": None, "pcie_gen_max": None,
                                   "pcie_width_max": None}
        except Exception as exc:
            self.error = f"NVML sampling unavailable: {type(exc).__name__}: {exc}"
            self.nvml = None

    def sample(self, under_load: bool) -> None:
        if self.nvml is None:
            return
        nvml = self.nvml
        for uuid, handle in self.handles.items():
            entry = self.data[uuid]
            entry["samples"] += 1
            with contextlib.suppress(nvml.NVMLError):
                entry["pcie_gen_max"] = bigger(
                    entry["pcie_gen_max"], nvml.nvmlDeviceGetCurrPcieLinkGeneration(handle))
                entry["pcie_width_max"] = bigger(
                    entry["pcie_width_max"], nvml.nvmlDeviceGetCurrPcieLinkWidth(handle))
            if not under_load:
                continue
            entry["load_samples"] += 1
            with contextlib.suppress(nvml.NVMLError):
                entry["reasons_mask"] |= int(clocks_reasons(nvml, handle))
            with contextlib.suppress(nvml.NVMLError):
                entry["temperature_max_c"] = bigger(
                    entry["temperature_max_c"],
                    nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
            with contextlib.suppress(nvml.NVMLError):
                entry["power_max_w"] = bigger(entry["power_max_w"],
                                              nvml.nvmlDeviceGetPowerUsage(handle) / 1000)
            with contextlib.suppress(nvml.NVMLError):
                clock = nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)
                low = entry["sm_clock_min_mhz"]
                entry["sm_clock_min_mhz"] = clock if low is None else min(low, clock)

    def results(self) -> dict[str, Load]:
        for entry in self.data.values():
            entry["throttle"] = [name for name, bit in THROTTLE_BITS.items()
                                 if entry["reasons_mask"] & bit]
        if self.nvml is not None:
            with contextlib.suppress(Exception):
                self.nvml.nvmlShutdown()
        return self.data


def text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def bigger(old: Any, new: Any) -> Any:
    return new if old is None else max(old, new)


def clocks_reasons(nvml: Any, handle: Any) -> Any:
    fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    if fn is None:  # nvidia-ml-py before 12.535
        fn = nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    return fn(handle)


def bare_uuid(uuid: str) -> str:
    """NVML says 'GPU-1a2b...', torch says '1a2b...'."""
    return uuid.removeprefix("GPU-").lower()


def run(opts: Options) -> GpuPerfData:
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # torch indices = NVML indices
    ctx = multiprocessing.get_context("fork")
    q: Any = ctx.Queue()
    probe = ctx.Process(target=device_info, args=(q,))
    probe.start()
    try:
        info: DeviceInfo = q.get(timeout=300)
    except queue.Empty:
        info = {"error": "torch did not answer within 300 s"}
    probe.join(10)
    data: GpuPerfData = {"torch": info.get("torch"), "cuda": info.get("cuda"),
                            "nccl": info.get("nccl"), "pid": os.getpid(), "options": opts}
    if "error" in info:
        data["error"] = info["error"]
        return data
    count = int(info["count"])
    data["count"] = count
    barrier = ctx.Barrier(count)
    host_lock = ctx.Lock()
    loaded = ctx.Value("i", 0)
    workers = [ctx.Process(target=worker, args=(i, opts, barrier, host_lock, loaded, q))
               for i in range(count)]
    for process in workers:
        process.start()
    sampler = Sampler()
    results: dict[int, PerfGpu] = {}
    while len(results) < count:
        sampler.sample(under_load=loaded.value > 0)
        with contextlib.suppress(queue.Empty):
            out = q.get(timeout=0.1)
            results[out["index"]] = out
        dead = [i for i, p in enumerate(workers) if p.exitcode is not None and i not in results]
        if dead and q.empty():
            time.sleep(0.5)  # a result may still be in the pipe
            if q.empty():
                barrier.abort()
                for i in dead:
                    results[i] = {"index": i, "error": f"the process for GPU {i} died "
                                                       f"(exit code {workers[i].exitcode})"}
    for process in workers:
        process.join(30)
    samples = sampler.results()
    by_uuid = {bare_uuid(u): s for u, s in samples.items()}
    gpus = []
    for i in range(count):
        entry = results[i]
        sampled = by_uuid.get(bare_uuid(str(entry.get("uuid", ""))))
        entry["load"] = sampled if sampled is not None else {
            "error": sampler.error or "no NVML samples for this GPU"}
        gpus.append(entry)
    data["gpus"] = gpus
    if count > 1 and "p2p" not in opts["skip"]:
        p2p = ctx.Process(target=p2p_worker, args=(count, opts, q))
        p2p.start()
        try:
            data.update(q.get(timeout=600))
        except queue.Empty:
            data["p2p"] = {"error": "the GPU-to-GPU copies did not finish within 600 s"}
        p2p.join(10)
    return data


def parse_options(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dtypes", default="bf16", help="comma-separated: bf16,fp16,tf32,"
                                                          "fp32,fp8 (empty: none)")
    parser.add_argument("--shape", default="8192,8192,8192", help="m,n,k (or one n: n^3)")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--warmup-time", type=float, default=1.0,
                        help="seconds each measurement warms the GPU up, at least")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--load-time", type=float, default=10.0)
    parser.add_argument("--copy-bytes", type=int, default=2 * GIB)
    parser.add_argument("--xfer-bytes", type=int, default=256 * MIB)
    parser.add_argument("--skip", action="append", default=[], choices=PARTS)
    parser.add_argument("--sdc", action="store_true",
                        help="after the load, the same matmul on every GPU, compared")
    args = parser.parse_args(argv)
    shape = [int(v) for v in args.shape.split(",")]
    if len(shape) == 1:
        shape *= 3
    if len(shape) != 3 or min(shape) < 1:
        parser.error(f"--shape: expected m,n,k, got {args.shape!r}")
    return {"dtypes": [d for d in args.dtypes.split(",") if d], "shape": shape,
            "warmup": args.warmup, "warmup_time": args.warmup_time, "iterations": args.iterations,
            "load_time": args.load_time, "copy_bytes": args.copy_bytes,
            "xfer_bytes": args.xfer_bytes, "skip": sorted(set(args.skip)), "sdc": args.sdc}


def main(argv: list[str] | None = None) -> int:
    opts = parse_options(argv)
    try:
        importlib.import_module("torch")
    except ImportError as exc:
        data: GpuPerfData = {"error": f"torch is not installed for {sys.executable}: {exc}"}
    else:
        data = run(opts)
    print(json.dumps({"probe": "gpu_perf", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
