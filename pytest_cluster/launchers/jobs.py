"""Distributed jobs: R ranks per node on K nodes with the torch.distributed environment,
started through the cluster's launcher (local, ssh or srun), bounded in time, one result
per rank. Later suites (the interconnect benchmarks) build on this.

    result = run_job(launcher, JobSpec(nodes=("n1", "n2"), ranks_per_node=8,
                                       program=ALL_REDUCE, init_timeout_s=60))
    result.raise_for_failure()   # JobFailed names the node and rank
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_cluster.errors import JobFailed
from pytest_cluster.launchers.fanout import in_parallel
from pytest_cluster.probes import ProbeCall

if TYPE_CHECKING:
    from pytest_cluster.launchers.base import Launcher
    from pytest_cluster.launchers.result import ProbeResult

__all__ = ["JobFailed", "JobResult", "JobSpec", "RankResult", "node_call", "run_job"]

@dataclass(frozen=True)
class JobSpec:
    nodes: tuple[str, ...]
    program: str  # Python source each rank runs; its last JSON stdout line is its result
    ranks_per_node: int = 1
    args: tuple[str, ...] = ()
    init_timeout_s: float = 60.0  # for init_process_group(timeout=...)
    wall_timeout_s: float = 300.0  # the whole job, hard
    master_port: int = 0  # 0: the launcher's (Launcher.master_port)
    master_addr: str | None = None  # None: the launcher's for the first node
    #: A rank whose progress file (PYTEST_CLUSTER_PROGRESS) goes unwritten this long is
    #: killed by its node (exit_code "stalled"); None: no progress files, no such check
    stall_timeout_s: float | None = None
    #: What each rank's environment must say beyond the rendezvous (which network it
    #: uses: rail_env); names from JOB_ENV only
    env: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for name, value in self.env:
            if name not in JOB_ENV or not ENV_VALUE.fullmatch(value):
                raise ValueError(f"a job cannot set {name}={value[:64]!r} (names: "
                                 f"{', '.join(JOB_ENV)}; values: {ENV_VALUE.pattern})")


#: The environment a job may set on its ranks (the network each uses), and what a value
#: may hold: an interface or HCA name, NCCL's `=` (exact) and `^` (not) prefixes, a port.
JOB_ENV = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_DISABLE")
ENV_VALUE = re.compile(r"[=^]?[A-Za-z0-9_.:,\-]{1,128}")


@dataclass(frozen=True)
class RankResult:
    node: str
    rank: int
    local_rank: int
    exit_code: int | str | None
    data: dict[str, Any] | None
    stderr_tail: str = ""
    ended_at: float | None = None
    #: its last progress, when the job has a stall timeout (job_node.read_progress)
    progress: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.data is not None


@dataclass(frozen=True)
class JobResult:
    ranks: tuple[RankResult, ...]
    master_addr: str
    errors: tuple[str, ...] = field(default_factory=tuple)  # per node, when it did not run
    simulated: bool = False  # a node's part was simulated (ProbeResult.simulated)

    @property
    def ok(self) -> bool:
        return not self.errors and all(r.ok for r in self.ranks)

    def first_failure(self) -> str:
        """The rank that failed first (the others usually fail because of it)."""
        if self.errors:
            return self.errors[0]
        failed = sorted((r for r in self.ranks if not r.ok),
                        key=lambda r: (r.exit_code == "killed", r.ended_at or 0.0))
        if not failed:
            return ""
        first = failed[0]
        tail = first.stderr_tail.strip().splitlines()[-1:] if first.stderr_tail else []
        how = ("was killed" if first.exit_code == "killed"
               else "gave no sign of life and was killed" if first.exit_code == "stalled"
               else f"exited with code {first.exit_code}" if first.exit_code != 0
               else "printed no JSON result")
        return (f"{first.node} rank {first.rank} {how}"
                + (f": {tail[0]}" if tail else "")
                + (f" ({len(failed) - 1} other rank(s) failed too)" if len(failed) > 1 else ""))

    def raise_for_failure(self) -> None:
        if not self.ok:
            raise JobFailed(f"distributed job failed: {self.first_failure()}")


def node_call(job: JobSpec, master_addr: str, port: int, node_rank: int) -> ProbeCall:
    """The job_node probe's arguments for one node."""
    return ProbeCall("job_node", (
        "--master-addr", master_addr, "--master-port", str(port),
        "--node-rank", str(node_rank), "--nnodes", str(len(job.nodes)),
        "--ranks-per-node", str(job.ranks_per_node),
        "--init-timeout", f"{job.init_timeout_s:g}", "--wall-timeout", f"{job.wall_timeout_s:g}",
        "--program", base64.b64encode(job.program.encode()).decode(),
        *(("--stall-timeout", f"{job.stall_timeout_s:g}") if job.stall_timeout_s else ()),
        *(part for name, value in job.env for part in ("--env", f"{name}={value}")),
        "--", *job.args))


def run_job(launcher: Launcher, job: JobSpec) -> JobResult:
    """Start the job on every node at once and wait for all ranks (or the wall clock).
    The master's address and port are the job's, else the launcher's
    (Launcher.master_address, Launcher.master_port)."""
    if not job.nodes:
        raise ValueError("a job needs at least one node")
    port = job.master_port or launcher.master_port()
    master = job.master_addr or launcher.master_address(job.nodes[0], job.init_timeout_s)
    # the launcher's own timeout is a backstop: the node kills its ranks at wall_timeout_s
    timeout = job.wall_timeout_s + 30

    def one(index: int) -> ProbeResult:
        node = job.nodes[index]
        return launcher.run(node_call(job, master, port, index), [node], timeout)[node]

    # Ctrl-C here (the main thread) stops every node's part at once, ranks included
    results = in_parallel(one, range(len(job.nodes)), len(job.nodes))
    ranks: list[RankResult] = []
    errors: list[str] = []
    for node, result in zip(job.nodes, results, strict=True):
        if not result.ok:
            errors.append(f"{node}: {result.describe()}")
            continue
        for rank in result.payload()["ranks"]:
            ranks.append(RankResult(node, rank["rank"], rank["local_rank"], rank["exit_code"],
                                    rank["data"], rank["stderr_tail"], rank["ended_at"],
                                    rank.get("progress")))
    return JobResult(tuple(sorted(ranks, key=lambda r: r.rank)), master, tuple(errors),
                     simulated=any(result.simulated for result in results))
