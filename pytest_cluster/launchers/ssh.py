"""The ssh launcher: probes run on the nodes through the system OpenSSH client.

Users' ~/.ssh/config, ProxyJump, keys and agents work as for their own ssh. Each node gets
one connection (ControlMaster), reused by every probe of the run. The probe's source goes
over stdin to a small runner (node_runner.py, sent as `python -c`) that enforces the
timeout ON the node and kills the probe when the connection drops. Everything the spec
says reaches ssh as separate arguments; the remote command is one shlex-quoted string.

Timeouts, for a probe timeout T: the runner ends the probe at T. An interpreter that hangs
before the runner runs (a hung NFS mount) reads nothing, so the remote command starts with
coreutils `timeout -k 5 T+5`: SIGTERM at T+5, SIGKILL at T+10, on the node, whatever became
of the connection. A node without `timeout` runs the runner without it (the runner still
enforces T; only a hung interpreter is then left to the node). Here, ssh itself is killed
at T+15 (BACKSTOP_S): the node did not answer. Messages say T, the timeout that applied.

Closing (close(), once, by the run's owner of launchers, lifecycle.py): every master is
told `ssh -O exit` (cluster.parallel at a time), each given EXIT_WAIT_S; then any process
still holding the launcher's control directory (a master that did not answer, one started
while Ctrl-C stopped its launch) gets SIGTERM and, MASTER_GRACE_S later, SIGKILL; then the
directory goes. A dead node costs EXIT_WAIT_S + MASTER_GRACE_S at most, not a hang.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_cluster.contract.model import ClusterSpec, Spec, SshSpec
from pytest_cluster.launchers.base import Launcher
from pytest_cluster.launchers.fanout import fan_out, in_parallel
from pytest_cluster.launchers.process import INTERRUPTED_MESSAGE, launched, run_process
from pytest_cluster.launchers.remote import (
    classify_runner_exit,
    killed_on_node,
    runner_argv,
    runner_payload,
)
from pytest_cluster.launchers.result import ErrorKind, ProbeResult

if TYPE_CHECKING:
    from pytest_cluster.probes import ProbeCall

SSH_FAILED = 255
#: The node's `timeout` ends the interpreter this long after the probe timeout (SIGTERM),
#: and KILL_AFTER_S later with SIGKILL (its shell then exits 137).
NODE_GRACE_S = 5
KILL_AFTER_S = 5
KILLED_ON_NODE = 137
#: Here, ssh is killed this long after the probe timeout: the node did not answer.
BACKSTOP_S = 15
#: At close: how long `ssh -O exit` may take per node, then how long a master that is
#: still there has between SIGTERM and SIGKILL.
EXIT_WAIT_S = 5.0
MASTER_GRACE_S = 2.0
#: A node whose master could not be opened, or whose launcher is closed.
CLOSED_MESSAGE = "not started: the run's ssh connections are closed (the run is ending)"
#: A node not reached because this machine has no ssh client (controller-side).
MISSING_SSH = "the ssh client is not installed on this machine (no ssh on PATH)"
#: The remote command's first words: `sh -c GUARD sh T+5 PYTHON -c RUNNER ...` runs the
#: rest under `timeout` where the node has it. No spec value is in this text.
GUARD = (f'if command -v timeout >/dev/null 2>&1; then timeout -k {KILL_AFTER_S} "$@"; '
         'else shift; exec "$@"; fi')
#: ssh's own messages, first match wins: what a user should do about each. Credentials
#: refused and a name that does not resolve are this machine's faults (controller-side:
#: ErrorKind.controller_side), whatever the other nodes did; a refused or silent address
#: is the node's own.
_SSH_ERRORS = (
    (("Permission denied", "Too many authentication failures", "no mutual signature",
      "Host key verification failed", "REMOTE HOST IDENTIFICATION HAS CHANGED"),
     ErrorKind.AUTH_REFUSED, "ssh refused: check the user, key and known_hosts"),
    (("Could not resolve hostname", "Name or service not known",
      "Temporary failure in name resolution"),
     ErrorKind.CONTROLLER, "this machine cannot resolve the name (ssh: Could not resolve "
     "hostname): check cluster.nodes, the ssh config and DNS here"),
    (("Connection refused",), ErrorKind.UNREACHABLE, "ssh: connection refused (no sshd?)"),
    (("timed out", "No route to host", "Network is unreachable", "Connection closed",
      "Connection reset", "Broken pipe"),
     ErrorKind.UNREACHABLE, "ssh: node not reachable"),
)


def ssh_options(ssh: SshSpec, control_path: str | None) -> list[str]:
    """The options every ssh call of a run shares (batch mode, timeouts, the spec's)."""
    argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={int(ssh.connect_timeout_s)}",
            "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3"]
    if ssh.config:
        argv += ["-F", os.path.expanduser(ssh.config)]
    if ssh.user:
        argv += ["-l", ssh.user]
    if ssh.port:
        argv += ["-p", str(ssh.port)]
    if ssh.identity_file:
        argv += ["-i", os.path.expanduser(ssh.identity_file)]
    for key, value in ssh.options:
        argv += ["-o", f"{key}={value}"]
    if control_path:
        argv += ["-o", f"ControlPath={control_path}"]
    return argv


def master_command(ssh: SshSpec, node: str, control_path: str) -> list[str]:
    """Open the node's shared connection in the background (`-f -N`)."""
    return [*ssh_options(ssh, control_path), "-o", "ControlMaster=yes",
            "-o", "ControlPersist=120", "-f", "-N", "--", node]


def remote_command(python: str, timeout_s: float, args: Sequence[str]) -> str:
    """The command line the node's shell runs: the runner under the node's `timeout`
    (see GUARD), then the probe's arguments."""
    return shlex.join(["sh", "-c", GUARD, "sh", f"{timeout_s + NODE_GRACE_S:g}",
                       *runner_argv(python, timeout_s, args)])


def probe_command(ssh: SshSpec, node: str, python: str, call: ProbeCall, timeout_s: float,
                  control_path: str | None) -> list[str]:
    argv = ssh_options(ssh, control_path)
    if control_path:
        argv += ["-o", "ControlMaster=no"]
    return [*argv, "--", node, remote_command(python, timeout_s, call.args)]


def exit_command(ssh: SshSpec, node: str, control_path: str) -> list[str]:
    return [*ssh_options(ssh, control_path), "-O", "exit", "--", node]


def holding(control_dir: str, proc: Path = Path("/proc")) -> list[int]:
    """The processes whose command line names `control_dir` (a master: its ControlPath),
    read from /proc; none where there is no /proc."""
    needle = os.fsencode(os.path.join(control_dir, ""))
    found = []
    with contextlib.suppress(OSError):
        for entry in proc.iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                with contextlib.suppress(OSError):
                    if needle in (entry / "cmdline").read_bytes():
                        found.append(int(entry.name))
    return found


def running(pid: int, proc: Path = Path("/proc")) -> bool:
    """Whether `pid` runs (a zombie has ended), from /proc: a master is not our child."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def end_processes(pids: Sequence[int], grace_s: float, proc: Path = Path("/proc")) -> None:
    """SIGTERM to each, SIGKILL to those still running after `grace_s`."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    left = list(pids)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [pid for pid in left if running(pid, proc)]
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def backstop_message(within: str, after_s: float) -> str:
    """ssh killed here: neither the probe nor the node's own kill came back in time."""
    return (f"no answer within {within}; the node did not answer and the connection was cut "
            f"after {after_s:g} s")


def classify(result: ProbeResult, python: str, within: str | None = None) -> ProbeResult:
    """ssh's own failures (exit code 255, with its message) and then the node runner's;
    `within` says the timeout that applied (Launcher.timeout_text)."""
    if result.error is ErrorKind.CRASHED and result.exit_code == KILLED_ON_NODE and within:
        # the interpreter ignored the node's SIGTERM at its timeout: SIGKILLed
        return dataclasses.replace(result, error=ErrorKind.TIMEOUT,
                                   message=killed_on_node(within))
    if result.error is ErrorKind.CRASHED and result.exit_code == SSH_FAILED:
        for needles, kind, message in _SSH_ERRORS:
            if any(needle in result.stderr_tail for needle in needles):
                return dataclasses.replace(result, error=kind, message=message)
        return dataclasses.replace(result, error=ErrorKind.UNREACHABLE,
                                   message="ssh failed (exit code 255)")
    return classify_runner_exit(result, python, within)


class SshLauncher(Launcher):
    name = "ssh"

    def __init__(self, spec: ClusterSpec, ssh: SshSpec) -> None:
        super().__init__(spec)
        self.ssh = ssh
        # unix socket paths are short: a private directory under /tmp
        self.control_dir = tempfile.mkdtemp(prefix="pcssh-")
        self._masters: dict[str, ProbeResult | None] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def from_spec(cls, spec: Spec) -> Launcher:
        return cls(spec.cluster, spec.ssh or SshSpec())

    def control_path(self) -> str:
        return f"{self.control_dir}/%C"

    def _connect(self, node: str, probe: str) -> ProbeResult | None:
        """The node's shared connection, opened once; a failed result if it cannot be."""
        with self._lock:
            lock = self._locks.setdefault(node, threading.Lock())
        with lock:
            if self._closed:
                return ProbeResult(node, probe, None, ErrorKind.CANCELLED, CLOSED_MESSAGE)
            if node not in self._masters:
                argv = master_command(self.ssh, node, self.control_path())
                with tempfile.TemporaryFile(mode="w+", encoding="utf-8",
                                            errors="replace") as err:
                    # a file, not a pipe: the backgrounded master keeps stderr open;
                    # registered, so that Ctrl-C stops a connection under way too
                    code: int | None
                    try:
                        with launched(argv, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=err) as process:
                            if process is None:
                                return ProbeResult(node, probe, None, ErrorKind.CANCELLED,
                                                   INTERRUPTED_MESSAGE)
                            code = process.wait(self.ssh.connect_timeout_s + 10)
                    except subprocess.TimeoutExpired:
                        code = None
                    except FileNotFoundError:
                        code = -1
                    err.seek(0)
                    stderr = err.read()[-2000:]
                if code == 0:
                    self._masters[node] = None
                elif code == -1:
                    self._masters[node] = ProbeResult(
                        node, probe, None, ErrorKind.CONTROLLER, MISSING_SSH)
                else:
                    failed = ProbeResult(node, probe, None, ErrorKind.CRASHED, "",
                                         exit_code=code if code is not None else SSH_FAILED,
                                         stderr_tail=stderr or "Connection timed out")
                    self._masters[node] = classify(failed, self.spec.python)
            found = self._masters[node]
        return None if found is None else dataclasses.replace(found, probe=probe)

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        source = call.source()
        return fan_out(nodes, lambda node: self.run_source(node, call, source, timeout_s),
                       self.spec.parallel)

    def run_source(self, node: str, call: ProbeCall, source: str,
                   timeout_s: float) -> ProbeResult:
        failed = self._connect(node, call.name)
        if failed is not None:
            return failed
        argv = probe_command(self.ssh, node, self.spec.python, call, timeout_s,
                             self.control_path())
        payload = runner_payload(source)
        within = self.timeout_text(timeout_s)
        # the node kills the probe at timeout_s (a hung interpreter by T+10); ssh itself
        # is killed here at T+15
        result = run_process(node, call.name, argv, payload, timeout_s + BACKSTOP_S,
                             hold_stdin=True, limit=self.spec.probe_output_bytes)
        if result.error is ErrorKind.TIMEOUT:
            result = dataclasses.replace(
                result, message=backstop_message(within, timeout_s + BACKSTOP_S))
        return classify(result, self.spec.python, within)

    def close(self) -> None:
        """Every master ended and the control directory removed (see the module's
        docstring); a master being opened now is waited for, one opened later is refused.
        Once; a second Ctrl-C here cuts the wait short, not the killing."""
        with self._lock:
            self._closed = True
            locks = list(self._locks.values())
        deadline = time.monotonic() + self.ssh.connect_timeout_s + 10
        for lock in locks:  # a connection under way ends (or is stopped by Ctrl-C)
            if lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
                lock.release()
        with self._lock:
            nodes = [node for node, failed in self._masters.items() if failed is None]
            self._masters.clear()
        try:
            in_parallel(self._exit_master, nodes, self.spec.parallel)
        finally:
            end_processes(holding(self.control_dir), MASTER_GRACE_S)
            shutil.rmtree(self.control_dir, ignore_errors=True)

    def _exit_master(self, node: str) -> None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(exit_command(self.ssh, node, self.control_path()),
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=EXIT_WAIT_S, check=False, start_new_session=True)
