"""The one registry of launchers: each kind's name, the class that implements it (named,
imported only when a run uses it), the section of the spec it reads (sim, ssh, slurm) and
whether that section must be given, the interpreter its nodes run when the spec names none,
and what it cannot do. The spec's launcher names, its error messages and
`launchers.launcher_class` all read this table; the launchers themselves
(pytest_cluster/launchers/) build on the spec, not the other way round.
"""

from __future__ import annotations

from pytest_cluster.contract.extensions import added_launchers, adds_to, free
from pytest_cluster.contract.launcher_kind import LauncherKind

#: Our launcher kinds, in the order error messages list them.
_BUILTIN = (
    LauncherKind("local", "pytest_cluster.launchers.local:LocalLauncher", python=None,
                 one_host=True),
    LauncherKind("sim", "pytest_cluster.launchers.sim:SimLauncher",
                 section="sim", needs_section=True, simulated=True,
                 no_storage="simulates a shared filesystem as the cluster uses it, not a "
                            "node's disk",
                 no_training="simulates collective benchmarks, not a training loop"),
    LauncherKind("ssh", "pytest_cluster.launchers.ssh:SshLauncher", section="ssh",
                 remote=True),
    LauncherKind("slurm", "pytest_cluster.launchers.slurm:SlurmLauncher", section="slurm",
                 remote=True),
)

#: Every launcher kind: ours, then those of the installed extensions once they are loaded
#: (contract/extensions.py).
KINDS: dict[str, LauncherKind] = {kind.name: kind for kind in _BUILTIN}


@adds_to
def _add_extensions() -> None:
    KINDS.update(free(((k.name, k) for k in added_launchers()), KINDS, "the launcher kinds"))
