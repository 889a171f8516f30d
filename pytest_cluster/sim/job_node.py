"""The job_node probe on simulated nodes: a distributed job answered as real nodes would.

`--whereami`: a simulated node is reached on its name. A node's part of a job (the
arguments jobs.node_call gives) joins the job's rendezvous at MASTER_ADDR:MASTER_PORT, as
real ranks do, and waits there (up to the job's init timeout) for the other nodes' parts;
once all have joined, the whole job is answered at once (sim/collectives.job_ranks) and
each part takes its own node's ranks. The only program simulated is the collective
benchmark (probes/jobs/collective.py).
"""

from __future__ import annotations

import base64
import binascii
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from pytest_cluster.probes.job_node import RankEntry, WhereAmI

Share = TypeVar("Share")
#: How often a part waiting at the rendezvous looks whether the run was interrupted.
POLL_S = 0.1
_OPTIONS = {"--master-addr": "master_addr", "--master-port": "master_port",
            "--node-rank": "node_rank", "--nnodes": "nnodes",
            "--ranks-per-node": "ranks_per_node", "--init-timeout": "init_timeout_s",
            "--wall-timeout": "wall_timeout_s", "--program": "program"}


@dataclass(frozen=True)
class NodePart:
    """One node's part of a job: the job_node probe's arguments (see jobs.node_call)."""

    master_addr: str
    master_port: int
    node_rank: int
    nnodes: int
    ranks_per_node: int
    init_timeout_s: float
    wall_timeout_s: float
    program: str  # the rank program's source
    rank_args: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()  # what the job sets on its ranks (a rail)

    @property
    def job(self) -> tuple[str, int]:
        """Which job the part belongs to: where its ranks meet."""
        return self.master_addr, self.master_port


def _assignment(text: str) -> tuple[str, str]:
    """An --env argument, 'NAME=value', as its name and value."""
    name, _, value = text.partition("=")
    return name, value


def read_node_call(args: Sequence[str]) -> NodePart | None:
    """The part of a job a job_node call asks for; None for `--whereami`. ValueError says
    what is wrong with the arguments."""
    if list(args) == ["--whereami"]:
        return None
    ours, rank_args = (args[:list(args).index("--")], args[list(args).index("--") + 1:]) \
        if "--" in args else (args, ())
    if len(ours) % 2 or any(name not in _OPTIONS and name != "--env" for name in ours[::2]):
        raise ValueError(f"not job_node's arguments: {list(ours)}")
    pairs = list(zip(ours[::2], ours[1::2], strict=True))
    given = {_OPTIONS[name]: value for name, value in pairs if name != "--env"}
    env = tuple(_assignment(value) for name, value in pairs if name == "--env")
    if set(given) != set(_OPTIONS.values()):
        missing = sorted(set(_OPTIONS) - set(ours[::2]))
        raise ValueError(f"job_node needs {', '.join(missing)}")
    try:
        program = base64.b64decode(given["program"], validate=True).decode()
        part = NodePart(given["master_addr"], int(given["master_port"]),
                        int(given["node_rank"]), int(given["nnodes"]),
                        int(given["ranks_per_node"]), float(given["init_timeout_s"]),
                        float(given["wall_timeout_s"]), program, tuple(rank_args), env)
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"the program is not base64 of a text: {exc}") from None
    if not 0 <= part.node_rank < part.nnodes or part.ranks_per_node < 1:
        raise ValueError(f"node rank {part.node_rank} of {part.nnodes} node(s), "
                         f"{part.ranks_per_node} rank(s) each")
    return part


def whereami(node: str) -> WhereAmI:
    """job_node --whereami on a simulated node: its name is its address."""
    return {"addresses": [node], "hostname": node}


def failed_ranks(part: NodePart, why: str) -> list[RankEntry]:
    """This node's ranks when the job could not start: each exits with code 1 saying why
    (as torch does when init_process_group gives up)."""
    first = part.node_rank * part.ranks_per_node
    return [{"rank": first + local, "local_rank": local, "exit_code": 1, "ended_at": None,
             "data": None, "stderr_tail": why} for local in range(part.ranks_per_node)]


@dataclass
class _Meeting(Generic[Share]):
    size: int
    nodes: dict[int, str] = field(default_factory=dict)  # node rank -> node
    shares: Sequence[Share] | None = None
    left: int = 0
    crashed: str = ""  # why the answer raised: the job is over for every part


class Rendezvous(Generic[Share]):
    """Where the parts of simulated jobs meet, one meeting per MASTER_ADDR:PORT. Each part
    waits until every node of its job has joined, the job's init timeout has passed, or
    `cancelled()` says the run was interrupted; the part that completes the job answers
    it for all (`answer(nodes in rank order)`: one share per node). An answer that raises
    (a bug of the sim's) ends the job for every part at once: the part that answered
    raises it, the others say so, none waits out the init timeout for it."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._meetings: dict[tuple[str, int], _Meeting[Share]] = {}

    def join(self, part: NodePart, node: str,
             answer: Callable[[tuple[str, ...]], Sequence[Share]],
             cancelled: Callable[[], bool]) -> Share | str:
        """This node's share of the job, or why there is none."""
        deadline = time.monotonic() + part.init_timeout_s
        with self._changed:
            meeting = self._meetings.setdefault(part.job, _Meeting(part.nnodes))
            if meeting.size != part.nnodes or part.node_rank in meeting.nodes:
                return (f"simulated: the rendezvous at {part.master_addr}:"
                        f"{part.master_port} is another job's")
            meeting.nodes[part.node_rank] = node
            if len(meeting.nodes) == meeting.size:
                try:
                    meeting.shares = answer(tuple(meeting.nodes[r]
                                                  for r in range(meeting.size)))
                except Exception as exc:
                    meeting.crashed = f"{type(exc).__name__}: {exc}"
                    if self._meetings.get(part.job) is meeting:
                        del self._meetings[part.job]
                    raise
                finally:
                    self._changed.notify_all()
            while meeting.shares is None and not meeting.crashed and not cancelled():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(min(left, POLL_S))
            meeting.left += 1
            over = meeting.shares is None or meeting.left == meeting.size
            if over and self._meetings.get(part.job) is meeting:
                del self._meetings[part.job]
            if meeting.crashed:
                return (f"simulated: the job's answer crashed on another node's part "
                        f"({meeting.crashed})")
            if meeting.shares is None:
                return (f"simulated: the rendezvous at {part.master_addr}:{part.master_port} "
                        f"timed out after {part.init_timeout_s:g} s with {len(meeting.nodes)} "
                        f"of {meeting.size} node(s)")
            return meeting.shares[part.node_rank]
