"""The processes: one per GPU, forked before CUDA is initialised, in step (barriers),
then the GPU-to-GPU copies; their results gathered with NVML's samples."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import threading
import time
import traceback
from functools import partial
from typing import Any, Literal

from .bandwidth import copy_bandwidth, host_bandwidth, p2p_bandwidth, usable_memory
from .compute import matmul, sdc_check, sustained_load
from .sampler import Sampler, bare_uuid
from .timing import errors_to_json, load_torch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import DeviceInfo, GpuPerfData, Options, PerfGpu


BARRIER_TIMEOUT_S = 600.0


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
