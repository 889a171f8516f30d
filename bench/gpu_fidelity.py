"""GPU fidelity: our probe's matmul and copy numbers vs plain torch loops, same shapes.

- matmul: the probe's mamf-style measurement (L2 flushed, CUDA events, median) vs a plain
  `torch.mm` loop timed with CUDA events (no flush), on the same dtype and shape;
  target ratio >= 0.97.
- copy: the probe's device-to-device copy (read + write counted, median) vs a plain
  `tensor.copy_` loop timed with CUDA events; target ratio >= 0.95.

Both are measured side by side, alternating, ROUNDS times, on GPU 0. Runs only where
CUDA is present; elsewhere it says so and prints `ratio=nan`. The last line is
`ratio=<min(matmul ratio, copy ratio)>`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from pytest_cluster.probes import gpu_perf


def plain_matmul(torch: Any, dtype: str, size: int, iterations: int) -> float:
    """TFLOPS of a plain torch.mm loop, CUDA events around the whole loop."""
    kinds = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32,
             "fp32": torch.float32}
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    a = torch.randn(size, size, device="cuda", dtype=kinds[dtype])
    b = torch.randn(size, size, device="cuda", dtype=kinds[dtype])
    for _ in range(10):
        torch.mm(a, b)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        torch.mm(a, b)
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3
    return float(2 * size**3 * iterations / seconds / 1e12)


def plain_copy(torch: Any, nbytes: int, iterations: int) -> float:
    """bytes/s (read + write) of a plain tensor.copy_ loop."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").fill_(1.0)
    dst = torch.empty_like(src)
    for _ in range(5):
        dst.copy_(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        dst.copy_(src)
    end.record()
    torch.cuda.synchronize()
    return float(2 * nbytes * iterations / (start.elapsed_time(end) / 1e3))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "tf32", "fp32"])
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--copy-bytes", type=int, default=2 * 2**30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    try:
        import torch  # noqa: PLC0415 - optional here
    except ImportError:
        print("no torch: this benchmark needs torch with CUDA")
        print("ratio=nan")
        return 0
    if not torch.cuda.is_available():
        print(f"no CUDA: torch {torch.__version__} sees no GPU on this machine; the GPU "
              f"fidelity benchmark runs only where CUDA is present")
        print("ratio=nan")
        return 0
    torch.cuda.set_device(0)
    print(f"GPU 0: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"{args.size}^3 {args.dtype}, copy {args.copy_bytes / 2**30:g} GiB")
    ours_mm, plain_mm, ours_cp, plain_cp = [], [], [], []
    start = time.perf_counter()
    for round_ in range(args.rounds):
        first_ours = round_ % 2 == 0
        for which in ((True, False) if first_ours else (False, True)):
            if which:
                ours_mm.append(gpu_perf.matmul(torch, args.dtype, [args.size] * 3, 50, 100, 1.0)[
                    "tflops_median"])
                ours_cp.append(gpu_perf.copy_bandwidth(torch, args.copy_bytes, 100, 1.0)[
                    "bytes_per_s"])
            else:
                plain_mm.append(plain_matmul(torch, args.dtype, args.size, 100))
                plain_cp.append(plain_copy(torch, args.copy_bytes, 100))
    mm = (statistics.median(ours_mm), statistics.median(plain_mm))
    cp = (statistics.median(ours_cp), statistics.median(plain_cp))
    print(f"matmul  probe {mm[0]:8.1f} TFLOPS   plain torch.mm   {mm[1]:8.1f} TFLOPS   "
          f"ratio {mm[0] / mm[1]:.3f} (target >= 0.97)")
    print(f"copy    probe {cp[0] / 1e12:8.3f} TB/s     plain copy_      {cp[1] / 1e12:8.3f} TB/s"
          f"     ratio {cp[0] / cp[1]:.3f} (target >= 0.95)")
    print(f"({args.rounds} rounds, alternating, {time.perf_counter() - start:.0f} s)")
    print(f"matmul_ratio={mm[0] / mm[1]:.3f}")
    print(f"copy_ratio={cp[0] / cp[1]:.3f}")
    print(f"ratio={min(mm[0] / mm[1], cp[0] / cp[1]):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
