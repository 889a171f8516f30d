"""launchers/__init__.py: launchers by name from the one registry (KINDS); an unknown name
is refused listing the known ones, and each class says what it can do as declared."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.errors import LaunchError
from pytest_cluster.launchers import get_launcher, launcher_class
from pytest_cluster.launchers.local import LocalLauncher
from tests.launchers.test_local import cluster


def test_registry() -> None:
    assert isinstance(get_launcher(cluster()), LocalLauncher)
    with pytest.raises(LaunchError, match=rf"unknown launcher 'pbs'; known: {', '.join(KINDS)}"):
        get_launcher(cluster(launcher="pbs"))


def test_launchers_say_what_they_can_do() -> None:
    """(simulated, one_host) per launcher: what the rest of the code asks, never a name."""
    found = {name: (launcher_class(name).simulated, launcher_class(name).one_host)
             for name in KINDS}
    assert found == {name: (kind.simulated, kind.one_host) for name, kind in KINDS.items()}
    assert {name: found[name] for name in ("local", "sim", "ssh", "slurm")} == {
        "local": (False, True), "sim": (True, False), "ssh": (False, False),
        "slurm": (False, False)}
