"""Import-latency probe: how long a fresh interpreter takes to `import torch`.

Runs ON a node with only the standard library; shipped as a single file. Runs
`PYTHON -c "import MODULE"` a few times (warm: the page cache may hold the files) and,
when asked and allowed (root), once after dropping the page cache (cold).

It writes no file: no copy of the interpreter or its packages, nothing under --path (the
cold run drops the page cache instead). The interpreter it starts may write `__pycache__`
bytecode next to modules that have none yet, as any `import torch` there would; it is not
run with -B, which would time compiling every module instead of loading it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from typing import TypedDict


class Cold(TypedDict, total=False):
    """One import with the page cache dropped first, or why it was not tried."""

    seconds: float | None
    error: str | None
    method: str
    skipped: str


class Warm(TypedDict):
    runs_s: list[float]
    min_s: float
    median_s: float
    max_s: float


class ImportLatencyData(TypedDict, total=False):
    """The probe's payload: the interpreter asked for and the one found, whether it is on
    the filesystem tested, the command timed, its cold and warm runs, or the error."""

    python: str
    python_resolved: str | None
    module: str
    python_on_path: bool
    error: str
    command: list[str]
    cold: Cold
    warm: Warm

DROP_CACHES = "/proc/sys/vm/drop_caches"


def import_command(python: str, module: str) -> list[str]:
    return [python, "-c", f"import {module}"]


def not_found(python: str) -> str:
    """Why `python` cannot run here; a bare name says which PATH was searched."""
    where = "" if os.sep in python else f" (PATH={os.environ.get('PATH', '')})"
    return f"interpreter {python!r} not found on this node{where}"


def timed_run(command: list[str], timeout: float) -> tuple[float, str | None]:
    """Seconds the command took, and an error text if it failed."""
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd="/", check=False)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, f"did not finish within {timeout:g} s"
    except OSError as exc:
        return time.perf_counter() - start, f"cannot run {command[0]}: {exc.strerror}"
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return seconds, tail[0][:500]
    return seconds, None


def drop_caches() -> str | None:
    """Drop the page cache; the reason it could not be done, or None."""
    if os.geteuid() != 0:
        return "not root: the page cache cannot be dropped, so no cold run"
    try:
        os.sync()
        with open(DROP_CACHES, "w", encoding="ascii") as handle:
            handle.write("3\n")
    except OSError as exc:
        return f"cannot drop the page cache ({DROP_CACHES}: {exc.strerror})"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--python", required=True)
    parser.add_argument("--module", default="torch")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cold", action="store_true")
    parser.add_argument("--path", default=None, help="the filesystem the interpreter should be on")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    found = shutil.which(args.python)
    # abspath, not realpath: a venv's bin/python links to the base interpreter, and the
    # venv's path is the one that says which packages it imports
    resolved = os.path.abspath(found) if found else None
    data: ImportLatencyData = {
        "python": args.python,
        "python_resolved": resolved,
        "module": args.module,
    }
    if args.path and resolved:
        prefix = os.path.abspath(args.path).rstrip("/") + "/"
        data["python_on_path"] = resolved.startswith(prefix)
    if resolved is None:
        data["error"] = not_found(args.python)
        print(json.dumps({"probe": "import_latency", "schema": 1, "data": data}))
        return 0
    command = import_command(resolved, args.module)
    data["command"] = command
    if args.cold:
        reason = drop_caches()
        if reason is None:
            seconds, error = timed_run(command, args.timeout)
            data["cold"] = {"seconds": seconds, "error": error,
                            "method": "page cache dropped (echo 3 > /proc/sys/vm/drop_caches)"}
        else:
            data["cold"] = {"skipped": reason}
    warm: list[float] = []
    for _ in range(args.repeats):
        seconds, error = timed_run(command, args.timeout)
        if error is not None:
            data["error"] = f"{shlex.join(command)} failed: {error}"
            break
        warm.append(seconds)
    if warm:
        data["warm"] = {"runs_s": warm, "min_s": min(warm), "median_s": statistics.median(warm),
                        "max_s": max(warm)}
    print(json.dumps({"probe": "import_latency", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
