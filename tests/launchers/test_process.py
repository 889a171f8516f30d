"""launchers/process.py: a probe run as a process and every way it ends mapped to a
ProbeResult (a crash, a timeout that kills its whole group, output that is not JSON or
runs past its bound), and which launches may start after Ctrl-C."""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import sys
import time
import warnings
from pathlib import Path

import pytest

from pytest_cluster.launchers import ErrorKind
from pytest_cluster.launchers.process import run_process


def assert_gone(pid: int, seconds: float = 5.0) -> None:
    """The process `pid` has exited (is not alive, nor a zombie of ours) within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail(f"process {pid} is still alive")


@pytest.mark.slow
def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    script = ("import os, subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              f"open({str(marker)!r}, 'w').write(str(child.pid))\n"
              "time.sleep(60)\n")
    result = run_process("n1", "host", [sys.executable, "-"], script, timeout_s=1.5)
    assert result.error is ErrorKind.TIMEOUT
    assert result.message == "no answer within 1.5 s; killed"
    assert_gone(int(marker.read_text()))


def test_crash_keeps_exit_code_and_stderr() -> None:
    result = run_process("n1", "host", [sys.executable, "-"],
                         "import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n", 30)
    assert result.error is ErrorKind.CRASHED
    assert result.exit_code == 3
    assert result.describe() == ("n1: host probe crashed: the probe exited with an error "
                                 "(exit code 3) | stderr: boom")


def test_a_launch_leaves_no_pipe_open() -> None:
    """Each pipe to a probe is closed once read: one left open is a ResourceWarning, which
    a run under -W error (a project's filterwarnings) makes an error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for _ in range(3):
            run_process("n1", "host", [sys.executable, "-c", "print('{}')"], "", 30)
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_node_that_prints_without_end_fails_its_probe_not_the_controller(
        stream: str) -> None:
    """A node printing 400 MB (on either stream) costs its probe, named with the stream
    and what was seen, within the limit's memory: it is stopped at the first byte past
    the limit, not at its timeout, and what it printed is not kept."""
    limit = 2**20
    script = (f"import sys\nout = sys.{stream}.buffer\nfor _ in range(400):\n"
              "    out.write(b'x' * 2**20)\n")
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run_process("n1", "host", [sys.executable, "-"], script, 60, limit=limit)
    assert time.monotonic() - started < 30  # stopped, not waited out to its timeout
    assert result.error is ErrorKind.BAD_OUTPUT and result.data is None
    assert result.message.startswith("the probe printed too much, so it was stopped: "
                                     f"{stream}: more than 1 MiB (")
    assert "(cluster.probe_output)" in result.message
    assert len(result.stderr_tail) <= 2000
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown < 64 * 2**10  # KiB: the limit's worth, never the 400 MB


def test_output_within_the_limit_is_read_whole() -> None:
    """A probe's answer just under the limit (its JSON on its last line) is read whole,
    and stdin larger than a pipe's buffer reaches it whole."""
    script = ("import json, sys\n"
              f"print('y' * {2**20 - 200})\n"
              "print(json.dumps({'probe': 'host', 'data': {'got': len(sys.stdin.read())}}))\n")
    source = script + "#" + "z" * 300_000 + "\n"
    result = run_process("n1", "host", [sys.executable, "-c", script], source, 60,
                         limit=2**20)
    assert result.ok, result.describe()
    assert result.payload() == {"got": len(source)}


def test_bad_output() -> None:
    result = run_process("n1", "host", [sys.executable, "-"], "print('hello')\n", 30)
    assert result.error is ErrorKind.BAD_OUTPUT
    assert result.message.startswith("the probe's last line is not JSON")


def test_after_ctrl_c_no_probe_starts_anywhere(tmp_path: Path) -> None:
    """Ctrl-C while pool threads of the caller's own (like the interconnect's, one job
    per node group) each run probes one after the other: the running ones end at once,
    and none of those threads starts another; the main thread's cleanup still runs its
    probe (a shared check removing its file)."""
    import signal
    import subprocess as sp
    import textwrap

    first, second, cleanup = tmp_path / "first", tmp_path / "second", tmp_path / "cleanup"
    first.mkdir()
    second.mkdir()
    cleanup.mkdir()
    driver = textwrap.dedent(f"""
        import sys
        from concurrent.futures import ThreadPoolExecutor
        from pytest_cluster.launchers.fanout import fan_out
        from pytest_cluster.launchers.process import run_process
        from pytest_cluster.launchers.local import LocalLauncher
        from pytest_cluster.contract.model import ClusterSpec
        LocalLauncher(ClusterSpec("t", ("a",), "local", sys.executable, 60, 8))
        def script(where):
            return ("import os, time\\n"
                    f"open(os.path.join({{where!r}}, str(os.getpid())), 'w').close()\\n"
                    "time.sleep(120)\\n")
        def two(node):
            run_process(node, "host", [sys.executable, "-"], script({str(first)!r}), 300)
            return run_process(node, "host", [sys.executable, "-"], script({str(second)!r}),
                               300)
        try:
            with ThreadPoolExecutor(3) as pool:
                list(pool.map(two, ["a", "b", "c"]))
        finally:
            fan_out(["a"], lambda node: run_process(node, "host", [sys.executable, "-c",
                    f"open({{str({str(cleanup)!r})!r}} + '/done', 'w').close()"], "", 30),
                    1)
    """)
    process = sp.Popen([sys.executable, "-c", driver])
    try:
        for _ in range(100):
            if len(list(first.iterdir())) == 3:
                break
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        assert process.wait(30) != 0  # minutes before: each thread ran both probes
        for pid_file in first.iterdir():
            assert_gone(int(pid_file.name))
        assert list(second.iterdir()) == []
        assert [p.name for p in cleanup.iterdir()] == ["done"]
    finally:  # what a failure left: ours, ended by their ids
        process.kill()
        for pid_file in [*first.iterdir(), *second.iterdir()]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.name), signal.SIGKILL)
