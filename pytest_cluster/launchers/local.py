"""The local launcher: every node of the spec is this machine, one process per node."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_cluster.launchers.base import Launcher, ProbeResult, fan_out, run_process
from pytest_cluster.probes import ProbeCall


def probe_command(python: str, call: ProbeCall) -> list[str]:
    """`python - ARGS`: the probe's source comes on stdin, as it will over ssh."""
    return [python, "-", *call.args]


class LocalLauncher(Launcher):
    name = "local"

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        argv = probe_command(self.spec.python, call)
        source = call.source()
        return fan_out(nodes, lambda node: run_process(node, call.name, argv, source, timeout_s),
                       self.spec.parallel)
