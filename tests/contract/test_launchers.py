"""contract/launchers.py: the one registry of launcher kinds, ours then the installed
extensions'."""

from __future__ import annotations

import pytest

from pytest_cluster.contract import extensions, launchers
from pytest_cluster.contract.launcher_kind import LauncherKind
from pytest_cluster.contract.sections import BY_NAME


def test_one_registry_names_every_launcher_and_its_class() -> None:
    """contract/launchers.py's KINDS is the one registry: each kind's implementation is a
    Launcher subclass of that name, imported only when asked for."""
    from pytest_cluster.contract.launchers import KINDS
    from pytest_cluster.launchers import Launcher, launcher_class

    assert list(KINDS)[:4] == ["local", "sim", "ssh", "slurm"]  # ours first, in this order
    for name, kind in KINDS.items():
        cls = launcher_class(name)
        assert issubclass(cls, Launcher) and cls.name == name, kind.implementation



def test_each_kind_is_filed_under_its_name_and_its_section_is_the_specs() -> None:
    for name, kind in launchers.KINDS.items():
        assert kind.name == name
        assert kind.section is None or kind.section in BY_NAME, name
        assert not kind.needs_section or kind.section is not None, name
        assert kind.implementation.count(":") == 1, name


def test_an_extensions_kind_comes_after_ours_and_cannot_take_a_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ours = dict(launchers.KINDS)
    here = LauncherKind("here", "here_ext:Here", extension="ext = here_ext:EXTENSION")
    clash = LauncherKind("ssh", "here_ext:Ssh")
    monkeypatch.setattr(extensions, "_STATE", extensions._State())
    monkeypatch.setattr(launchers, "KINDS", dict(ours))
    monkeypatch.setattr(launchers, "added_launchers", lambda: (clash, here, here))
    launchers._add_extensions()
    assert {**ours, "here": here} == launchers.KINDS
    assert list(launchers.KINDS)[-1] == "here" and launchers.KINDS["ssh"] is ours["ssh"]
    taken = ("is declared twice (an installed extension repeats a name that is already "
             "taken; the second is left out)")
    assert extensions.problems() == (f"the launcher kinds: 'ssh' {taken}",
                                     f"the launcher kinds: 'here' {taken}")
