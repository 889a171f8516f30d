"""The sim launcher: a cluster described in the spec's `sim:` section, for demos and tests.

It answers the same probe calls as a real launcher, as a mock transport answers requests.
The GPU probe is the real probe program, run as a process with the simulated NVML
binding (pytest_cluster/sim/nvml) first on its path and the node's description in its
environment; only the binding is swapped. Host facts and torch measurements come from
the description (pytest_cluster.sim.cluster). Distributed jobs (job_node) meet at a
simulated rendezvous and the collective benchmark's ranks answer from the description and
the spec's links (pytest_cluster.sim.job_node, sim.collectives): a benchmark takes the
same path through jobs.run_job as on real nodes. Every result is marked simulated.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_cluster.errors import BadAnswer
from pytest_cluster.launchers.base import Launcher
from pytest_cluster.launchers.fanout import fan_out
from pytest_cluster.launchers.process import INTERRUPTED_MESSAGE, interrupted, run_process
from pytest_cluster.launchers.result import ErrorKind, ProbeResult, ProgramRun
from pytest_cluster.probes.job_node import RankEntry
from pytest_cluster.sim.answers import JOBS, PROBES, job_named
from pytest_cluster.sim.cluster import describe_node, node_is_down
from pytest_cluster.sim.collectives import doubling, nccl_tests_run
from pytest_cluster.sim.job_node import (
    Rendezvous,
    failed_ranks,
    read_node_call,
    whereami,
)

if TYPE_CHECKING:
    from pytest_cluster.contract.model import ClusterSpec, InterconnectSpec, Spec
    from pytest_cluster.contract.sections.sim_records import SimSpec
    from pytest_cluster.probes import ProbeCall
    from pytest_cluster.probes.job_node import JobNodeData, WhereAmI
    from pytest_cluster.sim.cluster import SimNode

RankEntries = list[RankEntry]


class _Cancelled(Exception):
    """The run was interrupted while a simulated job waited for its nodes."""

SIM_NVML_DIR = Path(__file__).resolve().parent.parent / "sim" / "nvml"
NODE_ENV = "PYTEST_CLUSTER_SIM_NODE"


def gpu_probe_env(base: dict[str, str], description: SimNode) -> dict[str, str]:
    """The environment of a GPU probe on a simulated node: the simulated pynvml first."""
    env = dict(base)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(SIM_NVML_DIR) + (os.pathsep + path if path else "")
    env[NODE_ENV] = json.dumps(description, allow_nan=False)
    return env


#: A simulated probe's latency is waited out in steps this long, each ending early when
#: the run is interrupted (Ctrl-C, SIGTERM), as a real probe is stopped at once.
WAIT_STEP_S = 0.05


def _waited(seconds: float) -> bool:
    """Wait `seconds` (sim.latency); False, at once, when the run is interrupted."""
    end = time.monotonic() + seconds
    while not interrupted():
        left = end - time.monotonic()
        if left <= 0:
            return True
        time.sleep(min(WAIT_STEP_S, left))
    return False


class SimLauncher(Launcher):
    name = "sim"

    def __init__(self, spec: ClusterSpec, sim: SimSpec,
                 interconnect: InterconnectSpec | None = None) -> None:
        """`interconnect`: the links the simulated nodes have (its intra_node and
        inter_node rates); None: NVLink-like and 8 x 400 Gb/s per node."""
        super().__init__(spec)
        self.sim = sim
        self.interconnect = interconnect
        self.rendezvous: Rendezvous[RankEntries] = Rendezvous()

    @classmethod
    def from_spec(cls, spec: Spec) -> Launcher:
        if spec.sim is None:  # the spec loader refuses this; a programming error here
            raise ValueError("launcher sim needs the spec's sim section")
        return cls(spec.cluster, spec.sim, spec.interconnect)

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        return fan_out(nodes, lambda node: self.run_one(call, node, timeout_s),
                       self.spec.parallel)

    def run_one(self, call: ProbeCall, node: str, timeout_s: float) -> ProbeResult:
        started = time.time()
        if self.sim.latency_s and not _waited(self.sim.latency_s):
            return ProbeResult(node=node, probe=call.name, data=None, simulated=self.simulated,
                               error=ErrorKind.CANCELLED, started_at=started,
                               message=INTERRUPTED_MESSAGE)
        down = node_is_down(self.sim, node)
        if down is not None:
            return ProbeResult(node=node, probe=call.name, data=None, simulated=self.simulated,
                               error=ErrorKind.UNREACHABLE, started_at=started,
                               message=f"simulated: the node does not answer (sim fault at "
                                       f"spec line {down.line})")
        if call.name == "gpu":
            # -S: the probe needs the standard library and the simulated pynvml only, and
            # a thousand nodes start a thousand interpreters
            argv = [sys.executable, "-S", "-", *call.args, "--no-kernel-log"]
            env = gpu_probe_env(dict(os.environ), describe_node(self.sim, node))
            return run_process(node, call.name, argv, call.source(), timeout_s, env=env,
                               simulated=self.simulated, within=self.timeout_text(timeout_s),
                               limit=self.spec.probe_output_bytes)
        try:
            if call.name == "job_node":
                data = dict(self.job_node(call, node))
            elif call.name in PROBES:
                data = dict(PROBES[call.name](self.sim, self.interconnect, node, call.args))
            else:
                raise ValueError(f"the sim launcher does not simulate the {call.name} probe")
        except BadAnswer as exc:  # an extension's answer, not of the probe's shape
            return ProbeResult(node=node, probe=call.name, data=None, simulated=self.simulated,
                               error=ErrorKind.BAD_OUTPUT, started_at=started, message=str(exc))
        except ValueError as exc:
            return ProbeResult(node=node, probe=call.name, data=None, simulated=self.simulated,
                               error=ErrorKind.CRASHED, started_at=started, message=str(exc))
        except _Cancelled:
            return ProbeResult(node=node, probe=call.name, data=None, simulated=self.simulated,
                               error=ErrorKind.CANCELLED, started_at=started,
                               message=INTERRUPTED_MESSAGE)
        return ProbeResult(node=node, probe=call.name, data=data, simulated=self.simulated,
                           started_at=started, exit_code=0)

    def run_program(self, argv: Sequence[str], nodes: Sequence[str], tasks_per_node: int,
                    timeout_s: float) -> ProgramRun | None:
        """nccl-tests across simulated nodes (the only program the sim runs), one step:
        a node that does not answer ends it as srun would."""
        down = next((n for n in nodes if node_is_down(self.sim, n) is not None), None)
        if down is not None:
            return ProgramRun("unavailable", "", f"simulated: {down} does not answer",
                              simulated=True)
        line = list(argv)
        options = dict(zip(line[1::2], line[2::2], strict=False))
        try:
            run = nccl_tests_run(self.sim, self.interconnect, os.path.basename(line[0]),
                                 nodes, doubling(int(options["-b"]), int(options["-e"])),
                                 tasks_per_node, int(options.get("-g", "1")),
                                 int(options.get("-n", "20")))
        except (KeyError, ValueError) as exc:
            return ProgramRun(1, "", f"simulated: {exc}", simulated=True)
        return ProgramRun(run.exit_code, run.stdout, run.stderr, simulated=True)

    def job_node(self, call: ProbeCall, node: str) -> WhereAmI | JobNodeData:
        """job_node's answer on a simulated node: where it is, or its ranks' results once
        every node of the job has joined (the collective benchmark only). ValueError for
        what the sim cannot answer; _Cancelled when the run was interrupted."""
        part = read_node_call(call.args)
        if part is None:
            return whereami(node)
        name = job_named(part.program)
        if name is None:
            raise ValueError("the sim launcher simulates no job but these rank programs: "
                             + ", ".join(f"probes/{n}.py" for n in JOBS))
        play = JOBS[name]

        def answer(nodes: tuple[str, ...]) -> list[RankEntries]:
            ranks: list[RankEntries] = play(self.sim, self.interconnect, nodes, part)
            return ranks

        share = self.rendezvous.join(part, node, answer, interrupted)
        if isinstance(share, str):
            if interrupted():
                raise _Cancelled
            return {"ranks": failed_ranks(part, share), "killed_because": share,
                    "gloo_socket_ifname": None}
        failed = next((r for r in share if r["exit_code"] != 0), None)
        return {"ranks": share, "gloo_socket_ifname": None, "killed_because":
                f"rank {failed['rank']} exited with code {failed['exit_code']}" if failed
                else ""}
