"""What one run's node limit (contract/narrow.MAX_RUN_NODES) must allow: a simulated N-node x 8-GPU
cluster (examples/sim-h100.yaml's host and gpus sections) collected and run at the sanity
level, the level a SLURM prolog runs (issue 38, item 5).

For each size (default 1024, 4096, 16384 nodes): `python -m pytest --cluster=SPEC -m
sanity --collect-only -q`, then a real sanity run (`-m sanity --cluster-reports=DIR`),
each in a fresh process from a scratch directory, serially; the time is start to exit,
the peak RSS the process's own (wait4). Prints per size and kind: seconds, peak RSS
(MiB), exit code. A size a run refuses is said as such, with how long refusing took.

The aim: what one run accepts (contract/narrow.MAX_RUN_NODES; more nodes are a usage error
naming the first part, --cluster-node=...) collects at the sanity level within 30 s and
1.5 GiB. Prints `sanity_run_at_limit_s=<the real sanity run at the largest size one run
accepts>`, then ends with `sanity_collect_at_limit_s=<its collection>` (nan when it
failed).

    python bench/scale_sanity.py                    # 1024, 4096, 16384
    python bench/scale_sanity.py --sizes 1024,4096
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from child import ended

ROOT = Path(__file__).resolve().parent.parent
HOST_AND_GPUS = (ROOT / "examples" / "sim-h100.yaml").read_text(encoding="utf-8")
USAGE_ERROR = 4


def spec_text(nodes: int) -> str:
    """examples/sim-h100.yaml on `nodes` nodes."""
    width = max(2, len(str(nodes)))
    return re.sub(r"nodes: sim-gpu-\[01-04\]",
                  f"nodes: sim-gpu-[{1:0{width}d}-{nodes:0{width}d}]", HOST_AND_GPUS)


def run(directory: Path, *args: str) -> tuple[int, float, float]:
    """(exit code, seconds, peak RSS in MiB) of one pytest run in `directory`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with (directory / "out.txt").open("wb") as sink:
        done = ended([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                      "--cluster=trial.yaml", "-m", "sanity", *args],
                     cwd=directory, stdout=sink, stderr=subprocess.STDOUT, env=env)
    return done.code if done.code is not None else -1, done.seconds, done.rss_mib


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1024,4096,16384")
    sizes = [int(size) for size in parser.parse_args().sizes.split(",")]
    at_limit = collected = math.nan
    for nodes in sizes:
        with tempfile.TemporaryDirectory(prefix="scale-sanity-") as tmp:
            directory = Path(tmp)
            (directory / "trial.yaml").write_text(spec_text(nodes), encoding="utf-8")
            code, seconds, rss = run(directory, "--collect-only", "-q", "--cluster-reports=")
            if code == USAGE_ERROR:
                said = (directory / "out.txt").read_text(errors="replace").strip()
                print(f"{nodes:6d} nodes  refused in {seconds:.2f} s ({rss:.1f} MiB): "
                      f"{said[:300]}")
                continue
            print(f"{nodes:6d} nodes  collect {seconds:6.2f} s  {rss:7.1f} MiB  exit {code}")
            collected = seconds if code == 0 else math.nan
            code, seconds, rss = run(directory, "-q", "--cluster-reports=reports")
            print(f"{nodes:6d} nodes  run     {seconds:6.2f} s  {rss:7.1f} MiB  exit {code}")
            at_limit = seconds if code in (0, 1) else math.nan
    print(f"sanity_run_at_limit_s={at_limit:.2f}")
    print(f"sanity_collect_at_limit_s={collected:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
