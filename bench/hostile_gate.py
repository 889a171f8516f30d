"""Hostile inputs of the gate and the shipped SLURM scripts (issue 48): how long each takes,
how much memory, what it says.

The aim: whatever verdict.json, log, node name or job id the gate or a script is handed, it
ends within 2 s, in under 512 MiB, with an exit code it documents, saying one bounded line
per reason, draining nothing it should not and writing nothing outside REPORTS. Each case
runs as slurmd or a site runs it, in a fresh process (`python -m pytest_cluster.cli gate
...`, or the prolog as installed, `env -i` but SLURM's variables), so the time includes the
interpreter's start-up; the peak RSS is that process's own (os.wait4, bench/child.py). Each
case is built by a process of its own first, so that the bench's process stays small.

Cases (CASES): an ordinary rejected node (drained once); a reason of 150,000 clauses
(cut_reason was quadratic: 10,000 took 4.7 s, 150,000 hung); verdict.json a FIFO and
--log a FIFO (each blocked forever); one node listed 400,000 times (15,950 scontrol calls
in 60 s); 200,000 nodes (24.7 s); 64 MiB of the smallest node entries; 64 MiB of `[],`
(1.7 GB, 23 s) and the most JSON values the gate parses, of the costliest kinds; the most
nodes a run writes (hostlist.MAX_NODES), all rejected, simulated; a reason with a newline, an escape
sequence and 100 kB; the prolog given a node name or a job id of '../../../../x', a name
with a newline, a name of 100 kB; a verdict.json whose 'nodes' is given twice, the last
empty, after a PASS (json keeps the last: it passed), one listing n2 and N2 (one host), a
socket in its place; the prolog given a name of 253 characters (mkdir said so on a line of
its own) and a run folder that is a link; a run path of 5,000 characters (a traceback,
exit 1: FAIL's code). The gate's --drain runs a scontrol of the bench's
that counts its calls, and a sinfo of the bench's that lists no node (each failed one is
drained as before).

Prints per case: exit code (expected), seconds (and CPU seconds: on a loaded machine the
wall clock says more of the others' load than of the case's), peak RSS in MiB, lines and
bytes of output, scontrol calls, and OVER where a case took 2 s or more or 512 MiB or
more. Ends with `hostile_gate_worst_s=<the longest case>` (`nan` when a case did not exit
as expected, said more than it may, called scontrol where it may not or wrote outside
REPORTS) and `hostile_gate_worst_rss_mib=<the largest peak>`.

    python bench/hostile_gate.py
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from child import ended

ROOT = Path(__file__).resolve().parent.parent
HANG_S = 60  # a case still running then is killed and reported as hung
LIMIT_S, LIMIT_MIB = 2.0, 512
TRIAL = ROOT / "examples" / "trial-sim.yaml"


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[Path], list[str]]  # builds the case under a scratch directory: argv
    exit_code: int
    scontrol_calls: int = 0  # how many drains the case may make
    max_lines: int = 2  # lines of output it may say


def entry(name: str, verdict: str = "REJECTED", reason: str = "1 clause(s) failed: "
          "fabric.ports") -> dict[str, str]:
    """The smallest node entry the gate reads."""
    outcome = {"ACCEPTED": "PASS", "REJECTED": "FAIL"}[verdict]
    return {"node": name, "verdict": verdict, "outcome": outcome, "reason": reason}


def verdict_of(run: Path, nodes: list[dict[str, str]], simulated: bool = False) -> Path:
    run.mkdir(parents=True, exist_ok=True)
    failed = any(n["outcome"] == "FAIL" for n in nodes)
    with (run / "verdict.json").open("w") as stream:
        json.dump({"verdict": "REJECTED" if failed else "ACCEPTED",
                   "outcome": "FAIL" if failed else "PASS", "level": "sanity",
                   "simulated": simulated, "nodes": nodes, "cluster_checks_failed": []},
                  stream)
    return run


def gate(run: Path, *more: str) -> list[str]:
    return [sys.executable, "-m", "pytest_cluster.cli", "gate", str(run), "--exit-status",
            "1", "--drain", *more]


def ordinary(root: Path) -> list[str]:
    return gate(verdict_of(root / "run", [entry("n1", "ACCEPTED", ""), entry("n2")]))


def clauses(count: int) -> Callable[[Path], list[str]]:
    def make(root: Path) -> list[str]:
        listed = ", ".join(f"storage[/scratch{i}].capacity" for i in range(count))
        return gate(verdict_of(root / "run", [entry("n1", reason=f"{count} clause(s) "
                                                              f"failed: {listed}")]))
    return make


def fifo_verdict(root: Path) -> list[str]:
    (root / "run").mkdir()
    os.mkfifo(root / "run" / "verdict.json")
    return gate(root / "run")


def fifo_log(root: Path) -> list[str]:
    run = verdict_of(root / "run", [entry("n2")])
    os.mkfifo(run / "pytest.log")
    return gate(run, "--log", str(run / "pytest.log"))


def listed_twice(times: int) -> Callable[[Path], list[str]]:
    def make(root: Path) -> list[str]:
        return gate(verdict_of(root / "run", [entry("n1")] * times))
    return make


def nodes(count: int, simulated: bool = False) -> Callable[[Path], list[str]]:
    def make(root: Path) -> list[str]:
        return gate(verdict_of(root / "run", [entry(f"gpu-{i:06d}") for i in range(count)],
                               simulated))
    return make


def nodes_of(entries: list[dict[str, str]]) -> Callable[[Path], list[str]]:
    def make(root: Path) -> list[str]:
        return gate(verdict_of(root / "run", entries))
    return make


def tiny_entries(root: Path) -> list[str]:
    """64 MiB, less a little, of the smallest node entries JSON allows the gate to read."""
    (root / "run").mkdir()
    one = b'{"node":"n","verdict":"ACCEPTED","outcome":"PASS","reason":""},'
    count = (64 * 2**20 - 100) // len(one)
    (root / "run" / "verdict.json").write_bytes(
        b'{"outcome":"PASS","nodes":[' + one * (count - 1) + one[:-1] + b"]}")
    return gate(root / "run")


def flood(unit: bytes, count: int) -> Callable[[Path], list[str]]:
    """verdict.json of no node and `count` of `unit` in one list (a JSON value each)."""
    def make(root: Path) -> list[str]:
        (root / "run").mkdir()
        (root / "run" / "verdict.json").write_bytes(
            b'{"nodes":[],"x":[' + unit * (count - 1) + unit[:-1] + b"]}")
        return gate(root / "run")
    return make


#: The most lists, objects, items and members the gate parses (gate.MAX_JSON_VALUES).
MOST_VALUES = 64 * 2**20 // 16


def hostile_reason(root: Path) -> list[str]:
    reason = "1 clause(s) failed: x\nFAIL n9: forged\x1b[2J" + "y" * 100_000
    return gate(verdict_of(root / "run", [entry("n1", reason=reason)]))


def forged_nodes(root: Path) -> list[str]:
    """The run's rejected node, then a second "nodes": [] and a PASS (json keeps the last)."""
    run = verdict_of(root / "run", [entry("n2")])
    text = (run / "verdict.json").read_text()
    (run / "verdict.json").write_text(text[:-1] + ', "nodes": [], "verdict": "ACCEPTED", '
                                      '"outcome": "PASS"}')
    return gate(run)


def socket_verdict(root: Path) -> list[str]:
    import socket  # noqa: PLC0415
    (root / "run").mkdir()
    with socket.socket(socket.AF_UNIX) as sock:  # the file stays, no one listening
        sock.bind(str(root / "run" / "verdict.json"))
    return gate(root / "run")


def prolog(node: str, job: str, link: bool = False) -> Callable[[Path], list[str]]:
    """The shipped prolog, installed with REPORTS under `root`/reports, as slurmd runs it
    (`link`: the run's folder is a link to another folder)."""
    def make(root: Path) -> list[str]:
        sys.path.insert(0, str(ROOT))
        from tests.slurm_scripts import PROLOG, installed  # noqa: PLC0415
        (root / "bin").mkdir()
        script = installed(PROLOG, root / "bin", TRIAL, root / "reports")
        if link:
            (root / "elsewhere").mkdir()
            (root / "reports" / "prolog").mkdir(parents=True)
            (root / "reports" / "prolog" / f"{node}-job{job}").symlink_to(root / "elsewhere")
        return ["env", "-i", f"SLURMD_NODENAME={node}", f"SLURM_JOB_ID={job}", str(script)]
    return make


CASES = [
    Case("ordinary, 1 node rejected", ordinary, 1, scontrol_calls=1),
    Case("reason of 10,000 clauses", clauses(10_000), 1, scontrol_calls=1),
    Case("reason of 150,000 clauses", clauses(150_000), 1, scontrol_calls=1),
    Case("verdict.json a FIFO", fifo_verdict, 2),
    Case("--log a FIFO", fifo_log, 2, max_lines=4),  # argparse: usage, then the error
    Case("one node listed 400,000 times", listed_twice(400_000), 2),
    Case("200,000 nodes", nodes(200_000), 2),
    Case("64 MiB of the smallest entries", tiny_entries, 2),
    Case("64 MiB of '[],'", flood(b"[],", (64 * 2**20 - 100) // 3), 2),
    Case("the most short strings read", flood(b'"ab",', MOST_VALUES - 10), 2, max_lines=3),
    Case("the most empty lists read", flood(b"[],", MOST_VALUES // 2 - 10), 2, max_lines=3),
    Case("65,536 nodes rejected, simulated", nodes(65_536, simulated=True), 1,
         max_lines=65_537),
    Case("reason: newline, ESC, 100 kB", hostile_reason, 1, scontrol_calls=1),
    Case("prolog: node ../../../../x", prolog("../../../../x", "7"), 0, max_lines=1),
    Case("prolog: job /../../../../x", prolog("n1", "/../../../../x"), 0, max_lines=1),
    Case("prolog: node with a newline", prolog("n1\nFAIL n2: forged", "7"), 0,
         max_lines=1),
    Case("prolog: node of 100 kB", prolog("a" * 100_000, "7"), 0, max_lines=1),
    Case("'nodes' given twice, the last []", forged_nodes, 2, max_lines=1),
    Case("n2 and N2", nodes_of([entry("n2"), entry("N2", "ACCEPTED")]), 2, max_lines=1),
    Case("verdict.json a socket", socket_verdict, 2, max_lines=1),
    Case("prolog: node of 253 characters", prolog("a" * 253, "7"), 0, max_lines=1),
    Case("prolog: its folder a link", prolog("gpu-001", "7", link=True), 0, max_lines=1),
    Case("a run path of 5,000 characters", lambda root: gate(root / ("x" * 5000)), 2,
         max_lines=1),
]


def scontrol(where: Path) -> tuple[dict[str, str], Path]:
    """A scontrol on PATH that counts its calls (one line each), and a sinfo that lists no
    node (this machine's may be a real one): (env, the count's file)."""
    (where / "bin").mkdir()
    calls = where / "scontrol.calls"
    fake = where / "bin" / "scontrol"
    fake.write_text(f"#!/bin/sh\necho x >>{calls}\n")
    fake.chmod(0o755)
    (where / "bin" / "sinfo").write_text("#!/bin/sh\nexit 0\n")
    (where / "bin" / "sinfo").chmod(0o755)
    return {**os.environ, "PATH": f"{where / 'bin'}:{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT)}, calls


def build(index: int, root: Path) -> list[str]:
    """The argv of case `index`, built under `root` by a process of its own."""
    done = subprocess.run([sys.executable, __file__, "--build", str(index), str(root)],
                          capture_output=True, text=True, check=True)
    argv: list[str] = json.loads(done.stdout)
    return argv


def outside(scratch: Path, tmp: Path) -> list[Path]:
    """What the cases wrote outside their own folders: beside tmp or above it, up to the
    scratch directory ('../../../../x' from a prolog's REPORTS lands there)."""
    inside = tmp.relative_to(scratch)
    folders = [scratch / part for part in (*reversed(inside.parents[:-1]), inside)]
    found = [p for parent, child in zip([scratch, *folders[:-1]], folders, strict=True)
             for p in parent.iterdir() if p != child]
    return found + [p for p in tmp.iterdir() if p.name != "bench" and not p.name.isdigit()]


def main() -> int:
    if sys.argv[1:2] == ["--build"]:
        root = Path(sys.argv[3])
        root.mkdir()
        print(json.dumps(CASES[int(sys.argv[2])].make(root)))
        return 0
    worst, worst_rss = 0.0, 0.0
    with tempfile.TemporaryDirectory(prefix="hostile-gate-") as scratch:
        tmp = Path(scratch) / "a" / "b" / "c"  # '../../../../x' from its reports stays here
        tmp.mkdir(parents=True)
        (tmp / "bench").mkdir()
        env, calls = scontrol(tmp / "bench")
        for index, case in enumerate(CASES):
            root = tmp / str(index)
            argv = build(index, root)
            calls.unlink(missing_ok=True)
            with (root / "out").open("wb") as sink:
                done = ended(argv, HANG_S, stdout=sink, stderr=subprocess.STDOUT, env=env,
                             cwd=root)
            said = (root / "out").read_bytes()
            drains = len(calls.read_text().splitlines()) if calls.exists() else 0
            strays = outside(Path(scratch), tmp)
            over = done.seconds >= LIMIT_S or done.rss_mib >= LIMIT_MIB
            lines = said.count(b"\n")
            print(f"{case.name:34s} exit {done.code} ({case.exit_code}) {done.seconds:5.2f} s "
                  f"({done.cpu_s:4.2f} CPU) {done.rss_mib:6.1f} MiB  {lines:6d} line(s) "
                  f"{len(said):8d} bytes  {drains} scontrol{'  OVER' if over else ''}"
                  f"{'  WROTE OUTSIDE: ' + str(strays) if strays else ''}", flush=True)
            wrong = done.code != case.exit_code or drains > case.scontrol_calls or \
                lines > case.max_lines or bool(strays) or \
                max(len(line) for line in said.split(b"\n")) > 2_000
            worst = math.nan if wrong or math.isnan(worst) else max(worst, done.seconds)
            worst_rss = max(worst_rss, done.rss_mib)
    print(f"hostile_gate_worst_s={worst:.2f}")
    print(f"hostile_gate_worst_rss_mib={worst_rss:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
