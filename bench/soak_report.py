"""A 48-hour soak's report must read in a minute: does the report of a soak of 300 rounds
over 64 simulated nodes open in headless Chromium in under 3 s, beside one round's report?

1. Runs a real soak of 2 rounds (`-m sanity`) of 64 simulated nodes (bench/scale.py's spec,
   with an `sla:` section; from round 2 one node is down and one GPU's ECC count grows).
2. Makes the soak 300 rounds long the way a long soak would leave it: rounds 3-300 are
   copies of round 1 (healthy) or of round 2 (the faults; rounds 120-170 and 250-260), with
   every time in their results.jsonl moved on by one round period each. Nothing else of a
   round is rewritten (the soak reads a round's results.jsonl and verdict.json).
3. Goes on with the soak (`--cluster-soak-resume=DIR --cluster-soak-rounds=300`): no round is
   left to run, so the soak only reports over its 300 rounds, as at the end of a real one.
4. Opens both reports (the soak's, and round 1's own: the same cases, once) in headless
   Chromium with bench/report_load.py's measure (the page loaded and its scripts done
   rendering, in the page's clock), REPEATS times each, and prints the medians and sizes.

The last line is `soak_report_load_s=<median seconds of the soak's report>` (`nan` without
Chromium: Debian's `chromium` package).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from report_load import measure_once  # bench/report_load.py, beside this script
from scale import spec_text  # bench/scale.py, beside this script
from soak import timed as run  # bench/soak.py: a run timed from outside

BASE = ("-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-m", "sanity")
SLA = """
sla:
  uptime: 99.5%
  down_after: 5 min
  price_per_node_hour: 98.32
  currency: USD
  credits: [{below: 99.5%, credit: 10%}, {below: 99%, credit: 25%}, {below: 95%, credit: 100%}]
"""
#: Rounds that are copies of the faulty round 2.
FAULTY = {*range(120, 171), *range(250, 261)}
PERIOD_S = 576.0  # 300 rounds over 48 hours


def spec(nodes: int) -> str:
    text = spec_text(nodes).split("interconnect:")[0]
    width = max(2, len(str(nodes)))
    return text + SLA + f"""
sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 8
  faults:
    - {{node: sim-gpu-{nodes // 2:0{width}d}, down: true, from_round: 2}}
    - {{node: sim-gpu-{nodes // 3:0{width}d}, gpu: 3, ecc_uncorrected: 2, from_round: 2}}
"""


def shifted(results: Path, by: float) -> str:
    """A round's results.jsonl with every time in it moved on by `by` seconds, and its
    end a moment before the next round's start (rounds follow each other)."""
    lines = []
    for line in results.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for key in ("started_at", "finished_at", "ended_at"):
            if isinstance(record.get(key), (int, float)):
                record[key] += by
        if record.get("type") == "end":
            record["ended_at"] = record["started_at"] + PERIOD_S - 0.5
        lines.append(json.dumps(record, sort_keys=True))
    return "\n".join(lines) + "\n"


def stretch(soak_dir: Path, rounds: int) -> None:
    """Rounds 3..`rounds` as copies of round 1 or 2, each a period after the last."""
    root = soak_dir / "rounds"
    first = root / "round-0001"
    start = json.loads((first / "results.jsonl").read_text().splitlines()[0])["started_at"]
    for number in range(1, rounds + 1):
        source = root / ("round-0002" if number == 2 or number in FAULTY else "round-0001")
        target = root / f"round-{number:04d}"
        if number > 2:
            shutil.copytree(source, target)
        own = json.loads((source / "results.jsonl").read_text().splitlines()[0])["started_at"]
        (target / "results.jsonl").write_text(
            shifted(source / "results.jsonl", start + (number - 1) * PERIOD_S - own),
            encoding="utf-8")


def load(chromium: str, report: Path, work: Path, repeats: int) -> float:
    times = []
    for attempt in range(repeats):
        found = measure_once(chromium, report, work, attempt)
        times.append(found.get("rendered_s", math.nan))
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a "
                        "temporary directory, removed)")
    options = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with tempfile.TemporaryDirectory() as scratch:
        where = options.keep or Path(scratch)
        where.mkdir(parents=True, exist_ok=True)
        (where / "spec.yaml").write_text(spec(options.nodes), encoding="utf-8")
        pytest = [sys.executable, "-m", "pytest", "--cluster=spec.yaml", *BASE,
                  "--cluster-reports=reports"]
        took = run([*pytest, "--cluster-soak-rounds=2"], where)
        soak_dir = (where / "reports" / "latest").resolve()
        stretch(soak_dir, options.rounds)
        reported = run([*pytest, f"--cluster-soak-resume={soak_dir}",
                        f"--cluster-soak-rounds={options.rounds}"], where)
        soak_report = soak_dir / "report.html"
        round_report = soak_dir / "rounds" / "round-0001" / "report.html"
        print(f"{options.nodes} simulated nodes, -m sanity: 2 real rounds in {took:.1f} s, "
              f"{options.rounds} rounds reported over in {reported:.1f} s")
        for name, path in (("soak", soak_report), ("one round", round_report)):
            print(f"  {name:10s} report.html {path.stat().st_size / 1e6:6.2f} MB")
        if chromium is None:
            print("no chromium on PATH (apt install chromium): nothing opened")
            print("soak_report_load_s=nan")
            return 0
        shown = {name: load(chromium, path, where, options.repeats)
                 for name, path in (("soak", soak_report), ("one round", round_report))}
        for name, seconds in shown.items():
            print(f"  {name:10s} opens in headless Chromium in {seconds:.2f} s (median of "
                  f"{options.repeats})")
    print(f"soak_report_load_s={shown['soak']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
