"""One node's part of a distributed job: start its ranks with the torch.distributed
environment, bound them by a wall-clock limit, and report every rank's result.

`--whereami` only reports the addresses others can reach this node on (for MASTER_ADDR).
Otherwise the rank program (base64 in --program) runs as RANKS_PER_NODE processes with
MASTER_ADDR/PORT, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK and
PYTEST_CLUSTER_INIT_TIMEOUT (pass it to init_process_group(timeout=...)); the socket
interface toward MASTER_ADDR is given to gloo and NCCL unless already set. The last stdout
line of a rank that is a JSON object is its result. When one rank fails, or the wall
clock runs out, this node's other ranks are killed. Each rank runs in a session of its own
(killed with whatever it started); they never outlive this process: SIGTERM, SIGHUP or
SIGINT here (the node runner ending the probe, scancel) ends them before it exits (SIGTERM,
then SIGKILL RANK_GRACE_S later: a checkpoint writer removes its partial file), and
should it be SIGKILLed they get SIGKILL from the kernel (PR_SET_PDEATHSIG, Linux).

With `--stall-timeout S` (above 0) every rank gets PYTEST_CLUSTER_PROGRESS, the path of a
small JSON file it rewrites with its progress and a heartbeat (probes/train.py does).
The file is made here when the rank is started (step -1, phase "start", beat: the start),
so a rank is known from its start: one whose file has not been written for S seconds,
since its start or since its last beat, is stopped or frozen (SIGSTOP, a hung node
process), in rendezvous or init as well as in its steps: it is killed (exit_code
"stalled"), since it will not end by itself and its peers' own watchdogs end theirs. Every
rank's last progress is reported with it, how long before its end it last changed phase
and last beat, and the longest silence seen over its run (`longest_silent_s`). A rank may
also write its step times to the same path + ".steps" (read back bounded, reported as
`steps`): a run ended by the wall clock keeps the steps that ran. The progress files go
with the job however it ends (SIGTERM, SIGHUP, SIGINT included). Standard library only.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from typing import IO, Any, TypedDict, cast

SIOCGIFADDR = 0x8915
PR_SET_PDEATHSIG = 1
#: The ranks started so far, and the progress folder, for the signal handler.
_RANKS: list[subprocess.Popen[bytes]] = []
_PROGRESS_DIRS: list[str] = []
#: The most of a rank's progress (or steps) file read back: a rank's bytes are not trusted.
MAX_PROGRESS_BYTES = 1 << 20


class WhereAmI(TypedDict):
    """`--whereami`: the addresses others can reach this node on, and its name."""

    addresses: list[str]
    hostname: str


class Progress(TypedDict, total=False):
    """A rank's last progress as its file says it (start_progress, probes/train.py), with
    how long before its end it entered that phase and last beat (read_progress)."""

    rank: int
    step: int  # -1 before its steps
    phase: str
    since: float  # when it entered the phase (epoch seconds)
    beat: float  # its last heartbeat
    phase_s: float
    silent_s: float


class _RankEntry(TypedDict):
    rank: int
    local_rank: int
    exit_code: int | str | None  # its own, or "stalled", "killed" (by its node)
    ended_at: float | None
    data: Mapping[str, Any] | None  # the last JSON object it printed (its program's own)
    stderr_tail: str


class RankEntry(_RankEntry, total=False):
    """One rank's result as its node reports it; with a stall timeout, its progress, its
    longest silence and its steps file (what probes/train.py wrote of its steps)."""

    progress: Progress | None
    longest_silent_s: float
    steps: Mapping[str, Any] | None


class JobNodeData(TypedDict):
    """A node's part of a job: its ranks, why they were killed ('' when none was), and the
    interface gloo was given."""

    ranks: list[RankEntry]
    killed_because: str
    gloo_socket_ifname: str | None


class _Rank(TypedDict):
    """A rank this node started, while it runs."""

    rank: int
    local_rank: int
    process: subprocess.Popen[bytes]
    out: IO[bytes]
    err: IO[bytes]
    exit_code: int | str | None
    ended_at: float | None
    progress: str  # its progress file
    longest_silent: float


def die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn that makes the child get SIGKILL when this process dies (Linux
    prctl PR_SET_PDEATHSIG); None where prctl is not to be had. (The node runner has its
    own copy: the runner is a controller's program, not a probe.)"""
    parent = os.getpid()
    try:
        import ctypes  # noqa: PLC0415 - only where it is used, on Linux

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


#: Told to stop, the ranks get SIGTERM and this long to clean up (a checkpoint writer
#: removes its partial file) before SIGKILL: within the node runner's own grace (3 s)
#: before it kills this process.
RANK_GRACE_S = 1.5


def _end_sessions(processes: list[subprocess.Popen[bytes]], grace_s: float) -> None:
    """SIGTERM every rank's session, wait for the ranks up to `grace_s`, then SIGKILL the
    sessions (what a rank started, and a rank stopped or that ignores SIGTERM)."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for process in processes:
        with contextlib.suppress(subprocess.TimeoutExpired, ChildProcessError, OSError):
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
    for process in processes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def _end_ranks(signum: int, frame: object) -> None:
    """Told to stop: end every rank's session (SIGTERM, RANK_GRACE_S to clean up, then
    SIGKILL), remove the progress files, then exit (128 + signal: os._exit, so nothing
    else runs; what would have is done here)."""
    _end_sessions(_RANKS, RANK_GRACE_S)
    for process in _RANKS:  # reaped: no rank writes into the folder as it goes
        with contextlib.suppress(ChildProcessError, OSError):
            process.wait(timeout=2)
    for folder in _PROGRESS_DIRS:
        shutil.rmtree(folder, ignore_errors=True)
    os._exit(128 + signum)


def interface_of(address: str) -> str | None:
    """The name of the local interface that has `address`."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _, name in socket.if_nameindex():
            with contextlib.suppress(OSError):
                packed = struct.pack("256s", name.encode()[:15])
                found = socket.inet_ntoa(fcntl.ioctl(sock.fileno(), SIOCGIFADDR, packed)[20:24])
                if found == address:
                    return name
    return None


def source_address(toward: str) -> str:
    """This node's address on the route toward `toward` (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect((toward, 9))
        address: str = sock.getsockname()[0]
        return address


def whereami() -> WhereAmI:
    addresses = []
    ssh = os.environ.get("SSH_CONNECTION", "").split()
    if len(ssh) == 4:
        addresses.append(ssh[2])  # the address the controller reached this node on
    launch = os.environ.get("SLURM_LAUNCH_NODE_IPADDR")
    if launch:
        with contextlib.suppress(OSError):
            addresses.append(source_address(launch))
    with contextlib.suppress(OSError):
        addresses.append(socket.gethostbyname(socket.gethostname()))
    return {"addresses": [a for i, a in enumerate(addresses) if a not in addresses[:i]],
            "hostname": socket.gethostname()}


def read_json(path: str) -> dict[str, Any] | None:
    """A JSON object from a rank's file, at most MAX_PROGRESS_BYTES; None otherwise."""
    try:
        with open(path, "rb") as file:
            text = file.read(MAX_PROGRESS_BYTES + 1)
        if len(text) > MAX_PROGRESS_BYTES:
            return None
        record = json.loads(text)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def start_progress(path: str, rank: int) -> None:
    """A rank's progress record as it is started: known from its start, silent since."""
    now = time.time()
    with open(path, "w", encoding="utf-8") as file:
        json.dump({"rank": rank, "step": -1, "phase": "start", "since": now, "beat": now},
                  file)


def read_progress(path: str, ended_at: float | None) -> Progress | None:
    """A rank's last progress (its JSON file), with `phase_s` and `silent_s`: how long
    before it ended (or now) it entered that phase and last beat."""
    record = read_json(path)
    if record is None:
        return None
    end = ended_at if ended_at is not None else time.time()
    for key, name in (("since", "phase_s"), ("beat", "silent_s")):
        if isinstance(record.get(key), (int, float)):
            record[name] = round(max(0.0, end - record[key]), 3)
    return cast("Progress", record)  # a rank's file: read as it is, its values unchecked


def silence(path: str) -> float | None:
    """How long the rank's progress file has gone unwritten (made at the rank's start)."""
    try:
        return max(0.0, time.time() - os.stat(path).st_mtime)
    except OSError:  # no progress file: no progress asked for
        return None


def stalled(path: str, stall_s: float) -> float | None:
    """How long the rank's progress file has gone unwritten, when over `stall_s`."""
    if stall_s <= 0:
        return None
    silent = silence(path)
    return silent if silent is not None and silent > stall_s else None


def run_ranks(args: argparse.Namespace) -> JobNodeData:
    with contextlib.ExitStack() as files:
        return _run_ranks(args, files)


def _wait_ranks(ranks: list[_Rank], args: argparse.Namespace) -> str:
    """Wait for every rank; kill the others when one fails or stalls, or all at the wall
    clock. Returns why ranks were killed ('' when none was)."""
    deadline = time.monotonic() + args.wall_timeout
    killed_because = ""
    while any(r["exit_code"] is None for r in ranks):
        for r in ranks:
            if r["exit_code"] is None and (code := r["process"].poll()) is not None:
                r["exit_code"], r["ended_at"] = code, time.time()
                if code != 0 and not killed_because:
                    killed_because = (f"rank {r['rank']} was killed by signal {-code}"
                                      if code < 0 else
                                      f"rank {r['rank']} exited with code {code}")
            quiet = silence(r["progress"]) \
                if r["exit_code"] is None and args.stall_timeout > 0 else None
            if quiet is not None:
                r["longest_silent"] = max(r["longest_silent"], quiet)
            silent = quiet if quiet is not None and quiet > args.stall_timeout else None
            if silent is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(r["process"].pid, signal.SIGKILL)  # works on a stopped one too
                r["process"].wait()
                r["exit_code"], r["ended_at"] = "stalled", time.time()
                killed_because = killed_because or (
                    f"rank {r['rank']} gave no sign of life for {silent:.1f} s")
        over = time.monotonic() > deadline
        if over and not killed_because:
            killed_because = f"wall-clock limit of {args.wall_timeout:g} s reached"
        if killed_because:
            for r in ranks:
                if r["exit_code"] is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(r["process"].pid, signal.SIGKILL)
                    r["process"].wait()
                    r["exit_code"], r["ended_at"] = "killed", time.time()
        time.sleep(0.05)
    return killed_because


def _run_ranks(args: argparse.Namespace, files: contextlib.ExitStack) -> JobNodeData:
    program = base64.b64decode(args.program).decode()
    env = dict(os.environ)
    world = args.nnodes * args.ranks_per_node
    env.update(MASTER_ADDR=args.master_addr, MASTER_PORT=str(args.master_port),
               WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(args.ranks_per_node),
               GROUP_RANK=str(args.node_rank),
               PYTEST_CLUSTER_INIT_TIMEOUT=f"{args.init_timeout:g}")
    with contextlib.suppress(OSError):
        name = interface_of(source_address(args.master_addr))
        if name:
            env.setdefault("GLOO_SOCKET_IFNAME", name)
            env.setdefault("NCCL_SOCKET_IFNAME", name)
    env.update(args.env)  # the job's own choice (a rail) wins
    progress_dir = files.enter_context(tempfile.TemporaryDirectory(prefix="pc-progress-"))
    _PROGRESS_DIRS.append(progress_dir)
    ranks: list[_Rank] = []
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _end_ranks)
    for local in range(args.ranks_per_node):
        rank = args.node_rank * args.ranks_per_node + local
        out = files.enter_context(tempfile.TemporaryFile())  # noqa: SIM115 - the stack closes it
        err = files.enter_context(tempfile.TemporaryFile())  # noqa: SIM115
        progress = os.path.join(progress_dir, f"rank{rank}.json")
        extra = {"PYTEST_CLUSTER_PROGRESS": progress} if args.stall_timeout > 0 else {}
        if extra:
            start_progress(progress, rank)
        process = subprocess.Popen([sys.executable, "-c", program, *args.rank_args],
                                   env={**env, "RANK": str(rank), "LOCAL_RANK": str(local),
                                        **extra},
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   start_new_session=True,  # no thread here
                                   preexec_fn=die_with_parent())  # noqa: PLW1509
        _RANKS.append(process)
        ranks.append({"rank": rank, "local_rank": local, "process": process, "out": out,
                      "err": err, "exit_code": None, "ended_at": None,
                      "progress": progress, "longest_silent": 0.0})
    killed_because = _wait_ranks(ranks, args)
    results: list[RankEntry] = []
    for r in ranks:
        r["out"].seek(0)
        r["err"].seek(0)
        stdout = r["out"].read().decode(errors="replace")
        stderr = r["err"].read().decode(errors="replace")
        data = None
        for line in reversed(stdout.strip().splitlines()):
            with contextlib.suppress(ValueError):
                parsed = json.loads(line)
                if isinstance(parsed, dict):
                    data = parsed
                    break
        entry: RankEntry = {"rank": r["rank"], "local_rank": r["local_rank"],
                            "exit_code": r["exit_code"], "ended_at": r["ended_at"],
                            "data": data, "stderr_tail": stderr[-2000:],
                            "progress": read_progress(r["progress"], r["ended_at"])}
        if args.stall_timeout > 0:
            entry.update({"longest_silent_s": round(r["longest_silent"], 3),
                          "steps": read_json(r["progress"] + ".steps")})
        results.append(entry)
    return {"ranks": results, "killed_because": killed_because,
            "gloo_socket_ifname": env.get("GLOO_SOCKET_IFNAME")}


#: What a job may set in its ranks' environment (launchers/jobs.py JOB_ENV, ENV_VALUE: a
#: probe imports nothing of the package; tests/probes/test_probes.py checks they are the same).
JOB_ENV = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_DISABLE")
ENV_VALUE = re.compile(r"[=^]?[A-Za-z0-9_.:,\-]{1,128}")


def job_env(text: str) -> tuple[str, str]:
    """`--env NAME=VALUE`: a name of JOB_ENV and a value ENV_VALUE allows."""
    name, _, value = text.partition("=")
    if name not in JOB_ENV or not ENV_VALUE.fullmatch(value):
        raise argparse.ArgumentTypeError(f"not NAME=VALUE with NAME one of "
                                         f"{', '.join(JOB_ENV)}: {text[:80]!r}")
    return name, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--whereami", action="store_true")
    parser.add_argument("--master-addr", default="127.0.0.1")
    parser.add_argument("--master-port", type=int, default=29500)
    parser.add_argument("--node-rank", type=int, default=0)
    parser.add_argument("--nnodes", type=int, default=1)
    parser.add_argument("--ranks-per-node", type=int, default=1)
    parser.add_argument("--init-timeout", type=float, default=60.0)
    parser.add_argument("--wall-timeout", type=float, default=300.0)
    parser.add_argument("--stall-timeout", type=float, default=0.0)
    parser.add_argument("--program", default="")
    parser.add_argument("--env", action="append", default=[], type=job_env,
                        help="NAME=VALUE for every rank; NAME one of " + ", ".join(JOB_ENV))
    parser.add_argument("rank_args", nargs="*")
    args = parser.parse_args(argv)
    data = whereami() if args.whereami else run_ranks(args)
    print(json.dumps({"probe": "job_node", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
