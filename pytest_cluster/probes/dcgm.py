"""DCGM diagnostic probe: runs `dcgmi diag -r LEVEL -j` on this node, within a time limit,
and hands back the JSON document dcgmi printed (the controller classifies it:
measure/dcgm_diag.py), or what happened instead.

Runs ON a node with only the standard library; shipped as one source (with
probes/_lib/command.py). The command line is a list built from a number, never a shell
string. dcgmi not installed: `missing` says so (the case is NOT CHECKED, never a failure);
a timeout, output that is no JSON, a nonzero exit without JSON: `error` names it.

    python3 dcgm.py --level 2 --timeout 900
"""

from __future__ import annotations

import getopt
import json
import shutil
import sys
import time
from typing import Any, TypedDict

from ._lib.command import MAX_STDOUT, run_command

#: The levels dcgmi diag runs (-r 1..4).
LEVELS = (1, 2, 3, 4)


class DcgmData(TypedDict, total=False):
    """The probe's payload: the level asked, the command run, its exit code and seconds,
    the document dcgmi printed (`report`), or why there is none (`error`; `missing`: the
    program not installed)."""

    level: int
    argv: list[str]
    exit_code: int | str
    seconds: float
    stderr_tail: str
    report: Any
    error: str
    missing: str


def diag_command(dcgmi: str, level: int) -> list[str]:
    """dcgmi's command line for a diagnostic at `level`, with JSON output."""
    if level not in LEVELS:
        raise ValueError(f"DCGM diagnostic level {level!r}: expected one of {LEVELS}")
    return [dcgmi, "diag", "-r", str(level), "-j"]


def parse_report(stdout: str) -> tuple[Any, str]:
    """The JSON document dcgmi printed, or why there is none ('' when there is one). It
    may print a line before its document: the document starts at its first '{'."""
    text = stdout.strip()
    start = text.find("{")
    if not text:
        return None, "dcgmi printed nothing"
    if start < 0:
        return None, f"dcgmi printed no JSON: {text[:200]!r}"
    try:
        return json.loads(text[start:]), ""
    except RecursionError:
        return None, "dcgmi's JSON is nested too deeply to read"
    except ValueError as exc:
        cut = " (its output was cut at the probe's limit)" if len(stdout) >= MAX_STDOUT else ""
        return None, f"dcgmi's output is not JSON{cut}: {exc}"


def measure(level: int, timeout_s: float) -> DcgmData:
    found = shutil.which("dcgmi")
    if found is None:
        return {"level": level, "missing": "dcgmi",
                "error": "dcgmi not installed (DCGM, datacenter-gpu-manager): not on PATH"}
    argv = diag_command(found, level)
    start = time.monotonic()
    run = run_command(argv, timeout_s)
    data: DcgmData = {"level": level, "argv": argv, "exit_code": run["exit_code"],
                      "seconds": round(time.monotonic() - start, 3),
                      "stderr_tail": run["stderr_tail"]}
    code = run["exit_code"]
    if code == "not_found":
        data["missing"] = "dcgmi"
        data["error"] = f"dcgmi could not be started: {run['stderr_tail'][:200]}"
        return data
    if code == "timeout":
        data["error"] = (f"dcgmi diag -r {level} did not finish within {timeout_s:g} s "
                         "(the level's time limit): stopped")
        return data
    report, why = parse_report(run["stdout"])
    if why:  # a nonzero exit with JSON is dcgmi's verdict: its document says which test
        said = f" (exit code {code}: {run['stderr_tail'][-300:].strip()})" if code else ""
        data["error"] = why + said
        return data
    data["report"] = report
    return data


def main(args: list[str] | None = None) -> int:
    opts, _ = getopt.getopt(sys.argv[1:] if args is None else args, "",
                            ["level=", "timeout="])
    given = dict(opts)
    level = int(given.get("--level", "1"))
    timeout_s = float(given.get("--timeout", "600"))
    print(json.dumps({"probe": "dcgm", "schema": 1, "data": measure(level, timeout_s)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
