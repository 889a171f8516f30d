"""Hostile evidence: how long `pytest-cluster verify` takes on each, how much memory, how
much it prints.

The aim (issue 25): whatever the other side hands over, verify ends within seconds, in
bounded memory, with a bounded output and a documented exit code (0 files match, 1 they do
not or the signature asked for is not there, 2 not a manifest it reads). Each case runs as
a user's does, `python -m pytest_cluster.cli verify DIR` in a fresh process, so the time
includes the interpreter's start-up; the peak RSS is that process's own (os.wait4). Each
case is built by a process of its own first, so that the bench's process, which starts
verify, stays small (a child's peak RSS counts what it was forked from).

Cases (CASES, a list: add baseline and option cases to it): an ordinary run of 100 files;
a manifest with a 150 MB field (refused unread) and one with a 40 MB field (read, echoed
cut); 200,000 nested `[`; 64 MiB of `[` (the depth scan's worst); a run of 100,000 files;
`probes` a link to /etc with a subject `probes/shadow` (the hash oracle).

Prints per case: exit code (expected), seconds, peak RSS in MiB, bytes of output. Ends with
`hostile_evidence_worst_s=<the longest case>`, or `nan` when a case did not exit as expected.
"""

from __future__ import annotations

import base64
import json
import math
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from child import ended

MANIFEST = "manifest.intoto.json"
HANG_S = 300  # a case still running then is killed and reported as hung
PREDICATE = {"cluster": "bench", "started_at": "2026-11-23T10:00:00Z",
             "ended_at": "2026-11-23T10:05:00Z", "controller": "login1"}


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[Path], list[str]]  # builds the case under a scratch directory: argv
    exit_code: int  # what verify must exit with


def files(run: Path, count: int) -> Path:
    """A sealed run directory of `count` small files, 1,000 a directory."""
    # only where cases are built: the bench's own process stays small (see above)
    from pytest_cluster.evidence.bundle.manifest import seal  # noqa: PLC0415
    for index in range(count):
        folder = run / f"d{index // 1000:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index:06d}.json").write_text(f'{{"n": {index}}}\n')
    seal(run, PREDICATE, [])
    return run


def ordinary(root: Path) -> list[str]:
    return [str(files(root / "run", 100))]


def field(size: int) -> Callable[[Path], list[str]]:
    def make(root: Path) -> list[str]:
        from pytest_cluster.evidence.bundle.manifest import seal  # noqa: PLC0415
        run = files(root / "run", 10)
        seal(run, {**PREDICATE, "cluster": "x" * size}, [])
        return [str(run)]
    return make


def brackets(count: int) -> Callable[[Path], list[str]]:
    """A manifest of `count` '[' (made where the case is built, not in the bench's process)."""
    def make(root: Path) -> list[str]:
        run = root / "run"
        run.mkdir()
        (run / MANIFEST).write_bytes(b"[" * count)
        return [str(run)]
    return make


def oracle(root: Path) -> list[str]:
    run = files(root / "run", 10)
    envelope = json.loads((run / MANIFEST).read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["subject"].append({"name": "probes/shadow", "digest": {"sha256": "0" * 64},
                                 "annotations": {"size": 1}})
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    (run / MANIFEST).write_text(json.dumps(envelope))
    (run / "probes").symlink_to("/etc")
    return [str(run)]


CASES = [
    Case("ordinary run, 100 files", ordinary, 0),
    Case("150 MB field", field(150_000_000), 2),
    Case("40 MB field", field(40_000_000), 0),
    Case("200,000 nested [", brackets(200_000), 2),
    Case("64 MiB of [", brackets(64 << 20), 2),
    Case("100,000 files", lambda root: [str(files(root / "run", 100_000))], 0),
    Case("probes -> /etc, probes/shadow", oracle, 1),
]


def run(argv: list[str], out: Path) -> tuple[int | None, float, float]:
    """(exit code or None when hung, seconds, peak RSS in MiB) of one verify."""
    with out.open("wb") as sink:
        done = ended([sys.executable, "-m", "pytest_cluster.cli", "verify", *argv], HANG_S,
                     stdout=sink, stderr=subprocess.STDOUT)
    return done.code, done.seconds, done.rss_mib


def build(index: int, root: Path) -> list[str]:
    """The argv of case `index`, built under `root` by a process of its own."""
    done = subprocess.run([sys.executable, __file__, "--build", str(index), str(root)],
                          capture_output=True, text=True, check=True)
    argv: list[str] = json.loads(done.stdout)
    return argv


def main() -> int:
    if sys.argv[1:2] == ["--build"]:
        root = Path(sys.argv[3])
        root.mkdir()
        print(json.dumps(CASES[int(sys.argv[2])].make(root)))
        return 0
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="hostile-evidence-") as tmp:
        for index, case in enumerate(CASES):
            root = Path(tmp) / str(index)
            argv = build(index, root)
            code, seconds, rss = run(argv, root / "out")
            printed = (root / "out").stat().st_size
            print(f"{case.name:32s} exit {code} ({case.exit_code})  {seconds:6.2f} s  "
                  f"{rss:7.1f} MiB  {printed:6d} bytes of output", flush=True)
            worst = math.nan if code != case.exit_code or math.isnan(worst) \
                else max(worst, seconds)
    print(f"hostile_evidence_worst_s={worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
