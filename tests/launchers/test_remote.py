"""launchers/remote.py: the controller's side of the node runner: its command line, what
it reads on stdin, and its exit codes turned into our error kinds."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_cluster.launchers.node_runner import HUNG_UP, NOT_FOUND, TIMED_OUT
from pytest_cluster.launchers.remote import (
    RUNNER_SOURCE,
    classify_runner_exit,
    killed_on_node,
    runner_argv,
    runner_payload,
)
from pytest_cluster.launchers.result import ErrorKind, ProbeResult
from tests.launchers.test_node_runner import finish


def test_the_runner_command_line_is_exact() -> None:
    assert runner_argv("/opt/py thon/bin/python", 42.5, ("--path", "/data; rm -rf /")) == [
        "/opt/py thon/bin/python", "-c", RUNNER_SOURCE, "42.5", "/opt/py thon/bin/python",
        "--path", "/data; rm -rf /"]
    assert runner_argv("python3", 600.0, ())[3] == "600"


def test_the_payload_gives_the_sources_length_in_bytes() -> None:
    source = "print('\u00e9t\u00e9 \u2603')\n"
    size, _, rest = runner_payload(source).partition("\n")
    assert int(size) == len(source.encode()) > len(source)
    assert rest == source


def test_the_runner_started_so_reads_a_source_that_is_not_ascii_whole() -> None:
    """The length counted in characters would cut the source short (a SyntaxError)."""
    source = "import sys\nprint('\u00e9t\u00e9', sys.argv[1:])\n"
    process = subprocess.Popen(runner_argv(sys.executable, 30, ("--x", "a b")),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdin is not None
    process.stdin.write(runner_payload(source).encode())
    process.stdin.flush()
    out, err = finish(process)  # stdin held open, as the controller does
    assert (process.returncode, out.decode()) == (0, "\u00e9t\u00e9 ['--x', 'a b']\n"), err


def crashed(code: int | None) -> ProbeResult:
    return ProbeResult("n1", "host", None, ErrorKind.CRASHED, "the probe exited with an error",
                       exit_code=code, stderr_tail="e")


@pytest.mark.parametrize(("code", "within", "kind", "message"), [
    (NOT_FOUND, None, ErrorKind.INTERPRETER_MISSING,
     "'/usr/bin/python3' not found on the node (check cluster.python)"),
    (TIMED_OUT, "5 s (cluster.probe_timeout)", ErrorKind.TIMEOUT,
     "no answer within 5 s (cluster.probe_timeout); killed on the node"),
    (TIMED_OUT, None, ErrorKind.TIMEOUT, "killed on the node at its timeout"),
    (HUNG_UP, None, ErrorKind.UNREACHABLE, "the connection dropped; probe killed"),
])
def test_the_runners_own_exit_codes_are_our_kinds(code: int, within: str | None,
                                                  kind: ErrorKind, message: str) -> None:
    result = classify_runner_exit(crashed(code), "/usr/bin/python3", within)
    assert (result.error, result.message, result.exit_code, result.stderr_tail) == (
        kind, message, code, "e")


@pytest.mark.parametrize("code", [1, 3, 137, None])
def test_any_other_crash_is_kept_as_it_is(code: int | None) -> None:
    """The probe's own exit code (137 included: the ssh launcher reads that one)."""
    result = crashed(code)
    assert classify_runner_exit(result, "python3", "5 s") is result


def test_a_result_that_did_not_crash_is_kept_whatever_its_exit_code() -> None:
    timed_out = ProbeResult("n1", "host", None, ErrorKind.TIMEOUT, "no answer", exit_code=124)
    ok = ProbeResult("n1", "host", {"cpu": {}}, exit_code=0)
    assert classify_runner_exit(timed_out, "python3") is timed_out
    assert classify_runner_exit(ok, "python3") is ok


def test_a_probe_the_node_killed_says_the_timeout_that_applied() -> None:
    assert killed_on_node("1.5 s") == "no answer within 1.5 s; killed on the node"
