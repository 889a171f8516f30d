"""The soak's own overhead: the same rounds run as a soak, beside the same number of plain
runs started one after another.

Both sides run the same spec and selection on the simulated cluster (bench/scale.py's spec
at --nodes, `-m sanity` by default so that a round is short and the overhead shows), writing
their evidence as a user's would:

- plain: ROUNDS runs of `pytest --cluster=SPEC`, one after the other, timed from outside;
- soak: one `pytest --cluster=SPEC --cluster-soak-rounds=ROUNDS`, timed from outside, and
  from its round lines the time between one round's end and the next one's start.

Printed: both wall times, the soak's time per round, the time between rounds as a share of
a round. The last line is `soak_overhead=<soak wall / plain wall>` (1.0: a soak costs no
more than running the rounds by hand; the rounds are whole runs, so it cannot be less).

Measured on the 2-CPU dev machine: see the issue notes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scale import spec_text  # bench/scale.py, beside this script

BASE = ("-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def timed(command: list[str], cwd: Path) -> float:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n"
                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--select", default="sanity", help="-m expression ('' for all)")
    options = parser.parse_args()
    select = ["-m", options.select] if options.select else []
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch)
        spec = where / "spec.yaml"
        spec.write_text(spec_text(options.nodes), encoding="utf-8")
        pytest = [sys.executable, "-m", "pytest", f"--cluster={spec}", *BASE, *select]
        plain = sum(timed([*pytest, f"--cluster-reports={where / 'plain'}"], where)
                    for _ in range(options.rounds))
        soaked = timed([*pytest, f"--cluster-reports={where / 'soak'}",
                        f"--cluster-soak-rounds={options.rounds}"], where)
        results = next((where / "soak").glob("*/results.jsonl"))
        rounds = [r for r in map(json.loads, results.read_text().splitlines())
                  if r.get("type") == "round"]
    took = [r["ended_at"] - r["started_at"] for r in rounds]
    between = [b["started_at"] - a["ended_at"] for a, b in itertools.pairwise(rounds)]
    print(f"{options.nodes} simulated nodes, {options.rounds} rounds, "
          f"-m {options.select or '(all)'}")
    print(f"  plain runs one after another  {plain:7.2f} s  ({plain / options.rounds:.2f} "
          "s a run)")
    print(f"  soak                          {soaked:7.2f} s  ({soaked / options.rounds:.2f} "
          "s a round)")
    print(f"  a round's own run (start to end record)  median {statistics.median(took):.2f} s")
    print(f"  between rounds (a round's end to the next one's start)  median "
          f"{statistics.median(between):.2f} s = "
          f"{statistics.median(between) / statistics.median(took) * 100:.0f} % of a round")
    print(f"soak_overhead={soaked / plain:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
