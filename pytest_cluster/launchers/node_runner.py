"""Runs ON a node, started over ssh or srun: `python -c <this> TIMEOUT PYTHON [ARGS...]`.

Reads the probe's source from stdin (a line with its length in bytes, then the bytes),
runs `PYTHON - ARGS` in its own process group, and ends that group when the probe
outlives TIMEOUT seconds (exit 124), when stdin reaches end of file (exit 125): the
controller holds stdin open while it waits, so a killed or cut ssh connection leaves no
probe behind on the node), or when this runner gets SIGTERM, SIGHUP or SIGINT (exit
128 + the signal: `timeout` on the node, scancel, a hang-up).

Ending a probe, the contract probes rely on: SIGTERM to its process group, then SIGKILL
to the group KILL_GRACE_S (3) seconds later, or as soon as the probe itself has exited
(what it left in its group). A probe that cleans up (storage removes its files) does so
on SIGTERM within those 3 s; job_node ends its ranks, which run in sessions of their own.
Should this runner itself be SIGKILLed, the probe gets SIGKILL from the kernel
(PR_SET_PDEATHSIG, Linux). Standard library only; nothing of pytest-cluster is imported.
"""

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import typing

TIMED_OUT = 124
HUNG_UP = 125
NOT_FOUND = 127
KILL_GRACE_S = 3.0
PR_SET_PDEATHSIG = 1
#: With PYTEST_CLUSTER_MARKERS=1 (the slurm launcher), stdout starts with the node's name
#: and ends with the exit code, so that one srun step's output can be split per node.
NODE_MARKER = "__pytest_cluster_node__"
EXIT_MARKER = "__pytest_cluster_exit__"
#: srun --label cuts lines longer than 1024 bytes into labeled pieces that read like lines
#: of their own, so with markers each line of the probe's stdout is sent in pieces of at
#: most PIECE characters (<= 1000 bytes in UTF-8): MORE before a piece that continues,
#: LAST before the one that ends the line.
PIECE = 250
MORE, LAST = "+", "|"


def _relay(stream: "typing.BinaryIO") -> None:
    """Copy the probe's stdout to ours, each line in marked pieces (see PIECE)."""
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\n")
        pieces = [line[i:i + PIECE] for i in range(0, len(line), PIECE)] or [""]
        for index, piece in enumerate(pieces):
            sys.stdout.write((LAST if index == len(pieces) - 1 else MORE) + piece + "\n")
        sys.stdout.flush()


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _has_exited(pid: int) -> bool:
    """Whether the probe has exited, without reaping it: its group id stays reserved."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill(process: "subprocess.Popen[bytes]", reap: bool = True) -> None:
    """End the probe's process group: SIGTERM, then SIGKILL after KILL_GRACE_S. Without
    `reap` (in a signal handler, which may have interrupted a wait holding the process's
    lock) the probe is left for init to reap."""
    _signal_group(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_S
    while time.monotonic() < deadline and not _has_exited(process.pid):
        time.sleep(0.05)
    _signal_group(process.pid, signal.SIGKILL)
    if reap:
        process.wait()


def die_with_parent() -> "typing.Callable[[], None] | None":
    """A preexec_fn that makes the child get SIGKILL when this process dies (Linux
    prctl PR_SET_PDEATHSIG); None where prctl is not to be had."""
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


_PROBE: "list[subprocess.Popen[bytes]]" = []


def _on_signal(signum: int, frame: object) -> None:
    """SIGTERM, SIGHUP, SIGINT: end the probe, then this runner (128 + signal)."""
    for process in _PROBE:
        _kill(process, reap=False)
    sys.stderr.write(f"pytest-cluster: node runner got signal {signum}; probe ended\n")
    sys.stderr.flush()
    os._exit(128 + signum)


def main(argv: "list[str]", pieces: bool = False) -> int:
    timeout_s, python, args = float(argv[0]), argv[1], argv[2:]
    stdin = sys.stdin.buffer
    size = int(stdin.readline().strip() or b"0")
    source = stdin.read(size)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _on_signal)
    try:
        process = subprocess.Popen([python, "-", *args], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE if pieces else None,
                                   # no thread runs yet: preexec_fn is safe here
                                   start_new_session=True,
                                   preexec_fn=die_with_parent())  # noqa: PLW1509
    except FileNotFoundError:
        sys.stderr.write(f"pytest-cluster: interpreter not found on this node: {python}\n")
        return NOT_FOUND
    _PROBE.append(process)
    assert process.stdin is not None
    process.stdin.write(source)
    process.stdin.close()
    relay = None
    if pieces:
        relay = threading.Thread(target=_relay, args=(process.stdout,), daemon=True)
        relay.start()
    try:
        return _wait(process, stdin, timeout_s)
    finally:
        if relay is not None:
            relay.join(10)


def _wait(process: "subprocess.Popen[bytes]", stdin: "typing.BinaryIO",
          timeout_s: float) -> int:
    hung_up = threading.Event()

    def watch() -> None:
        while stdin.read(65536):
            pass
        hung_up.set()

    threading.Thread(target=watch, daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while process.poll() is None:
        if hung_up.is_set():
            _kill(process)
            return HUNG_UP
        if time.monotonic() > deadline:
            _kill(process)
            sys.stderr.write(f"pytest-cluster: probe killed on the node after {timeout_s:g} s\n")
            return TIMED_OUT
        time.sleep(0.05)
    return process.returncode


if __name__ == "__main__":
    markers = os.environ.get("PYTEST_CLUSTER_MARKERS") == "1"
    if markers:
        name = os.environ.get("SLURMD_NODENAME") or os.uname().nodename
        sys.stdout.write(f"{NODE_MARKER} {name}\n")
        sys.stdout.flush()
    code = main(sys.argv[1:], pieces=markers)
    if markers:
        sys.stdout.write(f"\n{EXIT_MARKER} {code}\n")
        sys.stdout.flush()
    sys.stderr.flush()
    # not sys.exit: the stdin watcher may still sit in a read, and interpreter shutdown
    # with a daemon thread inside a buffered read is a fatal error
    os._exit(code)
