"""Probes: small stdlib-only programs that run ON a node and print one JSON document.

Each probe is a single file so that a launcher can ship its text to a node that has
python3 but not this package (`python3 - ARGS` with the source on stdin).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources

from pytest_cluster.contract.extensions import added_probes, adds_to, free

#: Programs in this folder that are not probes: a job's rank program, sent by job_node
#: (measure/benchmark.py, measure/training.py, the rails' perftest in measure/cluster.py).
JOB_PROGRAMS = ("collective", "train", "perftest", "pingpong", "checkpoint", "dataloader")


def _ours() -> tuple[str, ...]:
    """Every program in this folder that is not a job's: a probe is added by adding its
    file (`probes/<name>.py`), nothing else names it."""
    names = (entry.name.removesuffix(".py") for entry in resources.files(__package__).iterdir()
             if entry.name.endswith(".py") and not entry.name.startswith("_"))
    return tuple(sorted(name for name in names if name not in JOB_PROGRAMS))


_OURS = _ours()
#: The installed extensions' probes and their text, read when they are loaded
#: (contract/extensions.py): a name of ours, a probe's or a job program's, is not theirs to take.
_ADDED: dict[str, str] = {}
#: The probes, by the names of their files: ours, then the extensions' once they are loaded.
PROBES: list[str] = list(_OURS)


@adds_to
def _add_extensions() -> None:
    new = free(added_probes(), (*PROBES, *JOB_PROGRAMS), "the probes")
    _ADDED.update(new)
    PROBES.extend(new)


@dataclass(frozen=True)
class ProbeCall:
    """Which probe to run, with which arguments; the same call on every node."""

    name: str
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.name not in PROBES:
            raise ValueError(f"unknown probe {self.name!r}; known: {', '.join(PROBES)}")

    def source(self) -> str:
        return probe_source(self.name)

    def key(self) -> str:
        """A stable name for this call, for caching its results."""
        digest = hashlib.sha256(json.dumps([self.name, *self.args]).encode()).hexdigest()
        return f"{self.name}-{digest[:16]}"


def probe_source(name: str) -> str:
    if name in _ADDED:
        return _ADDED[name]
    return resources.files(__package__).joinpath(f"{name}.py").read_text(encoding="utf-8")
