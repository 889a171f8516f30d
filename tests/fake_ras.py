"""A fake NCCL RAS service for the tests: a thread on a free localhost port that speaks the
client protocol as NVIDIA/nccl's src/ras/client_support.cc answers it (commit
5067397c2676d5aed50042fc39e5c8ee96eb0027): one command a line, case-insensitive;
`CLIENT PROTOCOL <n>` answered `SERVER PROTOCOL 2`; `TIMEOUT <s>` answered `OK` (or
`ERROR: Invalid timeout value ...`); `SET FORMAT text|json` answered `OK` (a server older
than 2.28.7 answers `ERROR: Unknown command ...`); `STATUS` and `VERBOSE STATUS` answered
with the whole report, then the connection closed; anything else `ERROR: Unknown command`.

Its report texts are ours, written in the shapes that file prints (TEXT_DEAD) and its
JSON writer (sim/nccl_ras.status_json writes one). `hello`, `silent` and `extra` make it
hostile: another handshake, no answer at all, bytes after the report."""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType

#: A text status of a 32-rank job on 4 nodes: rank 17's process dead, rank 18 missing and
#: behind on AllGather (the lines as client_support.cc prints them; numbers ours).
TEXT_DEAD = """\
NCCL version 2.26.2+cuda12.4 compiled with CUDA 12.4
CUDA runtime version 12040, driver version 12040

Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      4          8            1         32       32

Gathering data about the RAS network (timeout 5s)... obtained a result in 0.002s

Gathering data about the NCCL communicators (timeout 5s)... (2.051s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         4       7-8        32        32   RUNNING  INCOMPLETE,MISMATCH

Errors
======

DEAD
  1 job process is considered dead (unreachable via the RAS network)
  Process 3487984 on node 172.16.64.213 managing GPU 1

#0-0 (cf264af53edbe986) INCOMPLETE
  Missing communicator data from 2 ranks
  Rank 17 -- GPU 1 managed by process 3487984 on node 172.16.64.213
  Rank 18 -- GPU 2 managed by process 3487985 on node 172.16.64.213

Warnings
========

TIMEOUT
  Encountered 2 communication timeouts while gathering communicator data

#0-0 (cf264af53edbe986) MISMATCH
  Communicator ranks have different AllGather operation counts
  29 ranks have launched up to operation 6650
  Rank 18 has launched up to operation 6649 -- GPU 2 managed by process 3487985 on node \
172.16.64.213

"""


class FakeRas:
    """The service, started by `with FakeRas(...) as ras:` (`ras.addr` for NCCL_RAS_ADDR);
    `commands`: what clients sent, in order."""

    def __init__(self, json_text: str = "", text: str = TEXT_DEAD, *, knows_json: bool = True,
                 hello: str = "SERVER PROTOCOL 2", silent: bool = False,
                 extra: bytes = b"") -> None:
        self.json_text, self.text, self.knows_json = json_text, text, knows_json
        self.hello, self.silent, self.extra = hello, silent, extra
        self.commands: list[str] = []
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(8)
        self._listener.settimeout(0.05)
        self.addr = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> FakeRas:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            with conn, contextlib.suppress(OSError):
                self._talk(conn)

    def _talk(self, conn: socket.socket) -> None:
        conn.settimeout(0.05)
        fmt, buffer = "text", b""
        while not self._stop.is_set():
            try:
                chunk = conn.recv(4096)
            except TimeoutError:
                continue
            if not chunk:
                return
            buffer += chunk
            while b"\n" in buffer:
                raw, _, buffer = buffer.partition(b"\n")
                command = raw.decode().rstrip("\r")
                self.commands.append(command)
                if self.silent:
                    continue
                answer, fmt, done = self._answer(command, fmt)
                conn.sendall(answer.encode() + (self.extra if done else b""))
                if done:
                    return

    def _answer(self, command: str, fmt: str) -> tuple[str, str, bool]:
        """(what the server says, the format from now on, whether it then closes)."""
        lower = command.lower()
        if lower.startswith("client protocol "):
            return f"{self.hello}\n", fmt, False
        if lower.startswith("timeout "):
            value = command[len("timeout "):]
            ok = value.isdigit()
            return ("OK\n" if ok else f"ERROR: Invalid timeout value {value}\n"), fmt, False
        if lower.startswith("set format ") and self.knows_json:
            wanted = lower[len("set format "):]
            if wanted in ("text", "json"):
                return "OK\n", wanted, False
            return f"ERROR: Invalid format {wanted}\n", fmt, False
        if lower in ("status", "verbose status"):
            return (self.json_text if fmt == "json" else self.text), fmt, True
        return f"ERROR: Unknown command {command}\n", fmt, False
