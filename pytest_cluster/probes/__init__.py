"""Probes: small stdlib-only programs that run ON a node and print one JSON document.

A probe is a file, `<name>.py`, or a package, `<name>/` run by its `__main__.py`; either
way a launcher ships it as ONE Python source to a node that has python3 but not this
package (`python3 - ARGS` with the source on stdin): _shipping.program_source.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources

from pytest_cluster.contract.extensions import added_probes, adds_to, free
from pytest_cluster.probes._shipping import program_modules, program_source

#: Programs in this folder that are not probes: a job's rank program, sent by job_node
#: (measure/benchmark.py, measure/training.py, the rails' perftest in measure/cluster.py).
JOB_PROGRAMS = ("collective", "train", "perftest", "pingpong", "checkpoint", "dataloader")


def _ours() -> tuple[str, ...]:
    """Every program in this folder that is not a job's: a probe is added by adding its
    file (`probes/<name>.py`) or its package (`probes/<name>/__main__.py`), nothing else
    names it."""
    names = (entry.name.removesuffix(".py") for entry in resources.files(__package__).iterdir()
             if not entry.name.startswith("_") and (
                 entry.name.endswith(".py") or entry.joinpath("__main__.py").is_file()))
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
    """The one Python source that runs probe or job program `name` on a node."""
    if name in _ADDED:
        return _ADDED[name]
    return program_source(__name__, name)


def probe_files(name: str) -> dict[str, str]:
    """The sources of our probe or job program `name`, by file: what its shipped text
    carries (one file, or its package's modules and the shared helpers they import)."""
    return dict(program_modules(__name__, name).values())
