"""launchers/fanout.py: the same work for many nodes in threads, results in order, and
Ctrl-C during a fan-out ends every probe it started."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pytest_cluster.launchers import ProbeResult
from pytest_cluster.launchers.fanout import fan_out
from tests.launchers.test_process import assert_gone


def test_fan_out_is_parallel_and_ordered() -> None:
    seen: list[str] = []

    def one(node: str) -> ProbeResult:
        seen.append(node)
        return ProbeResult(node=node, probe="host", data={"n": node})

    results = fan_out([f"n{i}" for i in range(20)], one, parallel=4)
    assert list(results) == [f"n{i}" for i in range(20)]
    assert sorted(seen) == sorted(results)


def test_interrupt_kills_probes_on_every_node(tmp_path: Path) -> None:
    """Ctrl-C while nodes are probed in parallel leaves no probe process behind."""
    import signal
    import subprocess as sp
    import textwrap

    pids = tmp_path / "pids"
    pids.mkdir()
    driver = textwrap.dedent(f"""
        import sys
        from pytest_cluster.launchers.fanout import fan_out
        from pytest_cluster.launchers.process import run_process
        script = ("import os, time\\n"
                  "open(os.path.join({str(pids)!r}, str(os.getpid())), 'w').close()\\n"
                  "time.sleep(120)\\n")
        fan_out(["a", "b", "c"], lambda n: run_process(n, "host", [sys.executable, "-"],
                script, 300), parallel=3)
    """)
    process = sp.Popen([sys.executable, "-c", driver])
    for _ in range(100):
        if len(list(pids.iterdir())) == 3:
            break
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    assert process.wait(30) != 0
    for pid_file in pids.iterdir():
        assert_gone(int(pid_file.name))
