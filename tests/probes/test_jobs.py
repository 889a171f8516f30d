"""probes/jobs/: the job programs, told from the probes by their folder (no hand list), each
shipped as one source with the packages above it carried empty where it imports relatively."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cluster.probes import PROBES
from pytest_cluster.probes._shipping import program_modules
from pytest_cluster.probes.jobs import JOB_PROGRAMS, job_files, job_source
from pytest_cluster.probes.jobs import __file__ as jobs_init


def test_the_job_programs_are_the_files_of_their_folder_and_no_probe() -> None:
    folder = Path(jobs_init).parent
    found = sorted(p.stem for p in folder.glob("*.py") if not p.name.startswith("_")) + \
        sorted(p.name for p in folder.iterdir() if (p / "__main__.py").is_file())
    assert sorted(JOB_PROGRAMS) == sorted(found)
    assert not set(JOB_PROGRAMS) & set(PROBES)


def test_an_unknown_job_program_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown job program 'nope'; known: .*collective"):
        job_source("nope")


def test_a_job_program_importing_a_shared_helper_carries_an_empty_jobs_package() -> None:
    """perftest imports `.._lib.command`: the node gets `jobs` as an empty package (this
    side's `jobs/__init__.py` imports pytest_cluster, which the node has not)."""
    carried = program_modules("pytest_cluster.probes", "jobs.perftest")
    assert carried["jobs"] == ("pytest_cluster/probes/jobs/__init__.py", "")
    assert "_lib.command" in carried and "jobs.perftest" in carried


def test_a_single_file_job_program_importing_nothing_of_ours_is_sent_as_it_is() -> None:
    (file, source), = job_files("pingpong").items()
    assert file == "pytest_cluster/probes/jobs/pingpong.py"
    assert job_source("pingpong") == source


def test_the_collective_and_training_ranks_carry_the_nccl_ras_client() -> None:
    """A rank past its bound asks NCCL's RAS: the client goes with the program."""
    for name in ("collective", "train"):
        assert "pytest_cluster/probes/_lib/nccl_ras.py" in job_files(name)
