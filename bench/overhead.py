"""Overhead of the plugin: `pytest --cluster=SPEC` vs running the same probes directly.

Runs both, alternating, REPEATS times each, and prints the median wall times side by side;
the last line is `ratio=<pytest/direct>` (target <= 1.15).

pytest runs as `make demo` runs it: with hypothesis's pytest plugin disabled (it is a dev
dependency of this repository, not of the plugin, and costs ~0.75 s of import per run).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_cluster.cluster import import_call, storage_call
from pytest_cluster.probes import ProbeCall
from pytest_cluster.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent


def direct(spec_path: Path) -> float:
    """The probes the suite runs, one after the other, as plain subprocesses."""
    spec = load_spec(spec_path)
    calls = [ProbeCall("host")]
    for fs in spec.storage:
        calls.append(storage_call(fs))
        if fs.import_torch is not None:
            calls.append(import_call(fs))
    start = time.perf_counter()
    for node in spec.cluster.nodes:
        del node  # the local launcher runs every node on this machine
        for call in calls:
            subprocess.run([spec.cluster.python, "-", *call.args], input=call.source(),
                           capture_output=True, text=True, check=True)
    return time.perf_counter() - start


def via_pytest(spec_path: Path) -> float:
    with tempfile.TemporaryDirectory() as reports:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", f"--cluster={spec_path}",
                               f"--cluster-reports={reports}", "-q", "-p", "no:cacheprovider",
                               "-p", "no:hypothesispytest"],
                              capture_output=True, text=True, check=False, cwd=ROOT)
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"pytest failed:\n{done.stdout[-3000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spec", type=Path, default=ROOT / "examples" / "localhost.yaml")
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()
    pytest_times, direct_times = [], []
    for rep in range(args.repeats):  # alternate which goes first: caches favour the second
        if rep % 2:
            direct_times.append(direct(args.spec))
            pytest_times.append(via_pytest(args.spec))
        else:
            pytest_times.append(via_pytest(args.spec))
            direct_times.append(direct(args.spec))
    p, d = statistics.median(pytest_times), statistics.median(direct_times)
    print(f"spec: {args.spec}  repeats: {args.repeats}")
    print(f"{'':>8} {'median s':>9}  runs")
    print(f"{'pytest':>8} {p:9.2f}  {' '.join(f'{t:.2f}' for t in pytest_times)}")
    print(f"{'direct':>8} {d:9.2f}  {' '.join(f'{t:.2f}' for t in direct_times)}")
    print(f"overhead: {p - d:+.2f} s per run")
    print(f"ratio={p / d:.3f}")


if __name__ == "__main__":
    main()
