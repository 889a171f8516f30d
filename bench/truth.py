"""The ground-truth oracle at scale: many random scenarios (tests/truth.py), each a
simulated cluster of 2 to --max-nodes nodes with random faults, levels, selections and
Ctrl-C, run as a user runs it and its verdict held to the faults the simulator played.
Prints each scenario that told something untrue, with its seed (replay one with
--seed N). The last line is `scenarios=N violations=V` (aim: violations=0)."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.truth import describe, scenario, timed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", type=int, default=1000)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--seed", type=int, help="replay this one scenario")
    parser.add_argument("--max-nodes", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=2)
    options = parser.parse_args()
    seeds = [options.seed] if options.seed is not None else \
        list(range(options.first_seed, options.first_seed + options.scenarios))
    scratch = Path(tempfile.mkdtemp(prefix="truth-"))

    def one(seed: int) -> tuple[int, list[str], float]:
        chosen = scenario(seed, max_nodes=options.max_nodes)
        where = scratch / str(seed)
        found, seconds = timed(chosen, where)
        if not found:
            shutil.rmtree(where, ignore_errors=True)
        return seed, found, seconds

    bad = 0
    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        for seed, found, seconds in pool.map(one, seeds):
            chosen = scenario(seed, max_nodes=options.max_nodes)
            print(f"{'VIOLATED' if found else 'ok'} {seconds:.1f}s {describe(chosen)}",
                  flush=True)
            for line in found[:20]:
                print(f"    {line[:400]}", flush=True)
            bad += bool(found)
    print(f"kept: {scratch} (the runs that told something untrue)")
    print(f"scenarios={len(seeds)} violations={bad}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
