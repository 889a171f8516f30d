"""perftest rank program: one rail's bandwidth between nodes with perftest's ib_write_bw,
run by job_node on each node of a job like the collective benchmark (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT in the environment).

Rank 0 serves: one server after another, one for each other rank, on TCP port
MASTER_PORT + rank. Every other rank is a client of rank 0 (MASTER_ADDR) and tries until
its server listens (they take turns). Each rank prints one JSON line: its command line,
exit code and the end of its output; the controller reads the clients' bandwidth
(measure/perftest.py). The command line comes from the controller (`--argv`, a JSON
list without the server and port): its program must be a perftest bandwidth tool.

Stdlib only; sent as a single file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import TypedDict

TOOLS = ("ib_write_bw",)
#: What a client says when its server does not listen yet (perftest_communication.c).
NOT_YET = ("Couldn't connect to", "Unable to open file descriptor for socket connection")
MAX_STDOUT = 256 * 1024


class Run(TypedDict):
    """One run of the tool: its command line, exit code (or "timeout", "not_found") and
    the end of what it printed."""

    argv: list[str]
    exit_code: int | str
    stdout: str
    stderr_tail: str


def run_command(line: list[str], timeout_s: float) -> Run:
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


def main(args: list[str]) -> int:
    options = dict(zip(args[::2], args[1::2], strict=False))
    base = json.loads(options.get("--argv", "[]"))
    seconds = float(options.get("--seconds", "5"))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    port = int(os.environ["MASTER_PORT"])
    wait_s = float(os.environ.get("PYTEST_CLUSTER_INIT_TIMEOUT", "60"))
    if not isinstance(base, list) or not base or base[0] not in TOOLS \
            or not all(isinstance(a, str) for a in base):
        print(json.dumps({"rank": rank, "exit_code": "bad_argv",
                          "stderr_tail": f"not a perftest command line: {base!r}"[:400]}))
        return 2
    tool = base[0]
    each_s = seconds + wait_s  # one client's turn, at most
    if rank == 0:
        served = [run_command([*base, "-p", str(port + client)], each_s + 30)
                  for client in range(1, world)]
        failed = next((s for s in served if s["exit_code"] != 0), None)
        print(json.dumps({"rank": 0, "role": "server", "tool": tool, "clients": world - 1,
                          **(failed or {"exit_code": 0})}))
        return 0
    deadline = time.monotonic() + rank * (each_s + 30)
    line = [*base, "-p", str(port + rank), os.environ["MASTER_ADDR"]]
    while True:
        result = run_command(line, each_s + 30)
        waiting = result["exit_code"] != 0 and any(
            text in result["stderr_tail"] for text in NOT_YET)
        if not waiting or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    print(json.dumps({"rank": rank, "role": "client", "tool": tool, **result}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
