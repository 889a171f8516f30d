"""Hostile claims: a node that lies about its storage figures costs only itself.

The aim (issue 48): a node whose checkpoint or data loader figures claim what it cannot
have done (1,000x the bytes, 1e300 bytes, near-zero seconds, a read-back of a file nobody
wrote, an empty read-back, an answer that is not its ranks' records) fails as bad output,
and the honest node beside it is ACCEPTED - never rejected through a median the lie
raised. Each case is a whole run as a user's, `pytest --cluster=SPEC -k checkpoint` (or
`-k dataloader`) in a fresh process on this machine, a two-node cluster (a, b: the local
launcher, both this machine, one shared directory) whose interpreter (`cluster.python`)
is a wrapper: it runs the real probe, then changes b's answer to the case's job phase as
the case says. The time is the run's wall time (pytest's start-up included); the peak RSS
is that process's own (os.wait4).

Cases: per program an ordinary run first (both ACCEPTED; its time is the baseline of that
program's cases' excess); then each lie, whose run must say a ACCEPTED and b REJECTED;
and the lies within every bound (WITHIN: 50 x its speed under every ceiling, a read-back
saying the file is longer than written, its digest right), whose run must say a ACCEPTED
(b's verdict is its own figures', not judged here).
Prints per case: exit code, seconds, peak RSS in MiB, the verdicts. Ends with
`hostile_claims_worst_excess_s=<the most a case took beyond the ordinary run>` (aim: under
2 s); `nan` when a case's verdicts are wrong, it exceeded 2 s beyond the ordinary run or
512 MiB, or it wrote no verdict.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

from child import ended

WRAPPER = """\
#!{python}
import json, subprocess, sys
args = sys.argv[1:]
done = subprocess.run([{python!r}, *args], input=sys.stdin.read(), capture_output=True,
                      text=True)
given = dict(zip(args, args[1:]))
lines = done.stdout.strip().splitlines()
try:
    document = json.loads(lines[-1]) if lines else None
except ValueError:
    document = None
data = document.get("data") if isinstance(document, dict) else None
if given.get("--node-rank") == "1" and given.get("--phase") == {phase!r} \\
        and {marker!r} in args and isinstance(data, dict) \\
        and isinstance(data.get("ranks"), list):
    {lie}
    lines[-1] = json.dumps(document)
    sys.stdout.write("\\n".join(lines) + "\\n")
else:
    sys.stdout.write(done.stdout)
sys.stderr.write(done.stderr)
sys.exit(done.returncode)
"""
#: How each rank's data is changed (`rank`: one of b's ranks' records), or b's whole
#: answer (`document["data"]`).
EACH = "for rank in data['ranks']:\n        rank['data'] and {change}"
CASES: dict[str, tuple[str, str, str]] = {
    "ckpt ordinary (its baseline)": ("checkpoint", "none", "pass"),
    "ckpt 1000x bytes written": ("checkpoint", "write", EACH.format(
        change="rank['data'].update(bytes=rank['data']['bytes'] * 1000)")),
    "ckpt 1e300 bytes written": ("checkpoint", "write", EACH.format(
        change="rank['data'].update(bytes=1e300)")),
    "ckpt near-zero seconds": ("checkpoint", "write", EACH.format(
        change="rank['data'].update(seconds=1e-9)")),
    "ckpt read-back of writer 999": ("checkpoint", "read", EACH.format(
        change="rank['data'].update(writer=999)")),
    "ckpt 0-byte read-back": ("checkpoint", "read", EACH.format(
        change="rank['data'].update(bytes=0, file_bytes=0, bad_blocks=0)")),
    "ckpt no ranks": ("checkpoint", "write", "data.pop('ranks')"),
    "ckpt ranks as a map": ("checkpoint", "read", "data['ranks'] = {'0': data['ranks'][0]}"),
    "loader ordinary (its baseline)": ("dataloader", "none", "pass"),
    "loader 1000x reads": ("dataloader", "read", EACH.format(
        change="rank['data'].update(ops=rank['data']['ops'] * 1000, "
               "bytes=rank['data']['bytes'] * 1000)")),
    "loader near-zero seconds": ("dataloader", "metadata", EACH.format(
        change="rank['data'].update(seconds=1e-9)")),
    "ckpt 50x speed, under the ceiling": ("checkpoint", "write", EACH.format(
        change="rank['data'].update(seconds=rank['data']['seconds'] / 50)")),
    "ckpt read-back of a longer file": ("checkpoint", "read", EACH.format(
        change="rank['data'].update(file_bytes=rank['data']['file_bytes'] + 4096)")),
}
#: The lies within every bound: they must cost the honest node nothing (b not judged).
WITHIN = {"ckpt 50x speed, under the ceiling", "ckpt read-back of a longer file"}
#: An argument only the program's jobs have.
MARKERS = {"checkpoint": "--block", "dataloader": "--read-size"}
LIMIT_MIB, LIMIT_EXCESS_S = 512, 2.0
#: keeps_up 1%: a 2 MiB burst on a busy machine is noisy, and a lie fails as bad output
#: whatever the share (the ordinary case must not reject an honest node on noise).
SPEC = """\
cluster: {{name: hostile, nodes: 'a,b', launcher: local, python: {python}}}
storage:
  - path: {shared}
    shared: true
    checkpoint: {{size_per_node: 2 MiB, block_size: 256 KiB, write: '>= 1 MB/s',
                 keeps_up: 1%, timeout: 120 s}}
    dataloader: {{size_per_node: 1 MiB, duration: 1 s, workers: 1, metadata_files: 50,
                 iops: '>= 1 IOPS', keeps_up: 1%, timeout: 120 s}}
"""


def run(case: str, root: Path) -> tuple[int, float, float, dict[str, str]]:
    """One case: exit code, seconds, peak RSS (MiB), each node's verdict."""
    program, phase, lie = CASES[case]
    fake = root / "python-node"
    fake.write_text(WRAPPER.format(python=sys.executable, phase=phase, lie=lie,
                                   marker=MARKERS[program]))
    fake.chmod(0o755)
    shared = root / "shared"
    shared.mkdir()
    (root / "spec.yaml").write_text(SPEC.format(python=fake, shared=shared))
    done = ended([sys.executable, "-m", "pytest", "--cluster=spec.yaml", "-q", "-p",
                  "no:cacheprovider", "--cluster-reports=reports", "-k", program],
                 cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs = sorted((root / "reports").glob("2*"))
    verdict = runs[-1] / "verdict.json" if runs else None
    found = {item["node"]: item["verdict"] for item in json.loads(
        verdict.read_text())["nodes"]} if verdict and verdict.exists() else {}
    return done.code if done.code is not None else -1, done.seconds, done.rss_mib, found


def main() -> int:
    worst, ordinary = 0.0, dict[str, float]()
    for case, (program, phase, _) in CASES.items():
        with tempfile.TemporaryDirectory(prefix="hostile-claims-") as scratch:
            code, seconds, mib, found = run(case, Path(scratch))
        baseline = ordinary.setdefault(program, seconds)  # its program's first: ordinary
        want = {"a": "ACCEPTED", "b": "ACCEPTED" if phase == "none" else "REJECTED"}
        right = found == want or (case in WITHIN and found.get("a") == "ACCEPTED"
                                  and "b" in found)
        excess = seconds - baseline
        print(f"{case:31s} exit {code}  {seconds:6.2f} s (+{excess:5.2f})  {mib:7.1f} MiB  "
              f"{', '.join(f'{n} {v}' for n, v in sorted(found.items())) or 'NO VERDICT'}"
              f"{'' if right else '  WRONG: want ' + str(want)}")
        worst = math.nan if (not right or mib > LIMIT_MIB or excess > LIMIT_EXCESS_S
                             or math.isnan(worst)) else max(worst, excess)
    print(f"hostile_claims_worst_excess_s={worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
