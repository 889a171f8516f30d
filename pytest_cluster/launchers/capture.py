"""A launched command's stdout and stderr read within a bound: the node on the other end
is not ours to trust, and a probe printing 1.5 GB must cost a failed probe, not the
controller's memory.

Each stream is read in chunks by a thread of its own as the process writes it; at most
`limit` bytes are kept. The first byte past the limit calls `over` once (the launch is
stopped: nothing it prints after can count), and reading goes on, counting and dropping,
until the process closes the stream, so that it never blocks on a full pipe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import IO

CHUNK = 64 * 2**10


class Capture:
    """One stream of a process, read by a thread (start, then join)."""

    def __init__(self, name: str, pipe: IO[bytes], limit: int,
                 over: Callable[[], None]) -> None:
        self.name, self.limit = name, limit
        self.seen = 0
        self._pipe, self._over = pipe, over
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._read, daemon=True,
                                        name=f"pytest-cluster-{name}")

    def start(self) -> Capture:
        self._thread.start()
        return self

    def _read(self) -> None:
        """Read until the process closes the stream, then close our end (an end left
        open is a ResourceWarning, which a run under `-W error` turns into a failed case)."""
        kept = 0
        try:
            while chunk := self._pipe.read1(CHUNK) if hasattr(self._pipe, "read1") \
                    else self._pipe.read(CHUNK):
                self.seen += len(chunk)
                if kept < self.limit:
                    self._chunks.append(chunk[:self.limit - kept])
                    kept += len(self._chunks[-1])
                if self.seen > self.limit and self.seen - len(chunk) <= self.limit:
                    self._over()
        finally:
            self._pipe.close()

    def join(self, timeout_s: float | None = None) -> None:
        self._thread.join(timeout_s)

    @property
    def over(self) -> bool:
        return self.seen > self.limit

    @property
    def text(self) -> str:
        """What was kept, as text (bytes that are no UTF-8 replaced)."""
        return b"".join(self._chunks).decode("utf-8", errors="replace")

    def overflow(self, size: Callable[[float], str]) -> str:
        """'stdout: more than 16 MiB (1.5 GiB seen ...)' with sizes as `size` writes
        them, or '' when within the limit."""
        if not self.over:
            return ""
        return (f"{self.name}: more than {size(self.limit)} ({size(self.seen)} seen before "
                "it was stopped)")
