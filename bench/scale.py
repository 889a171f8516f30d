"""The scaling curve of a simulated N-node x 8-GPU cluster, all sections (issue 13).

For each size (default 128, 512, 1024 nodes) this writes a spec - examples/sim-h100.yaml's
host and gpus sections plus an interconnect section like examples/sim-h100-64.yaml's, with
node_counts [2, 8, 64, N], one node at half its network rate and one node down - and runs
it as a user would: `python -m pytest --cluster=SPEC` in a fresh process, under
/usr/bin/time -v (the controller's peak RSS), from a scratch directory, serially. It reads
the number of cases from results.jsonl's end line and prints, per size: cases, seconds,
seconds per 1,000 cases, peak RSS (MiB), the sizes of report.html, junit.xml and
results.jsonl (MB: 1e6 bytes), the longest results.jsonl line (the run's first or last
line, which name every node) and the longest result line of a case (KB: 1e3 bytes); and how
long report.html takes to open and render in headless Chromium (bench/report_load.py's
measure: load event and the report's own scripts done, one fresh browser; `nan` without
Chromium).

Ends with `per_1000_ratio=<seconds per 1,000 cases at the largest size / at the smallest>`
(aim: <= 1.3, the cost of a case flat in the cluster size).

    python bench/scale.py                  # 128, 512, 1024
    python bench/scale.py --sizes 128,512  # a quicker run
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import report_load  # bench/report_load.py, beside this script

ROOT = Path(__file__).resolve().parent.parent
HOST_AND_GPUS = (ROOT / "examples" / "sim-h100.yaml").read_text(encoding="utf-8")


def spec_text(nodes: int) -> str:
    width = max(2, len(str(nodes)))
    counts = sorted({c for c in (2, 8, 64, nodes) if c <= nodes})
    text = HOST_AND_GPUS.split("sim:")[0]
    text = re.sub(r"name: sim-h100\n", f"name: sim-h100-{nodes}\n", text)
    text = re.sub(r"nodes: sim-gpu-\[01-04\]",
                  f"nodes: sim-gpu-[{1:0{width}d}-{nodes:0{width}d}]", text)
    slow, down = f"sim-gpu-{nodes // 3:0{width}d}", f"sim-gpu-{nodes // 2:0{width}d}"
    return text + f"""
interconnect:
  intra_node: {{kind: nvlink, rate: 450 GB/s}}
  inter_node: {{kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}}
  payloads: [4 GiB, 16 GiB]
  node_counts: {counts}
  busbw: ">= 80%"
  ranks_per_node: 8
  backend: nccl

sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 8
  faults:
    - {{node: {slow}, link_factor: 0.5}}
    - {{node: {down}, down: true}}
"""


def run_size(nodes: int, scratch: Path) -> dict[str, float]:
    work = scratch / str(nodes)
    work.mkdir()
    spec = work / "spec.yaml"
    spec.write_text(spec_text(nodes), encoding="utf-8")
    reports = work / "reports"
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "pytest", f"--cluster={spec}",
               f"--cluster-reports={reports}", "-q", "-p", "no:cacheprovider",
               "-p", "no:hypothesispytest"]
    started = time.monotonic()
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    rss_mib = int(found.group(1)) / 1024 if found else float("nan")
    run_dir = reports / "latest"
    results = run_dir / "results.jsonl"
    cases, longest, longest_case = 0, 0, 0
    if results.exists():
        with results.open(encoding="utf-8") as lines:
            for line in lines:
                longest = max(longest, len(line))
                record = json.loads(line)
                if record.get("type") == "result":
                    longest_case = max(longest_case, len(line))
                if record.get("type") == "end":
                    cases = int(record["checks_ran"])
    else:
        print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)

    def mb(name: str) -> float:
        path = run_dir / name
        return path.stat().st_size / 1e6 if path.exists() else float("nan")

    return {"nodes": nodes, "cases": cases, "seconds": seconds, "load_s": load_s(run_dir, work),
            "per_1000": seconds / cases * 1000 if cases else float("nan"),
            "rss_mib": rss_mib, "html_mb": mb("report.html"), "junit_mb": mb("junit.xml"),
            "jsonl_mb": mb("results.jsonl"), "longest_kb": longest / 1e3,
            "case_kb": longest_case / 1e3,
            "exit": done.returncode}


def load_s(run_dir: Path, work: Path) -> float:
    """Seconds until report.html is rendered in a fresh headless Chromium; nan without."""
    chromium = shutil.which(os.environ.get("CHROMIUM") or "chromium")
    report = run_dir / "report.html"
    if chromium is None or not report.exists():
        return math.nan
    try:
        return report_load.measure_once(chromium, report, work, 0)["rendered_s"]
    except (report_load.CdpError, OSError, TimeoutError) as exc:
        print(f"report load not measured: {exc}", file=sys.stderr)
        return math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="128,512,1024",
                        help="node counts, comma-separated (default 128,512,1024)")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    rows = []
    header = (f"{'nodes':>6} {'cases':>8} {'run s':>7} {'s/1000':>7} {'RSS MiB':>7} "
              f"{'html MB':>8} {'load s':>7} {'junit MB':>9} {'jsonl MB':>9} {'line KB':>8} "
              f"{'case KB':>8} {'exit':>4}")
    print(header)
    with tempfile.TemporaryDirectory(prefix="scale-") as scratch:
        for nodes in sizes:
            row = run_size(nodes, Path(scratch))
            rows.append(row)
            print(f"{row['nodes']:>6} {row['cases']:>8} {row['seconds']:>7.1f} "
                  f"{row['per_1000']:>7.2f} {row['rss_mib']:>7.0f} {row['html_mb']:>8.1f} "
                  f"{row['load_s']:>7.2f} "
                  f"{row['junit_mb']:>9.1f} {row['jsonl_mb']:>9.1f} "
                  f"{row['longest_kb']:>8.1f} {row['case_kb']:>8.1f} {row['exit']:>4}",
                  flush=True)
    print(f"peak_rss_mib={max(r['rss_mib'] for r in rows):.0f}")
    print(f"largest_report_load_s={rows[-1]['load_s']:.2f}")
    print(f"per_1000_ratio={rows[-1]['per_1000'] / rows[0]['per_1000']:.2f}")


if __name__ == "__main__":
    main()
