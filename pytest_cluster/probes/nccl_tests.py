"""nccl-tests probe: runs one of nccl-tests' binaries on this node, every GPU of the job in
one process (`-g N`), and hands back what it printed (its table) and wrote (its `-J` JSON
file, 2.17 on); the controller reads both (measure/network/nccl_tests.py).

Runs ON a node with only the standard library; shipped as one source (with
probes/_lib/command.py). The binary is one of BINARIES in the folder `--dir` names; its
arguments are built here from numbers, never from text. The JSON file's `env` (the whole
environment, secrets included) is never sent back: the file is parsed here, `env` dropped,
and a file that does not parse is left out (the table remains).

    python3 nccl_tests.py --dir /opt/nccl-tests/build --binary all_reduce_perf \\
        --sizes 1048576,4194304 --gpus 8 --warmup 5 --iterations 20 --timeout 600
"""

from __future__ import annotations

import getopt
import json
import os
import re
import subprocess
import sys
import tempfile
from typing import TypedDict

from ._lib.command import CommandRun, run_command

#: The binaries nccl-tests builds that this probe runs.
BINARIES = ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf",
            "broadcast_perf", "reduce_perf", "sendrecv_perf")
#: The binary that measures each collective a spec may name.
COLLECTIVE_BINARY = {"all_reduce": "all_reduce_perf", "all_gather": "all_gather_perf",
                     "reduce_scatter": "reduce_scatter_perf", "alltoall": "alltoall_perf"}
MAX_JSON = 4 * 2**20
_BARE = re.compile(r"(?<=[:\[,])(\s*)(-?inf|-?nan)(?=\s*[,\]}])")


class Run(CommandRun):
    """One run of the binary, with what it wrote to its JSON file (kept_json), if any."""

    json: str | None


class NcclTestsData(TypedDict, total=False):
    """The probe's payload: the binary and its runs, or why none ran (`error`)."""

    binary: str
    json_output: bool  # the binary writes -J files (2.17 on)
    runs: list[Run]
    error: str


def runs(sizes: list[int]) -> list[tuple[int, int]]:
    """(first, last) payload of each run: one run doubling from the smallest payload to
    the largest (-f 2) covers every payload that is the smallest times a power of 2; each
    other payload runs alone."""
    low = min(sizes)
    on_grid = [s for s in sizes if s % low == 0 and (s // low) & (s // low - 1) == 0]
    found = [(low, max(on_grid))]
    found += [(s, s) for s in sorted(set(sizes) - set(on_grid))]
    return found


def argv(path: str, first: int, last: int, gpus: int, warmup: int, iterations: int,
         json_file: str | None) -> list[str]:
    """The command line of one run: payloads doubling from `first` to `last`, `gpus` GPUs
    in this process, results checked (-c 1), and the JSON file where the binary writes one."""
    line = [path, "-b", str(first), "-e", str(last), "-f", "2", "-g", str(gpus),
            "-w", str(warmup), "-n", str(iterations), "-c", "1"]
    return [*line, "-J", json_file] if json_file else line


def writes_json(path: str) -> bool:
    """Whether the binary knows -J (2.17 on): its help names it."""
    try:
        done = subprocess.run([path, "-h"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    text = (done.stdout + done.stderr).decode(errors="replace")
    return "output_file" in text


def kept_json(path: str) -> str | None:
    """The JSON file's text without its `env`; None when it is missing, too large or not
    JSON (its table is read instead)."""
    try:
        if os.path.getsize(path) > MAX_JSON:
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            data = json.loads(_BARE.sub(r'\1"\2"', handle.read()))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    data.pop("env", None)
    return json.dumps(data)


def run_one(line: list[str], timeout_s: float, json_file: str | None) -> Run:
    """One run of the binary, with what it wrote to its JSON file (its env dropped)."""
    return {**run_command(line, timeout_s),
            "json": kept_json(json_file) if json_file else None}


def measure(options: dict[str, str]) -> NcclTestsData:
    binary = options.get("--binary", "")
    if binary not in BINARIES:
        return {"error": f"not a binary of nccl-tests this probe runs: {binary[:64]!r}"}
    path = os.path.join(options.get("--dir", ""), binary)
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        return {"error": f"no executable {path} on this node (build nccl-tests there, "
                         f"`make -C nccl-tests`, or set interconnect.nccl_tests)"}
    sizes = [int(s) for s in options.get("--sizes", "").split(",") if s.strip()]
    if not sizes or min(sizes) < 1:
        return {"error": "no payload to run"}
    gpus, warmup = int(options.get("--gpus", "1")), int(options.get("--warmup", "5"))
    iterations, timeout_s = int(options.get("--iterations", "20")), \
        float(options.get("--timeout", "600"))
    json_ok = writes_json(path)
    found: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="pc-nccl-tests-") as folder:
        for index, (first, last) in enumerate(runs(sizes)):
            json_file = os.path.join(folder, f"run{index}.json") if json_ok else None
            found.append(run_one(argv(path, first, last, gpus, warmup, iterations, json_file),
                                 timeout_s, json_file))
            if found[-1]["exit_code"] != 0:
                break
    return {"binary": path, "json_output": json_ok, "runs": found}


def main(args: list[str] | None = None) -> int:
    opts, _ = getopt.getopt(sys.argv[1:] if args is None else args, "",
                            ["dir=", "binary=", "sizes=", "gpus=", "warmup=", "iterations=",
                             "timeout="])
    print(json.dumps({"probe": "nccl_tests", "schema": 1, "data": measure(dict(opts))}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
