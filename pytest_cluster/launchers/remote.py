"""The controller's side of the node runner (node_runner.py), shared by the launchers that
reach other machines (ssh, slurm): how to start it, and what its exit codes mean."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from pytest_cluster.launchers.node_runner import HUNG_UP, NOT_FOUND, TIMED_OUT
from pytest_cluster.launchers.result import ErrorKind, ProbeResult

RUNNER_SOURCE = Path(__file__).with_name("node_runner.py").read_text(encoding="utf-8")


def runner_argv(python: str, timeout_s: float, args: Sequence[str]) -> list[str]:
    """`python -c RUNNER TIMEOUT python ARGS`: the runner starts `python - ARGS` with the
    probe's source, which it reads from stdin."""
    return [python, "-c", RUNNER_SOURCE, f"{timeout_s:g}", python, *args]


def runner_payload(source: str) -> str:
    """What the runner reads from stdin: the source's length in bytes, then the source."""
    return f"{len(source.encode())}\n{source}"


def killed_on_node(within: str) -> str:
    """The message of a probe the node ended at its timeout ('10 s (cluster.probe_timeout)')."""
    return f"no answer within {within}; killed on the node"


def classify_runner_exit(result: ProbeResult, python: str,
                         within: str | None = None) -> ProbeResult:
    """A crashed result whose exit code is the runner's own, turned into our error kinds;
    `within` says the timeout that applied (Launcher.timeout_text)."""
    if result.error is not ErrorKind.CRASHED:
        return result
    found = {
        NOT_FOUND: (ErrorKind.INTERPRETER_MISSING,
                    f"{python!r} not found on the node (check cluster.python)"),
        TIMED_OUT: (ErrorKind.TIMEOUT, killed_on_node(within) if within
                    else "killed on the node at its timeout"),
        HUNG_UP: (ErrorKind.UNREACHABLE, "the connection dropped; probe killed"),
    }.get(result.exit_code or 0)
    if found is None:
        return result
    return dataclasses.replace(result, error=found[0], message=found[1])
