"""What the spec needs to know of each launcher kind, without importing a launcher: its
name, the section of the spec it reads (sim, ssh, slurm) and whether that section must be
given, the interpreter its nodes run when the spec names none, and whether it can test
filesystems. The launchers themselves (pytest_cluster/launchers/) build on the spec, not
the other way round; tests/test_spec.py asserts that both list the same kinds with the same
default interpreters.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class LauncherKind:
    name: str
    section: str | None = None  # the spec section of its own
    needs_section: bool = False  # the section must be given (sim: the description)
    python: str | None = "python3"  # on the nodes' PATH; None: the one running pytest
    no_storage: str | None = None  # why it cannot test filesystems; None: it can
    no_training: str | None = None  # why it cannot run a training loop; None: it can

    def default_python(self) -> str:
        """The interpreter on the nodes when the spec names none."""
        return self.python if self.python is not None else (sys.executable or "python3")


#: The launcher kinds, in the order error messages list them.
KINDS: dict[str, LauncherKind] = {kind.name: kind for kind in (
    LauncherKind("local", python=None),
    LauncherKind("sim", section="sim", needs_section=True,
                 no_storage="simulates hosts and GPUs, not filesystems",
                 no_training="simulates collective benchmarks, not a training loop"),
    LauncherKind("ssh", section="ssh"),
    LauncherKind("slurm", section="slurm"),
)}
