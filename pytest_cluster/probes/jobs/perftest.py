"""perftest rank program: one rail's bandwidth between nodes with perftest's ib_write_bw,
run by job_node on each node of a job like the collective benchmark (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT in the environment).

Rank 0 serves: one server after another, one for each other rank, on TCP port
MASTER_PORT + rank. Every other rank is a client of rank 0 (MASTER_ADDR) and tries until
its server listens (they take turns). Each rank prints one JSON line: its command line,
exit code and the end of its output; the controller reads the clients' bandwidth
(measure/network/perftest.py). The command line comes from the controller (`--argv`, a JSON
list without the server and port): its program must be a perftest bandwidth tool.

Stdlib only; sent as one source (with probes/_lib/command.py).
"""

from __future__ import annotations

import json
import os
import sys
import time

from .._lib.command import run_command

TOOLS = ("ib_write_bw",)
#: What a client says when its server does not listen yet (perftest_communication.c).
NOT_YET = ("Couldn't connect to", "Unable to open file descriptor for socket connection")


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
