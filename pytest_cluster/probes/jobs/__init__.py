"""Job programs: what each rank of a distributed job runs (an all-reduce, a training loop,
a checkpoint burst, ...), started on every node by the job_node probe (launchers/jobs.py
`run_job`). Each is a file, `<name>.py`, or a package, `<name>/` run by its `__main__.py`,
sent as one Python source as a probe is (probes/_shipping.py); a job program is added by
adding its file, nothing else names it. This `__init__` stays on this side: the node gets
an empty package of this name, for the programs' relative imports (`from .._lib ...`)."""

from __future__ import annotations

from importlib import resources

from pytest_cluster.probes._shipping import program_modules, program_source

#: Where the job programs' shipped names are rooted (`jobs.<name>` under probes/).
_PACKAGE = "pytest_cluster.probes"


def _ours() -> tuple[str, ...]:
    names = (entry.name.removesuffix(".py") for entry in resources.files(__package__).iterdir()
             if not entry.name.startswith("_") and (
                 entry.name.endswith(".py") or entry.joinpath("__main__.py").is_file()))
    return tuple(sorted(names))


#: The job programs, by the names of their files.
JOB_PROGRAMS = _ours()


def job_source(name: str) -> str:
    """The one Python source that runs job program `name` on a rank."""
    if name not in JOB_PROGRAMS:
        raise ValueError(f"unknown job program {name!r}; known: {', '.join(JOB_PROGRAMS)}")
    return program_source(_PACKAGE, f"jobs.{name}")


def job_files(name: str) -> dict[str, str]:
    """The sources of job program `name`, by file: what its shipped text carries."""
    return dict(program_modules(_PACKAGE, f"jobs.{name}").values())
