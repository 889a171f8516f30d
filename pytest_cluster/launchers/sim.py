"""The sim launcher: a cluster described in the spec's `sim:` section, for demos and tests.

The GPU probe is the real probe program, run as a process with the simulated NVML
binding (pytest_cluster/sim/nvml) first on its path and the node's description in its
environment; only the binding is swapped. Host facts and torch measurements come from
the description (pytest_cluster.sim.cluster). Every result is marked simulated.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from pytest_cluster.launchers.base import (
    ErrorKind,
    Launcher,
    ProbeResult,
    fan_out,
    run_process,
)
from pytest_cluster.probes import ProbeCall
from pytest_cluster.probes.gpu_perf import parse_options
from pytest_cluster.sim.cluster import describe_node, gpu_perf_payload, host_payload, node_is_down
from pytest_cluster.spec.model import ClusterSpec, SimSpec, Spec

SIM_NVML_DIR = Path(__file__).resolve().parent.parent / "sim" / "nvml"
NODE_ENV = "PYTEST_CLUSTER_SIM_NODE"


def gpu_probe_env(base: dict[str, str], description: dict[str, object]) -> dict[str, str]:
    """The environment of a GPU probe on a simulated node: the simulated pynvml first."""
    env = dict(base)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(SIM_NVML_DIR) + (os.pathsep + path if path else "")
    env[NODE_ENV] = json.dumps(description)
    return env


class SimLauncher(Launcher):
    name = "sim"
    simulated = True

    def __init__(self, spec: ClusterSpec, sim: SimSpec) -> None:
        super().__init__(spec)
        self.sim = sim

    @classmethod
    def from_spec(cls, spec: Spec) -> Launcher:
        if spec.sim is None:  # the spec loader refuses this; a programming error here
            raise ValueError("launcher sim needs the spec's sim section")
        return cls(spec.cluster, spec.sim)

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        return fan_out(nodes, lambda node: self.run_one(call, node, timeout_s),
                       self.spec.parallel)

    def run_one(self, call: ProbeCall, node: str, timeout_s: float) -> ProbeResult:
        started = time.time()
        if self.sim.latency_s:
            time.sleep(self.sim.latency_s)
        down = node_is_down(self.sim, node)
        if down is not None:
            return ProbeResult(node=node, probe=call.name, data=None, simulated=True,
                               error=ErrorKind.UNREACHABLE, started_at=started,
                               message=f"simulated: the node does not answer (sim fault at "
                                       f"spec line {down.line})")
        if call.name == "gpu":
            argv = [sys.executable, "-", *call.args, "--no-kernel-log"]
            env = gpu_probe_env(dict(os.environ), describe_node(self.sim, node))
            return run_process(node, call.name, argv, call.source(), timeout_s, env=env,
                               simulated=True, within=self.timeout_text(timeout_s))
        if call.name == "host":
            data = host_payload(self.sim, node)
        elif call.name == "gpu_perf":
            data = gpu_perf_payload(self.sim, node, parse_options(list(call.args)))
        else:
            return ProbeResult(node=node, probe=call.name, data=None, simulated=True,
                               error=ErrorKind.CRASHED, started_at=started,
                               message=f"the sim launcher does not simulate the {call.name} "
                                       f"probe")
        return ProbeResult(node=node, probe=call.name, data=data, simulated=True,
                           started_at=started, exit_code=0)
