"""The ssh launcher (launchers/ssh.py): exact command lines, error kinds, closing, and the
helpers of its real test against OpenSSH servers (tests/real/test_ssh.py). The node
runner it starts is tested in test_node_runner.py."""

from __future__ import annotations

import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.model import ClusterSpec, SshSpec
from pytest_cluster.contract.sections.ssh import ALLOWED
from pytest_cluster.errors import SpecError
from pytest_cluster.launchers.remote import RUNNER_SOURCE, runner_payload
from pytest_cluster.launchers.result import ErrorKind, ProbeResult
from pytest_cluster.launchers.ssh import (
    CLOSED_MESSAGE,
    SshLauncher,
    classify,
    exit_command,
    holding,
    master_command,
    probe_command,
    remote_command,
    ssh_options,
)
from pytest_cluster.probes import ProbeCall
from tests.launchers.test_node_runner import STUBBORN, alive, finish
from tests.netns_cluster import NetnsCluster

FULL = SshSpec(user="ubuntu", port=2222, identity_file="/keys/id", config="/cfg/ssh_config",
               options=(("StrictHostKeyChecking", "accept-new"),), connect_timeout_s=7)
BASE = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=7", "-o", "ServerAliveInterval=10",
        "-o", "ServerAliveCountMax=3", "-F", "/cfg/ssh_config", "-l", "ubuntu", "-p", "2222",
        "-i", "/keys/id", "-o", "StrictHostKeyChecking=accept-new",
        "-o", "ControlPath=/tmp/c/%C"]


def test_ssh_command_lines_are_exact() -> None:
    assert ssh_options(SshSpec(), None) == [
        "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=10",
        "-o", "ServerAliveCountMax=3"]
    assert ssh_options(FULL, "/tmp/c/%C") == BASE
    assert master_command(FULL, "gpu-001", "/tmp/c/%C") == [
        *BASE, "-o", "ControlMaster=yes", "-o", "ControlPersist=120", "-f", "-N", "--",
        "gpu-001"]
    assert exit_command(FULL, "gpu-001", "/tmp/c/%C") == [*BASE, "-O", "exit", "--", "gpu-001"]
    call = ProbeCall("storage", ("--path", "/data; rm -rf / $(reboot) 'x'"))
    argv = probe_command(FULL, "gpu-001", "/shared/venv/bin/python", call, 600, "/tmp/c/%C")
    assert argv[:-1] == [*BASE, "-o", "ControlMaster=no", "--", "gpu-001"]
    assert argv[-1] == remote_command("/shared/venv/bin/python", 600, call.args)


@pytest.mark.slow
def test_closing_ends_what_holds_the_control_directory_and_removes_it() -> None:
    """A master `ssh -O exit` did not end (here: a process naming the control path that
    ignores SIGTERM) is killed; a process naming a directory whose name merely starts the
    same is left alone; the directory goes, and no connection is opened afterwards."""
    launcher = SshLauncher(ClusterSpec("t", ("n1",), "ssh", "python3", 60, 8), SshSpec())
    started = [subprocess.Popen([sys.executable, "-c", STUBBORN, f"ControlPath={path}"],
                                stdout=subprocess.PIPE)
               for path in (launcher.control_path(), f"{launcher.control_dir}x/%C")]
    stubborn, other = started
    try:
        for process in started:
            assert process.stdout is not None and process.stdout.readline() == b"up\n"
        assert holding(launcher.control_dir) == [stubborn.pid]
        launcher.close()
        assert stubborn.wait(10) == -signal.SIGKILL
        assert other.poll() is None
        assert not Path(launcher.control_dir).exists()
        result = launcher.run(ProbeCall("host"), ["n1"], 60)["n1"]
        assert (result.error, result.message) == (ErrorKind.CANCELLED, CLOSED_MESSAGE)
        launcher.close()  # again: nothing to do
    finally:
        for process in started:
            process.kill()
            process.wait()


def test_the_remote_command_is_quoted_word_for_word() -> None:
    args = ("--path", "/data; rm -rf / $(reboot) 'x' \"y\" `z`", "--files", "10")
    remote = remote_command("/opt/py thon/bin/python", 42.5, args)
    # the node's `timeout` ends a hung interpreter at T+5 (SIGKILL at T+10)
    assert shlex.split(remote) == [
        "sh", "-c", 'if command -v timeout >/dev/null 2>&1; then timeout -k 5 "$@"; '
                    'else shift; exec "$@"; fi', "sh", "47.5",
        "/opt/py thon/bin/python", "-c", RUNNER_SOURCE, "42.5", "/opt/py thon/bin/python",
        *args]


@pytest.mark.parametrize("has_timeout", [True, False])
def test_the_remote_command_runs_the_runner_with_or_without_timeout(
        tmp_path: Path, has_timeout: bool) -> None:
    """Run by a shell as sshd would: the arguments arrive word for word; a node without
    coreutils `timeout` runs the runner without it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", *(["timeout"] if has_timeout else [])):
        (bin_dir / tool).symlink_to(shutil.which(tool) or tool)
    args = ("--x", "a b; $(y)")
    process = subprocess.Popen(["/bin/sh", "-c", remote_command(sys.executable, 30, args)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={"PATH": str(bin_dir)})
    assert process.stdin is not None
    process.stdin.write(runner_payload("import sys; print(sys.argv[1:])").encode())
    process.stdin.flush()
    out, err = finish(process)  # stdin held open, as the controller does
    assert (process.returncode, out.decode().strip()) == (0, "['--x', 'a b; $(y)']"), err


@pytest.mark.slow
def test_a_hung_interpreter_is_killed_by_the_nodes_timeout(tmp_path: Path) -> None:
    """`python` hangs before the runner starts: SIGTERM at T+5; one that ignores it is
    SIGKILLed 5 s later (exit 137), its children too."""
    hung = tmp_path / "hung-python"
    hung.write_text("#!/bin/sh\ntrap '' TERM\nsleep 617\n")
    hung.chmod(0o755)
    done = subprocess.run(["/bin/sh", "-c", remote_command(str(hung), 0.5, ())],
                          input=b"1\n1", capture_output=True, timeout=60, check=False)
    assert done.returncode == 137, done.stderr  # SIGKILLed by the node's `timeout`
    assert not alive("sleep 617")
    failed = ProbeResult("n1", "host", None, ErrorKind.CRASHED, "", exit_code=137)
    assert classify(failed, str(hung), "0.5 s").message == (
        "no answer within 0.5 s; killed on the node")


def failed(code: int, stderr: str) -> ProbeResult:
    return ProbeResult("n1", "host", None, ErrorKind.CRASHED, "x", exit_code=code,
                       stderr_tail=stderr)


@pytest.mark.parametrize(("code", "stderr", "kind", "message"), [
    (255, "root@n1: Permission denied (publickey).", ErrorKind.AUTH_REFUSED,
     "ssh refused: check the user, key and known_hosts"),
    (255, "Host key verification failed.", ErrorKind.AUTH_REFUSED,
     "ssh refused: check the user, key and known_hosts"),
    (255, "ssh: Could not resolve hostname n1: Name or service not known",
     ErrorKind.CONTROLLER, "this machine cannot resolve the name (ssh: Could not resolve "
     "hostname): check cluster.nodes, the ssh config and DNS here"),
    (255, "ssh: connect to host 10.0.0.1 port 22: Connection refused", ErrorKind.UNREACHABLE,
     "ssh: connection refused (no sshd?)"),
    (255, "ssh: connect to host 10.0.0.1 port 22: Connection timed out",
     ErrorKind.UNREACHABLE, "ssh: node not reachable"),
    (255, "", ErrorKind.UNREACHABLE, "ssh failed (exit code 255)"),
    (127, "bash: /no/python: No such file or directory", ErrorKind.INTERPRETER_MISSING,
     "'/usr/bin/python3' not found on the node (check cluster.python)"),
    (124, "pytest-cluster: probe killed on the node after 5 s", ErrorKind.TIMEOUT,
     "no answer within 5 s (cluster.probe_timeout); killed on the node"),
    (137, "", ErrorKind.TIMEOUT,
     "no answer within 5 s (cluster.probe_timeout); killed on the node"),
    (125, "", ErrorKind.UNREACHABLE, "the connection dropped; probe killed"),
    (1, "Traceback ...", ErrorKind.CRASHED, "x"),
])
def test_ssh_failures_map_to_our_kinds(code: int, stderr: str, kind: ErrorKind,
                                       message: str) -> None:
    result = classify(failed(code, stderr), "/usr/bin/python3", "5 s (cluster.probe_timeout)")
    assert (result.error, result.message) == (kind, message)


@pytest.mark.parametrize(("text", "message"), [
    ("ssh: {options: {ProxyCommand: 'nc %h %p'}}",
     "t.yaml:3: ssh.options.ProxyCommand: not on the allowlist of ssh options: it runs a "
     f"command or loads code on this machine; allowed: {', '.join(ALLOWED)}"),
    ("ssh: {options: {ConnectionAttempts: '5 6'}}",
     "t.yaml:3: ssh.options.ConnectionAttempts: expected one word (no blanks or quotes), "
     "got '5 6'"),
    ("ssh: {user: 'root; rm'}", "t.yaml:3: ssh.user: expected a user name like 'ubuntu', "
                                "got 'root; rm'"),
    ("ssh: {port: 70000}", "t.yaml:3: ssh.port: expected a port from 1 to 65535, got 70000"),
    ("ssh: {identity_file: -oX}", "t.yaml:3: ssh.identity_file: expected a file path like "
                                  "~/.ssh/id_ed25519, got '-oX'"),
])
def test_bad_ssh_settings_are_refused(text: str, message: str) -> None:
    base = "cluster: {name: x, nodes: 'n[1-2]', launcher: ssh}\nhost: {cpu_cores: 1}\n"
    with pytest.raises(SpecError) as info:
        parse_spec(base + text + "\n", "t.yaml")
    assert str(info.value) == message


@pytest.mark.parametrize("name", ["-oProxyCommand=touch /tmp/x", "a;b", "$(reboot)", "a b",
                                  "@x", "n1\nn2", "`id`"])
def test_hostile_node_names_are_refused(name: str) -> None:
    text = f"cluster: {{name: x, nodes: {name!r}, launcher: ssh}}\nhost: {{cpu_cores: 1}}\n"
    with pytest.raises(SpecError, match="is not a valid hostname"):
        parse_spec(text.replace("\n", "\n", 1), "t.yaml")


# -- the real thing: sshd in network namespaces -----------------------------------------


def launcher(netns: NetnsCluster, python: str = sys.executable,
             ssh: SshSpec | None = None) -> SshLauncher:
    spec = ClusterSpec("t", tuple(netns.nodes), "ssh", python, 60, 8)
    return SshLauncher(spec, ssh or SshSpec(config=str(netns.ssh_config), connect_timeout_s=3))


def spec_text(netns: NetnsCluster, fs: Path, extra: str = "") -> str:
    return (f"cluster:\n  name: netns\n  nodes: node[1-4]\n  launcher: ssh\n"
            f"  python: {sys.executable}\n  probe_timeout: 1 min\n"
            f"{netns.launcher_section('ssh')}\n{extra}"
            "host:\n  cpu_cores: '>= 1'\n  memory: '>= 256 MiB'\n"
            "  software: {kernel: '>= 3.0', python: '>= 3.8'}\n"
            f"storage:\n  - path: {fs}\n    shared: true\n    io_size: 4 MiB\n"
            "    metadata_files: 50\n"
            "    capacity: '>= 1 MiB'\n    write: '>= 1 MB/s'\n    read: '>= 1 MB/s'\n"
            "    metadata: '>= 10 ops/s'\n")
