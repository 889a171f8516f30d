"""The ssh launcher: exact command lines, error kinds, the node runner, and (marked
realcomponents) the real thing against OpenSSH servers in network namespaces."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_cluster.cli import main as cli_main
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
from pytest_cluster.spec import parse_spec
from pytest_cluster.spec.model import ClusterSpec, SshSpec
from pytest_cluster.spec.ssh import ALLOWED
from tests.netns_cluster import NetnsCluster
from tests.test_bundle import ed25519_key, ssh_key
from tests.test_plugin import jsonl

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


STUBBORN = ("import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('up', flush=True)\ntime.sleep(600)\n")


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


# -- the node runner, run here (no ssh) -------------------------------------------------

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


@pytest.mark.realcomponents
def test_host_and_storage_suite_passes_on_all_nodes(pytester: pytest.Pytester,
                                                     netns: NetnsCluster) -> None:
    fs = pytester.mkdir("fs")
    (pytester.path / "trial.yaml").write_text(spec_text(netns, fs))
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    # per node: cores, memory, kernel, python, 4 storage clauses; 6 same_software; shared
    result.assert_outcomes(passed=4 * 8 + 6 + 1)
    records = [r for r in jsonl(pytester) if r.get("type") == "result"]
    assert {r["node"] for r in records} == {"node1", "node2", "node3", "node4", "all"}


@pytest.mark.realcomponents
def test_a_signed_run_of_the_cluster_verifies_and_matches_itself_as_baseline(
        pytester: pytest.Pytester, netns: NetnsCluster, tmp_path: Path) -> None:
    """Evidence of a real run over ssh: every node's inventory read on the node, the
    manifest signed with a key file and with ssh-keygen, both verified; the run then
    serves as the baseline of the next one, whose nodes and hardware are found the same."""
    fs = pytester.mkdir("fs")
    private, public, _ = ed25519_key(tmp_path, "evidence")
    openssh = ssh_key(tmp_path, "id_evidence")
    (pytester.path / "trial.yaml").write_text(
        spec_text(netns, fs, "baseline: {tolerance: 99%}\n"))
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                f"--cluster-sign-key={private}",
                                f"--cluster-ssh-sign-key={openssh}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    first = (pytester.path / "reports" / "latest").resolve()
    for key in (public, openssh.with_suffix(".pub")):
        assert cli_main(["verify", str(first), "--key", str(key)]) == 0
    inventory = json.loads((first / "inventory.json").read_text())
    assert inventory["simulated"] is False and list(inventory["nodes"]) == netns.nodes
    machine_id = Path("/etc/machine-id").read_text().strip()
    addresses = set()
    for node, record in inventory["nodes"].items():
        assert record["machine_id"] == machine_id  # namespaces share the machine
        assert record["kernel"] == os.uname().release
        (fs_entry,) = record["filesystems"]
        assert fs_entry["path"] == str(fs) and "mount_point" in fs_entry, node
        addresses |= {nic["address"] for nic in record["interfaces"]}
    assert len(addresses) >= len(netns.nodes)  # each namespace has its own veth
    with (first / "junit.xml").open("a") as out:  # tampered: refused as a baseline
        out.write(" ")
    refused = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                 f"--cluster-baseline={first}")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    (first / "junit.xml").write_bytes((first / "junit.xml").read_bytes()[:-1])
    again = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                               f"--cluster-baseline={first}")
    assert again.ret == pytest.ExitCode.OK, again.stdout.str()[-3000:]
    derived = [r for r in jsonl(pytester) if str(r.get("clause", "")).startswith("baseline.")]
    assert {r["clause"].split("[")[0] for r in derived} == {
        "baseline.nodes", "baseline.hardware", "baseline.performance"}
    assert sum(r["clause"] == "baseline.hardware" for r in derived) == len(netns.nodes)


@pytest.mark.realcomponents
def test_a_stopped_sshd_fails_only_its_node(pytester: pytest.Pytester,
                                            netns: NetnsCluster) -> None:
    fs = pytester.mkdir("fs")
    (pytester.path / "trial.yaml").write_text(spec_text(netns, fs))
    with netns.sshd_stopped("node3"):
        result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    # the other nodes' 8 checks each pass; same_software (6) is not established while
    # node3 does not answer, and the shared file cannot be read on node3
    result.assert_outcomes(passed=3 * 8, failed=8 + 6 + 1)
    failed = [r for r in jsonl(pytester) if r.get("outcome") == "failed"
              and r["node"] != "all"]
    assert {r["node"] for r in failed} == {"node3"}
    assert {r["error_kind"] for r in failed} == {"unreachable"}
    # refused at connect, not waited out to the probe timeout (bench/fanout.py times it)
    assert "node3: host probe unreachable: ssh: connection refused (no sshd?)" in failed[0][
        "message"]


@pytest.mark.realcomponents
def test_a_filesystem_not_shared_with_one_node_fails_the_shared_check(
        pytester: pytest.Pytester, netns: NetnsCluster) -> None:
    fs = pytester.mkdir("fs")
    (pytester.path / "trial.yaml").write_text(spec_text(netns, fs))
    netns.stop_sshd("node4")
    netns.start_sshd("node4", private_dir=fs)  # node4 sees its own empty fs
    netns.wait_for_port("node4")
    try:
        result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                    "-k", "test_storage_shared")
    finally:
        netns.stop_sshd("node4")
        netns.start_sshd("node4")
        netns.wait_for_port("node4")
    result.assert_outcomes(failed=1)
    [record] = [r for r in jsonl(pytester) if r.get("type") == "result"]
    assert record["nodeid"].endswith(f"test_storage_shared[{fs}]")
    assert record["message"] == (f"Failed: all {fs} shared: a file written on node1 is not "
                                 "seen on node4")
    assert record["measured"] == "seen on 3 of 4 nodes"


@pytest.mark.realcomponents
def test_a_hanging_probe_is_killed_and_leaves_nothing(netns: NetnsCluster) -> None:
    ssh = launcher(netns)
    try:
        result = ssh.run_source("node2", ProbeCall("host"), "import time\ntime.sleep(600)\n", 2)
        # killed by the runner on the node at 2 s, not by ssh's later backstop
        assert result.error is ErrorKind.TIMEOUT
        assert result.message == "no answer within 2 s; killed on the node"
        time.sleep(0.3)
        assert netns.python_processes("node2") == []
    finally:
        ssh.close()


@pytest.mark.realcomponents
def test_wrong_key_is_auth_refused_and_missing_python_is_named(netns: NetnsCluster,
                                                                tmp_path: Path) -> None:
    key = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    # a config without the cluster's key: -i adds to the config's IdentityFile
    config = tmp_path / "config"
    config.write_text(netns.ssh_config.read_text().replace("IdentityFile", "#IdentityFile"))
    wrong = launcher(netns, ssh=SshSpec(config=str(config), identity_file=str(key),
                                        options=(("IdentityAgent", "none"),),
                                        connect_timeout_s=3))
    missing = launcher(netns, python="/no/such/python")
    try:
        refused = wrong.run(ProbeCall("host"), ["node1"], 30)["node1"]
        assert refused.error is ErrorKind.AUTH_REFUSED, refused.describe()
        absent = missing.run(ProbeCall("host"), ["node1"], 30)["node1"]
        assert absent.error is ErrorKind.INTERPRETER_MISSING, absent.describe()
        assert absent.message == "'/no/such/python' not found on the node (check cluster.python)"
    finally:
        wrong.close()
        missing.close()


@pytest.mark.realcomponents
def test_a_node_off_the_network_fails_at_connect(netns: NetnsCluster) -> None:
    ssh = launcher(netns)
    subprocess.run(["ip", "-n", netns.netns("node2"), "link", "set", "eth0", "down"],
                   check=True)
    try:
        results = ssh.run(ProbeCall("host"), netns.nodes, 60)
    finally:
        subprocess.run(["ip", "-n", netns.netns("node2"), "link", "set", "eth0", "up"],
                       check=True)
        ssh.close()
    assert [n for n, r in results.items() if not r.ok] == ["node2"]
    # ssh's connect timeout (3 s) ended it, not the 60 s probe timeout (that would read
    # `timeout`); bench/fanout.py times it
    assert results["node2"].error is ErrorKind.UNREACHABLE
    assert results["node2"].message == "ssh: node not reachable"
    assert "timed out" in results["node2"].stderr_tail
