"""A tool run to its end, or to a time limit, and the end of what it printed (nccl-tests'
binaries, perftest's)."""

from __future__ import annotations

import subprocess
from typing import TypedDict

#: The most of a tool's stdout kept (its end: where its results are).
MAX_STDOUT = 256 * 1024


class CommandRun(TypedDict):
    """One run of a tool: its command line, exit code (or "timeout", "not_found") and the
    end of what it printed."""

    argv: list[str]
    exit_code: int | str
    stdout: str
    stderr_tail: str


def run_command(line: list[str], timeout_s: float) -> CommandRun:
    """Run a program: its command line, exit code (or "timeout", "not_found") and the end
    of what it printed."""
    try:
        done = subprocess.run(line, capture_output=True, timeout=timeout_s, check=False,
                              stdin=subprocess.DEVNULL)
        code: int | str = done.returncode
        stdout, stderr = done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        code, stdout, stderr = "timeout", exc.stdout or b"", exc.stderr or b""
    except OSError as exc:
        code, stdout, stderr = "not_found", b"", str(exc).encode()
    return {"argv": line, "exit_code": code,
            "stdout": stdout.decode(errors="replace")[-MAX_STDOUT:],
            "stderr_tail": stderr.decode(errors="replace")[-2000:]}
