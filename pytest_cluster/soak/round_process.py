"""A soak round's child process held by the soak: while it starts, Ctrl-C and SIGTERM are
noted, not acted on (raised inside Popen, they would lose the child, which ran on alone);
once it runs, stopped the way a run is (SIGINT: it writes and seals what it has), then
SIGTERM, then killed, each after its grace."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

#: How long a stopped round may take to write and seal its evidence, then how long after
#: SIGTERM, before it is killed.
STOP_GRACE_S = (120.0, 30.0)


@contextlib.contextmanager
def noting_signals() -> Iterator[list[int]]:
    """For the block, SIGINT and SIGTERM are noted (in the list yielded), not acted on;
    their handlers are back after it, for the caller to raise what was noted
    (signal.raise_signal). One ignored stays ignored. Main thread only, as handlers are."""
    noted: list[int] = []
    before: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if handler in (signal.SIG_IGN, None):
            continue
        before[sig] = handler
        signal.signal(sig, lambda signum, _frame: noted.append(signum))
    try:
        yield noted
    finally:
        for held, handler in before.items():
            signal.signal(held, handler)


def stop_round(child: subprocess.Popen[bytes]) -> None:
    """A round stopped the way a run is (SIGINT: it writes and seals what it has), then
    SIGTERM, then killed, each after its grace; a further Ctrl-C or SIGTERM to the soak
    meanwhile moves on to the next at once (the round never outlives the soak)."""
    for sig, grace in ((signal.SIGINT, STOP_GRACE_S[0]), (signal.SIGTERM, STOP_GRACE_S[1]),
                       (signal.SIGKILL, 10.0)):
        if child.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(sig)
        with contextlib.suppress(subprocess.TimeoutExpired, KeyboardInterrupt):
            child.wait(timeout=grace)
            return
