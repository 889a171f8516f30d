"""launchers/__init__.py: launchers by name from the one registry (KINDS); an unknown name
is refused listing the known ones, each class says what it can do as declared, and an
installed extension's launcher is imported guarded (what it raises, prints or never ends
is refused naming it) and its answers checked."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_cluster import launchers
from pytest_cluster.contract.launcher_kind import LauncherKind
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import ClusterSpec
from pytest_cluster.errors import LaunchError
from pytest_cluster.launchers import ErrorKind, get_launcher, launcher_class
from pytest_cluster.launchers.local import LocalLauncher
from pytest_cluster.probes import ProbeCall
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


# -- an installed extension's launcher: imported guarded, its class checked ----------------

OWNER = "extension e (e 0.1)"


@pytest.fixture
def extension(tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], str]]:
    """`declare(source, attribute)`: a launcher kind of OWNER whose implementation is
    `attribute` of a new module of `source`; its kind's name."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made: list[str] = []

    def declare(source: str, attribute: str) -> str:
        module = f"pc_launcher_ext_{len(made)}_{tmp_path.name}"
        (tmp_path / f"{module}.py").write_text(source)
        name = f"ext{len(made)}"
        made.append(module)
        monkeypatch.setitem(KINDS, name, LauncherKind(name, f"{module}:{attribute}",
                                                      extension=OWNER))
        return name

    yield declare
    for module in made:
        sys.modules.pop(module, None)


GARBAGE = """\
from pytest_cluster.launchers import Launcher


class Garbage(Launcher):
    '''Answers nonsense.'''

    name = "garbage"

    def run(self, call, nodes, timeout_s):
        return {node: "nonsense" for node in nodes}


not_a_class = 5
"""


def test_an_extensions_launcher_is_its_class_with_its_answers_checked(
        extension: Callable[[str, str], str]) -> None:
    name = extension(GARBAGE, "Garbage")
    cls = launcher_class(name)
    assert cls.__name__ == "Garbage" and cls.__doc__ == "Answers nonsense."
    assert [base.__name__ for base in cls.__mro__[:2]] == ["Garbage", "Garbage"]
    launcher = cls(ClusterSpec("t", ("n1",), name, "python3", 60, 8))
    (result,) = launcher.run(ProbeCall("host"), ["n1"], 60).values()
    assert (result.error, result.message) == (
        ErrorKind.CONTROLLER, f"the launcher of {OWNER} returned a str for this node, not "
                              "a ProbeResult")


@pytest.mark.parametrize(("source", "attribute", "why"), [
    (GARBAGE, "not_a_class", "names a int, not a pytest_cluster.Launcher class"),
    (GARBAGE, "NotThere", "cannot be imported: AttributeError: "),
    ("raise RuntimeError('boom')\n", "X", "cannot be imported: RuntimeError: boom"),
])
def test_an_extensions_launcher_that_is_none_is_refused_naming_it(
        extension: Callable[[str, str], str], source: str, attribute: str, why: str) -> None:
    name = extension(source, attribute)
    with pytest.raises(LaunchError) as info:
        launcher_class(name)
    module = KINDS[name].implementation
    assert str(info.value).startswith(f"launcher {name} of {OWNER}: {module} {why}")


def test_what_an_extensions_launcher_prints_at_import_is_counted_not_shown(
        extension: Callable[[str, str], str]) -> None:
    printed = "secret token\n"
    name = extension(f"print({printed[:-1]!r})\nraise RuntimeError('boom')\n", "X")
    with pytest.raises(LaunchError) as info:
        launcher_class(name)
    assert str(info.value).endswith(f"cannot be imported: RuntimeError: boom (it printed "
                                    f"{len(printed)} character(s) at import, not shown)")
    assert "secret" not in str(info.value)


def test_an_extensions_launcher_whose_import_never_ends_is_refused(
        extension: Callable[[str, str], str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launchers, "IMPORT_LIMIT_S", 0.2)
    name = extension("import time\ntime.sleep(600)\n", "X")
    with pytest.raises(LaunchError) as info:
        launcher_class(name)
    assert str(info.value) == (f"launcher {name} of {OWNER}: {KINDS[name].implementation} "
                               "was not imported within 0.2 s")
