"""Hostile text for every parser of untrusted text (issue 38: linear time on every input):
how long each takes on its worst 1 MB input, and how much memory.

Each parser runs in a process of its own (`--parser NAME`) over every input of
tests/test_linear_time.py (INPUTS: escaped quotes, `via via via`, repeated markers, deep
brackets, digit and blank runs, a wide header, many rows, srun labels), so its peak RSS is
its own (os.wait4) and one that hangs is killed after HANG_S. Then `pytest-cluster verify`
as a user runs it, on manifests of '"' followed by escaped quotes: 80 kB (16 s before the
fix), 800 kB (past 60 s) and 64 MiB (the most a manifest may be).

Prints per case: the worst input and its CPU seconds, the process's peak RSS in MiB. Every
case must stay under 2 s and 512 MiB. Ends with `worst_parser_s=<the slowest case>`, or
`nan` when a case went over either limit, hung or failed.
"""

from __future__ import annotations

import contextlib
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from child import ended

ROOT = Path(__file__).resolve().parent.parent
HANG_S = 120  # a case still running then is killed and reported as hung
LIMIT_S = 2.0
LIMIT_MIB = 512.0
#: The verify cases: (name, how many escaped quotes follow the opening one).
MANIFESTS = (("verify, 80 kB of escaped quotes", 40_000),
             ("verify, 800 kB of escaped quotes", 400_000),
             ("verify, 64 MiB of escaped quotes", (64 << 20) // 2 - 1))


def parsers() -> list[str]:
    """The parsers tests/test_linear_time.py feeds (imported in a child: the bench's own
    process stays small, as a child's peak RSS counts what it was forked from)."""
    done = subprocess.run([sys.executable, __file__, "--list"], capture_output=True,
                          text=True, check=True, cwd=ROOT)
    names: list[str] = json.loads(done.stdout)
    return names


def one_parser(name: str) -> dict[str, object]:
    """In the child: parser `name` over every input, (the worst input, its CPU seconds)."""
    sys.path.insert(0, str(ROOT))
    from tests.test_linear_time import INPUTS, PARSERS  # noqa: PLC0415

    function, refusals = PARSERS[name]
    seconds = {}
    for label, text in INPUTS.items():
        started = time.process_time()
        with contextlib.suppress(*refusals):
            function(text)
        seconds[label] = time.process_time() - started
    worst = max(seconds, key=lambda label: seconds[label])
    return {"input": worst, "seconds": seconds[worst]}


def run(argv: list[str]) -> tuple[int | None, float, float, str]:
    """(exit code or None when hung, CPU seconds, peak RSS in MiB, stdout) of a child."""
    with tempfile.TemporaryFile() as sink:
        done = ended([sys.executable, *argv], HANG_S, stdout=sink,
                     stderr=subprocess.STDOUT, cwd=ROOT)
        sink.seek(0)
        out = sink.read().decode(errors="replace")
    return done.code, done.cpu_s, done.rss_mib, out


def manifest(root: Path, quotes: int) -> Path:
    run_dir = root / f"run-{quotes}"
    run_dir.mkdir()
    (run_dir / "manifest.intoto.json").write_bytes(b'"' + b'\\"' * quotes)
    return run_dir


def main() -> int:
    if sys.argv[1:2] == ["--list"]:
        sys.path.insert(0, str(ROOT))
        from tests.test_linear_time import PARSERS  # noqa: PLC0415
        print(json.dumps(sorted(PARSERS)))
        return 0
    if sys.argv[1:2] == ["--parser"]:
        print(json.dumps(one_parser(sys.argv[2])))
        return 0
    worst = 0.0
    for name in parsers():
        code, _, rss, out = run([__file__, "--parser", name])
        found = json.loads(out.splitlines()[-1]) if code == 0 and out.strip() else {}
        seconds = float(found.get("seconds", math.nan))
        print(f"{name:38s} worst on {found.get('input', 'hung or failed')!s:26s} "
              f"{seconds:6.3f} s  {rss:7.1f} MiB", flush=True)
        worst = _worst(worst, seconds, rss)
    with tempfile.TemporaryDirectory(prefix="hostile-parsers-") as tmp:
        for name, quotes in MANIFESTS:
            run_dir = manifest(Path(tmp), quotes)
            code, seconds, rss, out = run(["-m", "pytest_cluster.cli", "verify", str(run_dir)])
            print(f"{name:65s} exit {code} (2)  {seconds:6.3f} s  {rss:7.1f} MiB", flush=True)
            worst = _worst(worst, seconds if code == 2 else math.nan, rss)
            (run_dir / "manifest.intoto.json").unlink()
    print(f"worst_parser_s={worst:.3f}")
    return 0


def _worst(worst: float, seconds: float, rss: float) -> float:
    """The slowest case so far; nan once a case is over a limit or did not finish."""
    if math.isnan(worst) or math.isnan(seconds) or seconds >= LIMIT_S or rss >= LIMIT_MIB:
        return math.nan
    return max(worst, seconds)


if __name__ == "__main__":
    sys.exit(main())
