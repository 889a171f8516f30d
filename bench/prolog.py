"""The shipped SLURM prolog's time on a real SLURM node (issue 36): cold and warm.

On tests/netns_cluster.py's cluster (root, iproute2, openssh-server, slurm-wlm), with
examples/slurm/pytest-cluster-prolog.sh installed as slurm.conf's Prolog (its three paths
set, nothing else edited) and a contract of every section that runs on those nodes (host,
software, storage, fabric, interconnect, training: tests/real/test_prolog.py's). Side by side
in one run, each the prolog as slurmd runs it (in node1's namespaces, `env -i` with
SLURM_SCRIPT_CONTEXT=prolog_slurmd, SLURMD_NODENAME and SLURM_JOB_ID), timed wall clock:

- cold: after `echo 3 > /proc/sys/vm/drop_caches` (root): the interpreter, pytest and
  pytest-cluster read from disk, as after a node's boot;
- warm: the same again, `--repeats` times (the median).

Then a job submitted with sbatch: from submission to its marker file, the prolog included.

Ends with `prolog_cold_s=<s>` (aim < 10), `prolog_warm_s=<s>` (aim < 2) and
`prolog_job_s=<s>`.

    sudo python bench/prolog.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def drop_caches() -> bool:
    """Drop the page cache (root only); False where it cannot."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from tests.netns_cluster import NetnsCluster, Unavailable  # noqa: PLC0415
    from tests.real.test_prolog import CONTRACT  # noqa: PLC0415
    from tests.slurm_scripts import PROLOG, installed  # noqa: PLC0415

    try:
        cluster = NetnsCluster(4)
    except Unavailable as exc:
        print(f"prolog bench: no namespace cluster here: {exc}")
        return 1
    with cluster, tempfile.TemporaryDirectory(prefix="pc-prolog-bench-") as scratch:
        where = Path(scratch)
        (where / "scratch").mkdir()
        spec = where / "contract.yaml"
        spec.write_text(CONTRACT.format(python=sys.executable, scratch=where / "scratch",
                                        section=cluster.launcher_section("ssh")))
        prolog = installed(PROLOG, where, spec, where)
        env = cluster.start_slurm(prolog=prolog)
        slurmd = cluster.slurmd["node1"].pid

        def once(job: int) -> float:
            started = time.monotonic()
            done = subprocess.run(
                ["nsenter", "-t", str(slurmd), "--all", "env", "-i",
                 "SLURM_SCRIPT_CONTEXT=prolog_slurmd", "SLURMD_NODENAME=node1",
                 f"SLURM_JOB_ID={job}", str(prolog)],
                capture_output=True, text=True, check=False, timeout=120)
            took = time.monotonic() - started
            if done.returncode != 0 or done.stderr:
                raise SystemExit(f"prolog bench: the prolog on a healthy node said "
                                 f"{done.returncode}: {done.stderr[-2000:]}")
            return took

        dropped = drop_caches()
        cold = once(1)
        warm = [once(2 + i) for i in range(args.repeats)]
        marker = where / "ran"
        started = time.monotonic()
        subprocess.run(["sbatch", "--parsable", "--nodelist=node1",
                        f"--output={where / 'job.out'}", f"--wrap=touch {marker}"],
                       env={**os.environ, **env}, check=True, capture_output=True,
                       timeout=60)
        cluster.wait_for(lambda: marker.exists() or None, "the job ran", 120)
        job = time.monotonic() - started
    print(f"cold (caches {'dropped' if dropped else 'NOT dropped: not root'}): {cold:.2f} s")
    print(f"warm: median {statistics.median(warm):.2f} s of {args.repeats} "
          f"({', '.join(f'{w:.2f}' for w in warm)})")
    print(f"a job through sbatch, prolog included: {job:.2f} s")
    print(f"prolog_cold_s={cold:.2f}")
    print(f"prolog_warm_s={statistics.median(warm):.2f}")
    print(f"prolog_job_s={job:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
