"""Distributed jobs: R ranks per node on K nodes with the torch.distributed environment,
started through the cluster's launcher (local, ssh or srun), bounded in time, one result
per rank. Later suites (the interconnect benchmarks) build on this.

    result = run_job(launcher, JobSpec(nodes=("n1", "n2"), ranks_per_node=8,
                                       program=ALL_REDUCE, init_timeout_s=60))
    result.raise_for_failure()   # JobFailed names the node and rank
"""

from __future__ import annotations

import base64
import math
import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_cluster.errors import JobFailed
from pytest_cluster.launchers.fanout import in_parallel
from pytest_cluster.launchers.result import ErrorKind
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


#: How job_node says it ended its ranks at the job's wall clock.
WALL_CLOCK = "wall-clock limit of "
#: A log line, not a reason: torch's c10 log ('[W1127 10:00:00.1 ...] ...', '[I ...'),
#: Python's warnings ('/home/me/x.py:3: UserWarning: ...', the source line it quotes below it,
#: indented). Matched at the start of a line without its leading blanks (a leading `\s*`
#: in the pattern made a line of blanks quadratic: 20 kB took 3 s).
_LOG_LINE = re.compile(r"\[[WI]\d*[ \]]|.*\wWarning: |warnings\.warn\(")
#: torchrun's and torch's prefix of a rank's lines ('[rank1]: '), read past.
_RANK_PREFIX = re.compile(r"\[rank\d+\]: ?")
#: A line that says why a process ended: an exception, a crash, the kernel's words.
_ERROR_LINE = re.compile(r"Traceback|Error|Exception|Killed|Fatal|FATAL|Abort|abort"
                         r"|Segmentation fault|core dumped|[Oo]ut of memory|terminate called"
                         r"|panic")
#: What a rank that gave up waiting on the rendezvous store says (a symptom of a peer).
_STORE_WAIT = re.compile(r"DistStoreError|wait timeout after \d+ms|waiting for clients"
                         r"|socket has timed out")
#: What a rank says when a peer went away or could not be reached (gloo, NCCL, sockets):
#: a symptom of another rank's end, never its own fault.
_PEER_LOST = re.compile(r"[Cc]onnection (closed|reset) by peer|[Cc]onnection refused"
                        r"|remote worker crash|remote process exited|[Bb]roken pipe"
                        r"|communicator was aborted|ncclRemoteError"
                        r"|collective operation timeout")


def _said(stderr_tail: str) -> list[str]:
    """The lines of a rank's stderr that may say why it ended, in order: not a warning or
    log line, nor the indented lines under one (the source line a warning quotes);
    torch's '[rankN]: ' prefix dropped."""
    lines: list[str] = []
    under_log = False
    for raw in stderr_tail.splitlines():
        line = _RANK_PREFIX.sub("", raw, count=1) if raw.startswith("[rank") else raw
        if not line.strip():
            under_log = False
            continue
        if _LOG_LINE.match(line.lstrip()):
            under_log = True
            continue
        if under_log and line[:1].isspace():
            continue
        under_log = False
        lines.append(line.strip()[:300])
    return lines


def reason_line(stderr_tail: str) -> str:
    """The line of a rank's stderr that says why it ended: the last that reads as an
    error (an exception, 'Killed', a crash), else the last that is not a warning or log
    line (nor the source line a warning quotes); '' when there is none."""
    lines = _said(stderr_tail)
    return next((line for line in reversed(lines) if _ERROR_LINE.search(line)),
                lines[-1] if lines else "")


def lost_a_peer(stderr_tail: str) -> bool:
    """Whether the rank ended because of another: the store timed out waiting for the
    others, a peer's connection closed or was refused (a symptom, never the culprit)."""
    line = reason_line(stderr_tail)
    return _STORE_WAIT.search(line) is not None or _PEER_LOST.search(line) is not None


def how_ended(exit_code: int | str | None) -> str:
    """How a rank ended, in words: 'was killed by SIGKILL (signal 9)' (a negative exit
    code is the signal that ended it), 'exited with code 1', 'gave no sign of life and was
    killed' (its node's watchdog), 'was killed by its node'."""
    if exit_code == "stalled":
        return "gave no sign of life and was killed"
    if exit_code == "killed":
        return "was killed by its node"
    if isinstance(exit_code, int) and exit_code < 0:
        try:
            name = f"{signal.Signals(-exit_code).name} (signal {-exit_code})"
        except ValueError:
            name = f"signal {-exit_code}"
        return f"was killed by {name}"
    if exit_code != 0:
        return f"exited with code {exit_code}"
    return "printed no JSON result"


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
    progress: Mapping[str, object] | None = None
    #: the longest its progress went unwritten, as its node saw (a stall timeout's job)
    longest_silent_s: float | None = None
    #: its measured steps' times as it last wrote them (probes/jobs/train.py's steps file):
    #: what is left of a rank killed before it printed its result
    steps: Mapping[str, object] | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.data is not None

    @property
    def crashed(self) -> bool:
        """It ended by itself, failing, without a word of its own: a signal or a non-zero
        exit, no JSON result (a rank that reports its own end, a watchdog's, did not
        crash), not because a peer went away (lost_a_peer)."""
        return (isinstance(self.exit_code, int) and self.exit_code != 0
                and self.data is None and not lost_a_peer(self.stderr_tail))


@dataclass(frozen=True)
class JobResult:
    ranks: tuple[RankResult, ...]
    master_addr: str
    errors: tuple[str, ...] = field(default_factory=tuple)  # per node, when it did not run
    simulated: bool = False  # a node's part was simulated (ProbeResult.simulated)
    #: (node, why it killed its ranks) for each node that did: 'wall-clock limit of 300 s
    #: reached', 'rank 2 gave no sign of life for 8.1 s'
    stopped: tuple[tuple[str, str], ...] = ()
    #: (node, the launcher's error kind: 'unreachable', 'timeout', ...) for each node
    #: whose part did not run (its line in `errors`)
    error_kinds: tuple[tuple[str, str], ...] = ()

    @property
    def wall_clock(self) -> str:
        """'wall-clock limit of 300 s reached' when a node ended its ranks at the job's
        wall clock; ''."""
        return next((why for _, why in self.stopped if why.startswith(WALL_CLOCK)), "")

    @property
    def ok(self) -> bool:
        return not self.errors and all(r.ok for r in self.ranks)

    def own_failure(self) -> RankResult | None:
        """The rank whose own end failed the job, where the evidence puts it on its node:
        it crashed (RankResult.crashed: a signal, an error) and ended first of those that
        did, while every other failed rank of another node ended because of it (killed by
        its node, a peer gone, its own report). None where the job's wall clock ended it,
        a node's part did not answer, a rank went silent (a hang: the progress names it),
        or ranks of two nodes or more crashed (no one node's fault: the program's, the
        tool's): then no node is blamed."""
        if self.errors or self.wall_clock or any(r.exit_code == "stalled"
                                                 for r in self.ranks):
            return None
        crashed = sorted((r for r in self.ranks if r.crashed),
                         key=lambda r: (r.ended_at or 0.0, r.rank))
        if not crashed or len({r.node for r in crashed}) > 1:
            return None
        return crashed[0]

    def first_failure(self) -> str:
        """The rank that failed first (the others usually fail because of it): one whose
        own end failed the job (own_failure), else a rank that went silent before one
        that failed by itself, before one that gave up on a peer (the store, a closed
        connection: a symptom, never the culprit), before one its node killed. Ranks that
        were all killed say why their node killed them (the wall clock), not what they
        last printed (a torch warning is no reason). A rank killed by a signal says which
        ('was killed by SIGKILL (signal 9)'); the line of its stderr quoted is the last
        that reads as an error (reason_line), never a warning."""
        if self.errors:
            return self.errors[0]
        failed = sorted((r for r in self.ranks if not r.ok),
                        key=lambda r: (r.exit_code == "killed", r.exit_code != "stalled",
                                       lost_a_peer(r.stderr_tail), r.ended_at or 0.0))
        if not failed:
            return ""
        first = self.own_failure() or failed[0]
        others = f" ({len(failed) - 1} other rank(s) failed too)" if len(failed) > 1 else ""
        if first.exit_code == "killed":
            why = dict(self.stopped).get(first.node, "")
            return (f"{why}: every rank was killed by its node" if why else
                    f"{first.node} rank {first.rank} was killed by its node{others}")
        tail = reason_line(first.stderr_tail)
        return (f"{first.node} rank {first.rank} {how_ended(first.exit_code)}"
                + (f": {tail}" if tail else "") + others)

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


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) else None


def node_ranks(payload: Mapping[str, object], node_rank: int,
               per_node: int) -> tuple[list[tuple[Any, ...]], str]:
    """A node's answer read as its ranks' records (RankResult's fields after the node),
    and '' ; or none and what is wrong with it: no `ranks` list, an entry that is no
    rank's record, a rank number that is not one of this node's (node_rank x per_node
    and the next per_node), one said twice. A node's answer is not trusted: what it got
    wrong is its part's bad output, never the controller's exception."""
    found = payload.get("ranks")
    if not isinstance(found, list):
        return [], f"its answer has no list of ranks (ranks is {type(found).__name__})"
    first = node_rank * per_node
    mine: list[tuple[Any, ...]] = []
    seen: set[int] = set()
    for place, rank in enumerate(found[:per_node + 1]):
        if not isinstance(rank, dict):
            return [], f"ranks[{place}] is no rank's record ({type(rank).__name__})"
        number, local, code = rank.get("rank"), rank.get("local_rank"), rank.get("exit_code")
        if not isinstance(number, int) or isinstance(number, bool) \
                or not first <= number < first + per_node or number in seen:
            return [], (f"ranks[{place}] says rank {str(number)[:20]}, not one of this "
                        f"node's ranks {first} to {first + per_node - 1} (once each)")
        if not isinstance(local, int) or isinstance(local, bool) or local != number - first:
            return [], f"ranks[{place}] says local rank {str(local)[:20]} for rank {number}"
        if not (code is None or isinstance(code, str)
                or (isinstance(code, int) and not isinstance(code, bool))):
            return [], f"ranks[{place}] says exit code {str(code)[:20]}"
        data, tail = rank.get("data"), rank.get("stderr_tail")
        seen.add(number)
        steps, progress = rank.get("steps"), rank.get("progress")
        mine.append((number, local, code if not isinstance(code, str) else code[:100],
                     data if isinstance(data, dict) else None,
                     tail if isinstance(tail, str) else "",
                     _number(rank.get("ended_at")),
                     progress if isinstance(progress, dict) else None,
                     _number(rank.get("longest_silent_s")),
                     steps if isinstance(steps, dict) else None))
    if len(found) > per_node:
        return [], f"it answered {len(found)} ranks, more than its {per_node}"
    return mine, ""


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
    index_of = {node: index for index, node in enumerate(job.nodes)}
    ranks: list[RankResult] = []
    errors: list[str] = []
    stopped: list[tuple[str, str]] = []
    kinds: list[tuple[str, str]] = []
    for node, result in zip(job.nodes, results, strict=True):
        if not result.ok:
            errors.append(f"{node}: {result.describe()}")
            kinds.append((node, result.error.value if result.error else "failed"))
            continue
        payload = result.payload()
        mine, wrong = node_ranks(payload, index_of[node], job.ranks_per_node)
        if wrong:  # the node's answer is not its ranks' records: its part, bad output
            errors.append(f"{node}: job_node probe bad_output: {wrong}")
            kinds.append((node, ErrorKind.BAD_OUTPUT.value))
            continue
        why = payload.get("killed_because")
        if isinstance(why, str) and why:
            stopped.append((node, why[:300]))
        ranks.extend(RankResult(node, *rank) for rank in mine)
    return JobResult(tuple(sorted(ranks, key=lambda r: r.rank)), master, tuple(errors),
                     simulated=any(result.simulated for result in results),
                     stopped=tuple(stopped), error_kinds=tuple(kinds))
