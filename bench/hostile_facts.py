"""Hostile facts: a node that answers numbers no machine has (issue 48, item 2) and
figures above the physical ceiling of what it declares (item 1).

Each case is a whole run as a user's, `pytest --cluster=SPEC` in a fresh process on this
machine as a one-node cluster whose interpreter (`cluster.python`) is a wrapper: it runs
the real probe, then rewrites one field of one probe's answer (measure/plausible.py
declares what is plausible). The case must fail the clause that reads the field, as bad
output naming it - never a pass, a traceback or a hang. The time is the run's wall time
(pytest's start-up included); the peak RSS is that process's own (bench/child.py).

Cases: an ordinary run first (its time is the baseline of the others' excess); cpu.cores
1e308; cpu.threads -5; memory.total_bytes 1e300; a NIC error counter of -5; a port's rate
of 1e9 Gb/s (above any line rate); cpu.cores 3.5 (a count is whole); cpu.cores '64' (a
string is no number, never float()'s); the cpu section a list; a NIC counter of 2**64 + 1
(the float 2.0**64, and no 64-bit counter holds it). Prints per case: exit code, seconds,
peak RSS in MiB, the clause's outcome and whether its message names the field. Ends with
`hostile_facts_worst_excess_s=<the most a case took beyond the ordinary run>` (aim: under
2 s); `nan` when a case passed, did not name the field, or exceeded 512 MiB.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from child import ended

WRAPPER = """\
#!{python}
import json, subprocess, sys
done = subprocess.run([{python!r}, *sys.argv[1:]], input=sys.stdin.read(),
                      capture_output=True, text=True)
lines = done.stdout.strip().splitlines()
document = json.loads(lines[-1]) if lines else {{}}
if document.get("probe") == {probe!r}:
    data = document["data"]
    {edit}
    print(json.dumps(document))
else:
    sys.stdout.write(done.stdout)
sys.stderr.write(done.stderr)
sys.exit(done.returncode)
"""
HOST = "host: {cpu_cores: '>= 1', cpu_threads: '>= 1', memory: '>= 1 GiB'}\n"
FABRIC = "fabric: {devices: 'bench0', ports: '>= 1'}\n"
#: one made-up port the fabric clauses count (fabric.devices names it)
PORT = {"name": "bench0", "kind": "net", "active": True, "state": "up", "rate_gbit": 400,
        "mtu": 9000, "counters": {"rx_errors": 0}}


@dataclass(frozen=True)
class Case:
    probe: str  # whose answer is rewritten
    edit: str  # Python on the answer's `data`
    clause: str  # the clause that must fail as bad output ('' for the ordinary run)
    field: str  # what its message must name
    spec: str = HOST


CASES: dict[str, Case] = {
    "ordinary (the baseline)": Case("host", "pass", "", ""),
    "cpu.cores 1e308": Case("host", "data['cpu']['cores'] = 1e308", "host.cpu_cores",
                            "cpu.cores = 1e+308"),
    "cpu.threads -5": Case("host", "data['cpu']['threads'] = -5", "host.cpu_threads",
                           "cpu.threads = -5"),
    "memory 1e300 bytes": Case("host", "data['memory']['total_bytes'] = 1e300",
                               "host.memory", "memory.total_bytes = 1e+300"),
    "NIC counter -5": Case("nic", f"data['ports'] = [{{**{PORT!r}, "
                           "'counters': {'rx_errors': -5}}]", "fabric.ports",
                           "counters.rx_errors = -5", HOST + FABRIC),
    "port 1e9 Gb/s": Case("nic", f"data['ports'] = [{{**{PORT!r}, 'rate_gbit': 1e9}}]",
                          "fabric.ports", "rate_gbit = 1000000000", HOST + FABRIC),
    "cpu.cores 3.5": Case("host", "data['cpu']['cores'] = 3.5", "host.cpu_cores",
                          "cpu.cores = 3.5"),
    "cpu.cores '64'": Case("host", "data['cpu']['cores'] = '64'", "host.cpu_cores",
                           "cpu.cores is not a finite number: '64'"),
    "cpu a list": Case("host", "data['cpu'] = [64]", "host.cpu_cores", "cpu is a list"),
    "NIC counter 2**64 + 1": Case("nic", f"data['ports'] = [{{**{PORT!r}, "
                                  "'counters': {'rx_errors': 2**64 + 1}}]", "fabric.ports",
                                  f"counters.rx_errors = {2**64 + 1}", HOST + FABRIC),
}
LIMIT_MIB = 512


def run(case: Case, root: Path) -> tuple[int, float, float, str, bool]:
    """One case: exit code, seconds, peak RSS (MiB), the clause's outcome, whether its
    message names the field (as bad output)."""
    fake = root / "python-node"
    fake.write_text(WRAPPER.format(python=sys.executable, probe=case.probe, edit=case.edit))
    fake.chmod(0o755)
    (root / "spec.yaml").write_text(
        f"cluster: {{name: facts, nodes: localhost, launcher: local, python: {fake}}}\n"
        + case.spec)
    done = ended([sys.executable, "-m", "pytest", "--cluster=spec.yaml", "-q", "-p",
                  "no:cacheprovider", "--cluster-reports=reports"],
                 cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    outcome, named = "missing", False
    results = root / "reports" / "latest" / "results.jsonl"
    if results.exists():
        for line in results.read_text().splitlines():
            record = json.loads(line)
            if record.get("type") == "result" and record.get("clause") == case.clause:
                outcome = str(record.get("outcome"))
                named = record.get("error_kind") == "bad_output" \
                    and case.field in str(record.get("message"))
    if not case.clause:
        outcome, named = ("ran", True) if results.exists() else ("missing", False)
    return done.code if done.code is not None else -1, done.seconds, done.rss_mib, \
        outcome, named


def main() -> int:
    worst, ordinary = 0.0, None
    for name, case in CASES.items():
        with tempfile.TemporaryDirectory(prefix="hostile-facts-") as scratch:
            code, seconds, mib, outcome, named = run(case, Path(scratch))
        ordinary = seconds if ordinary is None else ordinary
        right = named and (outcome == "failed" or not case.clause)
        print(f"{name:24s} exit {code}  {seconds:6.2f} s (+{seconds - ordinary:5.2f})  "
              f"{mib:7.1f} MiB  {case.clause or 'the run'} {outcome}"
              f"{'' if right else '  WRONG: the field is not named as bad output'}")
        worst = math.nan if (not right or mib > LIMIT_MIB or math.isnan(worst)) \
            else max(worst, seconds - ordinary)
    print(f"hostile_facts_worst_excess_s={worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
