"""The local launcher: every node of the spec is this machine, one process per node."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_cluster.launchers.base import Launcher
from pytest_cluster.launchers.fanout import fan_out
from pytest_cluster.launchers.process import run_process
from pytest_cluster.launchers.result import ErrorKind, ProbeResult

if TYPE_CHECKING:
    from pytest_cluster.probes import ProbeCall


def probe_command(python: str, call: ProbeCall) -> list[str]:
    """`python - ARGS`: the probe's source comes on stdin, as it will over ssh."""
    return [python, "-", *call.args]


def resolve_interpreter(python: str) -> str:
    """The absolute path this machine's PATH gives `python`; unchanged when there is none
    (the run then reports the interpreter missing)."""
    found = shutil.which(python)
    return os.path.abspath(found) if found else python


def name_interpreter(result: ProbeResult, python: str) -> ProbeResult:
    """A crashed probe's message names the interpreter that ran it."""
    if result.error is not ErrorKind.CRASHED:
        return result
    return dataclasses.replace(result, message=f"{python} exited with an error")


class LocalLauncher(Launcher):
    name = "local"

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        python = resolve_interpreter(self.spec.python)
        argv = probe_command(python, call)
        source = call.source()
        within = self.timeout_text(timeout_s)
        return fan_out(nodes, lambda node: name_interpreter(
            run_process(node, call.name, argv, source, timeout_s, within=within,
                        limit=self.spec.probe_output_bytes), python),
            self.spec.parallel)
