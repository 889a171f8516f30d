"""The sanity level's time on the 64-node simulated cluster, beside the full suite's.

`pytest --cluster=SPEC -m sanity` is meant for a SLURM prolog or a pre-job gate: counts,
models, NVML health, versions, reachability, and no load. Both sides run the same spec
(bench/scale.py's: 64 x 8 H100 SXM, host and GPU clauses, the interconnect over 2-64
nodes, one slow node and one down) as a user runs it, evidence written: one with
`-m sanity`, one without. Each is run REPEATS times, alternating; the medians are printed
with the cases each ran. The last line is `sanity_s=<median>` (aim: a few seconds).

Measured on the 2-CPU dev machine: see the issue notes (numbers change with the suite).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scale import spec_text  # bench/scale.py, beside this script


def run(spec: Path, reports: Path, *args: str) -> tuple[float, str]:
    command = [sys.executable, "-m", "pytest", f"--cluster={spec}",
               f"--cluster-reports={reports}", "-q", "-p", "no:cacheprovider",
               "-p", "no:hypothesispytest", *args]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          cwd=spec.parent)
    seconds = time.monotonic() - started
    summary = next((line for line in reversed(done.stdout.splitlines())
                    if " in " in line and ("passed" in line or "failed" in line)), "?")
    return seconds, summary.strip("= ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        spec = Path(scratch) / "spec.yaml"
        spec.write_text(spec_text(options.nodes), encoding="utf-8")
        times: dict[str, list[float]] = {"sanity": [], "full": []}
        said: dict[str, str] = {}
        for index in range(options.repeats):
            for name, args in (("sanity", ("-m", "sanity")), ("full", ())):
                seconds, said[name] = run(spec, Path(scratch) / f"{name}{index}", *args)
                times[name].append(seconds)
    print(f"{options.nodes} simulated nodes, {options.repeats} runs each")
    for name, found in times.items():
        runs = " ".join(f"{t:.2f}" for t in found)
        print(f"  {name:>6}  median {statistics.median(found):6.2f} s  ({runs})  {said[name]}")
    print(f"sanity_s={statistics.median(times['sanity']):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
