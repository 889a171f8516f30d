"""launchers/node_runner.py, run here (no ssh, no srun) as a node runs it: `python -c
RUNNER TIMEOUT PYTHON ARGS` with the probe's source on stdin; what it passes through,
and how it ends its probe (a timeout, a hang-up, a signal, its own death)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_cluster.launchers.remote import RUNNER_SOURCE


def runner(source: str, timeout: float, *args: str, python: str = sys.executable,
           close_stdin: bool = True) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([sys.executable, "-c", RUNNER_SOURCE, str(timeout), python,
                                *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdin is not None
    data = source.encode()
    process.stdin.write(str(len(data)).encode() + b"\n" + data)
    process.stdin.flush()
    if close_stdin:
        process.stdin.close()
    return process


def finish(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Wait with stdin still open (communicate() would close it: a hang-up)."""
    process.wait(30)
    assert process.stdout is not None and process.stderr is not None
    return process.stdout.read(), process.stderr.read()


def alive(marker: str) -> bool:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, check=False)
    return found.returncode == 0


def test_runner_passes_output_and_exit_code_through() -> None:
    process = runner("import sys; print(sys.argv[1:]); sys.exit(3)", 30, "--x", "a b",
                     close_stdin=False)
    out, _err = finish(process)
    assert process.returncode == 3
    assert out.decode().strip() == "['--x', 'a b']"


@pytest.mark.slow
def test_runner_kills_the_probe_at_its_timeout() -> None:
    marker = f"pc-timeout-{os.getpid()}"
    process = runner("import time; time.sleep(600)", 1, marker, close_stdin=False)
    _out, err = finish(process)
    assert process.returncode == 124
    assert b"probe killed on the node after 1 s" in err
    assert not alive(marker)


@pytest.mark.slow
def test_runner_kills_the_probe_when_the_connection_drops() -> None:
    marker = f"pc-hangup-{os.getpid()}"
    process = runner("import time; time.sleep(600)", 600, marker, close_stdin=False)
    time.sleep(1)
    assert alive(marker)
    assert process.stdin is not None
    process.stdin.close()  # what a cut ssh connection looks like from the node
    assert process.wait(10) == 125
    time.sleep(0.2)
    assert not alive(marker)


POLITE = ("import signal, sys, time\n"
          "def bye(*_):\n    open(sys.argv[1], 'w').close()\n    sys.exit(1)\n"
          "signal.signal(signal.SIGTERM, bye)\nprint('up', flush=True)\ntime.sleep(600)\n")

STUBBORN = ("import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('up', flush=True)\ntime.sleep(600)\n")


def started(process: subprocess.Popen[bytes]) -> None:
    assert process.stdout is not None
    assert process.stdout.readline() == b"up\n"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_runner_told_to_stop_gives_its_probe_the_grace_then_kills(tmp_path: Path,
                                                                   sig: int) -> None:
    """`timeout` on the node or scancel (SIGTERM), a hang-up (SIGHUP): the probe gets
    SIGTERM and 3 s to clean up (storage removes its files), then SIGKILL."""
    cleaned = tmp_path / f"cleaned-{os.getpid()}"
    polite = runner(POLITE, 600, str(cleaned), close_stdin=False)
    stubborn = runner(STUBBORN, 600, f"pc-stubborn-{os.getpid()}", close_stdin=False)
    for process in (polite, stubborn):
        started(process)
    polite.send_signal(sig)
    stubborn.send_signal(sig)
    assert polite.wait(10) == 128 + sig
    assert cleaned.exists()
    assert stubborn.wait(10) == 128 + sig
    time.sleep(0.2)
    assert not alive(f"pc-stubborn-{os.getpid()}")


def test_a_probe_dies_with_its_runner() -> None:
    """The runner SIGKILLed (nothing can catch that): the kernel kills its probe."""
    marker = f"pc-orphan-{os.getpid()}"
    process = runner(STUBBORN, 600, marker, close_stdin=False)
    started(process)
    process.kill()
    process.wait(10)
    deadline = time.monotonic() + 5
    while alive(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(marker)


def test_runner_says_when_the_interpreter_is_missing() -> None:
    process = runner("print(1)", 10, python="/no/such/python", close_stdin=False)
    _out, err = finish(process)
    assert process.returncode == 127
    assert b"interpreter not found on this node: /no/such/python" in err
