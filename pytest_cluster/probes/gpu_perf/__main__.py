"""Runs the gpu_perf probe: `python3 - [--dtypes ...] [--skip PART] ...` (options.py)."""

from __future__ import annotations

import importlib
import json
import sys

from .options import parse_options
from .processes import run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import GpuPerfData


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
