"""pytest-xdist on the simulated suite: serial vs `-n 2` vs `-n 4`, side by side.

For each spec - examples/sim-h100-64.yaml and a generated 128-node x 8-GPU spec with every
section (examples/sim-h100.yaml's host and gpus plus an interconnect section with
node_counts [2, 8, 64, 128]) - it runs `python -m pytest --cluster=SPEC` as a user would
(reports written), serially and with `-n 2` and `-n 4`, alternating the order over
REPEATS rounds, and prints the best and the median wall time of each, the ratio of its best
to serial's best (on a shared machine the best of rounds is the one least disturbed by
other processes) and the median CPU seconds of all its processes (controller and workers:
what xdist adds).

A fourth run, "2 forced" (`--tx 2*popen --dist load`), starts two workers whatever the
CPUs: what xdist costs where the plugin would not start them (see pytest_cluster/run/workers.py).

Ends with `xdist_ratio=<the slowest of -n 2 / -n 4 over serial (best of rounds), worst
spec>` (aim: <= 1.0).

    python bench/xdist.py                 # both specs, 3 rounds
    python bench/xdist.py --repeats 3 --specs 64
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import scale  # bench/scale.py, beside this script

ROOT = Path(__file__).resolve().parent.parent
MODES: dict[str, list[str]] = {"serial": [], "-n 2": ["-n", "2"], "-n 4": ["-n", "4"],
                                "2 forced": ["--tx", "2*popen", "--dist", "load"]}
#: Shown, not in xdist_ratio: two workers whatever the CPUs (what -n 2 ran before
#: pytest_cluster.run.workers cut it to the CPUs beside the controller's).
FORCED = "2 forced"


def spec_128() -> str:
    """examples/sim-h100.yaml at 128 nodes with an interconnect section (bench/scale.py's
    spec at 128 nodes: a slow link on sim-gpu-042, sim-gpu-064 down)."""
    return scale.spec_text(128)


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(spec: Path, mode: list[str], scratch: Path) -> tuple[float, float, int]:
    """Wall seconds of one run, CPU seconds of all its processes (controller and
    workers) and its number of passed + failed cases."""
    with tempfile.TemporaryDirectory(dir=scratch) as reports:
        command = [sys.executable, "-m", "pytest", f"--cluster={spec}",
                   f"--cluster-reports={reports}", "-q", "-p", "no:cacheprovider",
                   "-p", "no:hypothesispytest", *mode]
        cpu, started = cpu_of_children(), time.perf_counter()
        done = subprocess.run(command, cwd=scratch, capture_output=True, text=True,
                              check=False)
        seconds, cpu = time.perf_counter() - started, cpu_of_children() - cpu
    if done.returncode not in (0, 1):  # 1: the spec's faults fail their cases
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}")
    cases = sum(int(n) for n in re.findall(r"(\d+) (?:passed|failed)", done.stdout[-2000:]))
    return seconds, cpu, cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--specs", default="64,128", help="which specs: 64, 128 or both")
    args = parser.parse_args()
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="xdist-") as scratch_name:
        scratch = Path(scratch_name)
        generated = scratch / "sim-h100-128.yaml"
        generated.write_text(spec_128(), encoding="utf-8")
        specs = {"64": ROOT / "examples" / "sim-h100-64.yaml", "128": generated}
        for name in args.specs.split(","):
            spec = specs[name]
            times: dict[str, list[float]] = {mode: [] for mode in MODES}
            cpus: dict[str, list[float]] = {mode: [] for mode in MODES}
            cases = 0
            for rep in range(args.repeats):
                order = list(MODES) if rep % 2 == 0 else list(reversed(MODES))
                for mode in order:
                    seconds, cpu, cases = run(spec, MODES[mode], scratch)
                    times[mode].append(seconds)
                    cpus[mode].append(cpu)
            best_serial = min(times["serial"])
            print(f"{spec.name}: {cases} cases, {args.repeats} round(s), "
                  f"{len(os.sched_getaffinity(0))} CPUs here")
            print(f"  {'':>8} {'best s':>7} {'ratio':>6} {'median s':>8} {'CPU s':>6}  runs")
            for mode, runs in times.items():
                ratio = min(runs) / best_serial
                if mode not in ("serial", FORCED):
                    worst = max(worst, ratio)
                print(f"  {mode:>8} {min(runs):7.1f} {ratio:6.2f} {statistics.median(runs):8.1f} "
                      f"{statistics.median(cpus[mode]):6.1f}  "
                      f"{' '.join(f'{t:.1f}' for t in runs)}", flush=True)
    print(f"xdist_ratio={worst:.2f}")


if __name__ == "__main__":
    main()
