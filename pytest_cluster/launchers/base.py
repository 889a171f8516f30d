"""The Launcher: runs a probe on nodes and says what it can do (see its docstring). The
result record is in result.py, launched processes and interrupts in process.py, fan-out in
fanout.py; the launchers themselves (local, ssh, slurm, sim) are registered by name in
__init__.py.
"""

from __future__ import annotations

import random
import socket
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.errors import JobFailed
from pytest_cluster.launchers.process import stop_on_interrupt
from pytest_cluster.probes import ProbeCall

if TYPE_CHECKING:
    from pytest_cluster.contract.model import ClusterSpec, Spec
    from pytest_cluster.launchers.result import ProbeResult, ProgramRun

#: The master address of a job whose ranks all run on this machine.
LOOPBACK = "127.0.0.1"
#: The ports a job's master listens on when the nodes' free ports are not known here.
MASTER_PORTS = (29500, 30499)


def free_local_port() -> int:
    """A TCP port free on this machine now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


class Launcher(ABC):
    """Runs a probe on nodes, in parallel, each under a timeout, and says what it can do:
    the rest of the code asks that, never which launcher it is.

    - `name`: the spec's `cluster.launcher` that picks it (the registry's key); for
      messages, not to branch on.
    - `simulated`: every result comes from the spec's description of the cluster, not
      from hardware (the sim); its results are marked simulated, and so is the run
      (report.is_simulated). Declared in KINDS (contract/launchers.py).
    - `one_host`: every "node" is this machine (local): distributed jobs run one at a
      time (they would share its CPUs and network), their master is 127.0.0.1 and their
      port one that is free here. Declared in KINDS.
    - `master_address(node, timeout_s)`: where the other ranks of a job reach its rank 0
      on `node` (MASTER_ADDR).
    - `master_port()`: the port a new job's master listens on (MASTER_PORT).
    """

    name: ClassVar[str]
    simulated: ClassVar[bool] = False
    one_host: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A registered kind's capabilities are its declaration's (contract/launchers.KINDS,
        the one place they are said); a class outside the registry sets its own."""
        super().__init_subclass__(**kwargs)
        kind = KINDS.get(getattr(cls, "name", ""))
        if kind is not None:
            cls.simulated, cls.one_host = kind.simulated, kind.one_host

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        stop_on_interrupt()

    def timeout_text(self, timeout_s: float) -> str:
        """A timeout for a message, named when it is the spec's probe timeout:
        '10 s (cluster.probe_timeout)'."""
        name = " (cluster.probe_timeout)" if timeout_s == self.spec.probe_timeout_s else ""
        return f"{timeout_s:g} s{name}"

    @classmethod
    def from_spec(cls, spec: Spec) -> Launcher:
        """The launcher for a whole spec (the sim launcher also reads its sim section)."""
        return cls(spec.cluster)

    @abstractmethod
    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        """One ProbeResult per node; per-node failures are results, not exceptions."""

    def master_address(self, node: str, timeout_s: float) -> str:
        """The address the other nodes reach `node` on: 127.0.0.1 on one host; else the
        first address the node reports (job_node --whereami) that is not a loopback one.
        JobFailed says why there is none."""
        if self.one_host:
            return LOOPBACK
        result = self.run(ProbeCall("job_node", ("--whereami",)), [node], timeout_s)[node]
        if not result.ok:
            raise JobFailed(f"cannot find {node}'s address for MASTER_ADDR: "
                            f"{result.describe()}")
        addresses: Sequence[str] = result.payload().get("addresses", [])
        usable = [a for a in addresses if not a.startswith("127.")]
        if not usable:
            raise JobFailed(f"{node} has no address other nodes can reach (found "
                            f"{list(addresses)}); give JobSpec.master_addr")
        return usable[0]

    def master_port(self) -> int:
        """A port for a new job's master: one free here on one host; else a random one
        in 29500-30499 (which ports are free on the node is not known here)."""
        if self.one_host:
            return free_local_port()
        return random.randint(*MASTER_PORTS)  # noqa: S311 - not a secret

    def run_program(self, argv: Sequence[str], nodes: Sequence[str], tasks_per_node: int,
                    timeout_s: float) -> ProgramRun | None:
        """`argv` (a program on the nodes, not a probe) started as one MPI job:
        `tasks_per_node` tasks on each of `nodes`, ranked by the launcher's process
        manager (SLURM's PMI for srun --mpi). None where the launcher has none: a
        program built with MPI cannot span nodes without one."""
        return None

    def close(self) -> None:  # noqa: B027 - most launchers hold nothing
        """Release what the launcher holds (e.g. shared ssh connections)."""
