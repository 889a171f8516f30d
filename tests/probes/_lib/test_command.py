"""probes/_lib/command.py: a tool run to its end or its time limit, the end of its output."""

from __future__ import annotations

import sys

from pytest_cluster.probes._lib.command import MAX_STDOUT, run_command


def test_a_run_keeps_its_exit_code_and_the_end_of_what_it_printed() -> None:
    line = [sys.executable, "-c", f"print('x' * {MAX_STDOUT} + 'END'); raise SystemExit(3)"]
    done = run_command(line, 60)
    assert (done["argv"], done["exit_code"]) == (line, 3)
    assert len(done["stdout"]) == MAX_STDOUT and done["stdout"].endswith("END\n")


def test_a_missing_tool_and_one_past_its_limit_say_so() -> None:
    assert run_command(["/nonexistent/tool"], 60)["exit_code"] == "not_found"
    slow = run_command([sys.executable, "-c", "import time; print('started', flush=True); "
                        "time.sleep(60)"], 1)
    assert slow["exit_code"] == "timeout"
