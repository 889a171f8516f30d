"""Shared helpers for the plugin's own tests."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.netns_cluster import NetnsCluster, Unavailable


def has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


PYTHON = sys.executable


def write_spec(directory: Path, text: str, name: str = "trial.yaml") -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def scratch(tmp_path: Path) -> Generator[Path, None, None]:
    """A directory for storage probes, removed afterwards."""
    target = tmp_path / "fs"
    target.mkdir()
    yield target
    shutil.rmtree(target, ignore_errors=True)


@pytest.fixture(scope="module")
def netns() -> Iterator[NetnsCluster]:
    """A real 4-node cluster of network namespaces with an sshd each (see netns_cluster)."""
    try:
        cluster = NetnsCluster(4)
    except Unavailable as exc:
        pytest.skip(f"no namespace cluster on this machine: {exc}")
    with cluster:
        yield cluster


@pytest.fixture(scope="module")
def slurm(netns: NetnsCluster) -> Iterator[NetnsCluster]:
    """The same cluster with SLURM (slurmctld here, a slurmd per node); SLURM_CONF set."""
    try:
        env = netns.start_slurm()
    except Unavailable as exc:
        pytest.skip(f"no SLURM on this machine: {exc}")
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield netns
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
