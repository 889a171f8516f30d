"""A bench's child process, run to its end and measured: its exit code (None when it was
killed as hung), its wall-clock and CPU seconds and its own peak RSS. The peak is the
child's (os.wait4 reaps it and reads its rusage), never the bench's; a child still running
after `hang_s` is killed."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Ended:
    code: int | None  # None: killed (hung, or by a signal)
    seconds: float  # wall clock, start to exit
    cpu_s: float  # user + system
    rss_mib: float  # its own peak resident set


def ended(argv: list[str], hang_s: float | None = None, **popen: Any) -> Ended:
    """Run argv (Popen's keywords: cwd, env, stdin, stdout, stderr) to its end."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, **popen)
    timer = threading.Timer(hang_s, child.kill) if hang_s is not None else None
    if timer is not None:
        timer.start()
    try:
        _, status, usage = os.wait4(child.pid, 0)
    finally:
        if timer is not None:
            timer.cancel()
    seconds = time.perf_counter() - started
    child.returncode = code = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return Ended(None if code < 0 else code, seconds, usage.ru_utime + usage.ru_stime,
                 usage.ru_maxrss / 1024)  # ru_maxrss: KiB on Linux
