"""What a kind of launcher is, as one record: its name, the class that implements it (named,
imported only when a run uses it), the section of the spec it reads, the interpreter its
nodes run when the spec names none, what it cannot do and what it is (simulated, one
host). The table of every launcher is contract/launchers.py; an installed extension declares
its own with this record (contract/extensions.py)."""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class LauncherKind:
    name: str
    implementation: str  # "module:Class", a Launcher subclass (imported when used)
    section: str | None = None  # the spec section of its own
    needs_section: bool = False  # the section must be given (sim: the description)
    python: str | None = "python3"  # on the nodes' PATH; None: the one running pytest
    #: why it cannot test a node's own disk (storage.AT_ONCE only); None: it can
    no_storage: str | None = None
    no_training: str | None = None  # why it cannot run a training loop; None: it can
    #: It reaches the nodes from elsewhere (ssh, srun): a run on a node of this host alone
    #: (a SLURM prolog) runs its probes there directly, by the local launcher, instead
    remote: bool = False
    #: Every result comes from the spec's description of the cluster, not from hardware
    #: (the sim): its results, the run and its drain lines are marked simulated
    simulated: bool = False
    #: Every "node" is this machine (local): jobs one at a time, their master here, and
    #: its node names no SLURM nodes to drain
    one_host: bool = False
    #: The installed extension that declares it (set when it is loaded, for messages);
    #: "": one of ours
    extension: str = ""

    def default_python(self) -> str:
        """The interpreter on the nodes when the spec names none."""
        return self.python if self.python is not None else (sys.executable or "python3")
