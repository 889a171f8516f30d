"""The probe's options: which parts, dtypes, shapes, sizes and times."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import Options


GIB = 2**30
MIB = 2**20
PARTS = ("usable_memory", "copy", "h2d", "d2h", "p2p")


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
