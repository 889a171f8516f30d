"""One node of a big cluster, checked as a provider's gate checks it (issue 28).

Side by side in one run, each `python -m pytest` in a fresh process from a scratch
directory, serially, under /usr/bin/time -v (wall time including the interpreter's start,
peak RSS):

- `-m sanity --cluster-node=<a node>` on bench/scale.py's 1,024-node x 8-GPU spec (every
  section), against `-m sanity` on the same spec cut to that one node (`cluster.nodes` one
  name: the same clauses but those across nodes);
- `-m sanity` of examples/localhost.yaml on this machine, the cost of a gate on a real node.

Ends with `one_node_ratio=<1,024-node run of one node / the one-node spec>` (aim <= 1.2)
and `sanity_localhost_s=<wall seconds>` (aim < 1.5).

    python bench/one_node.py [--nodes 1024] [--repeats 3]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from scale import spec_text  # bench/scale.py, beside this script

ROOT = Path(__file__).resolve().parent.parent


def timed(args: list[str], work: Path) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS MiB, exit status, the summary line) of one pytest run."""
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "pytest", *args, "-q",
               "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
               f"--cluster-reports={work / 'reports'}"]
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):"
                     r"([\d.]+)", done.stderr)
    seconds = (int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60
               + float(wall.group(3))) if wall else float("nan")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    summary = next((line for line in reversed(done.stdout.splitlines())
                    if " in " in line and ("passed" in line or "failed" in line)), "")
    return seconds, int(rss.group(1)) / 1024 if rss else float("nan"), done.returncode, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pc-one-node-") as scratch:
        work = Path(scratch)
        big = work / "big.yaml"
        text = spec_text(args.nodes)
        big.write_text(text, encoding="utf-8")
        width = max(2, len(str(args.nodes)))
        node = f"sim-gpu-{7:0{width}d}"
        one = work / "one.yaml"
        alone = re.sub(r"nodes: sim-gpu-\[[^\]]+\]", f"nodes: [{node}]", text)
        # the faults are on other nodes: a spec of one node names none of them
        one.write_text(re.sub(r"  faults:\n(    - .*\n)+", "", alone), encoding="utf-8")
        sides = {
            f"one node of {args.nodes}": [f"--cluster={big}", f"--cluster-node={node}",
                                          "-m", "sanity"],
            "a one-node spec": [f"--cluster={one}", "-m", "sanity"],
            "localhost sanity": [f"--cluster={ROOT / 'examples' / 'localhost.yaml'}",
                                 "-m", "sanity"],
        }
        best: dict[str, float] = {}
        exits: dict[str, int] = {}
        for name, line in sides.items():
            runs = [timed(line, work) for _ in range(args.repeats)]
            seconds = [run[0] for run in runs]
            best[name] = statistics.median(seconds)
            exits[name] = runs[-1][2]
            shown = ", ".join(f"{s:.2f}" for s in seconds)
            print(f"{name:22s} median {best[name]:6.2f} s (of {shown}) "
                  f"peak {max(run[1] for run in runs):6.1f} MiB, exit {runs[-1][2]}: "
                  f"{runs[-1][3]}")
    if any(code != 0 for code in exits.values()):
        print(f"a side did not run its checks: exit statuses {exits}", file=sys.stderr)
        return 1
    ratio = best[f"one node of {args.nodes}"] / best["a one-node spec"]
    print(f"one_node_ratio={ratio:.3f}")
    print(f"sanity_localhost_s={best['localhost sanity']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
