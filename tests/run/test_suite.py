"""Where the packaged contract suite lives: --cluster without test paths collects it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pytest_cluster.run.collection import SUITE_PREFIX
from pytest_cluster.run.suite import acceptance_dir

SPEC = "cluster: {name: suite, nodes: [n1], launcher: sim}\nhost: {cpu_cores: '>= 1'}\nsim: {}\n"


def test_the_suite_is_the_acceptance_package() -> None:
    found = importlib.util.find_spec("pytest_cluster.acceptance")
    assert found is not None and found.submodule_search_locations
    assert acceptance_dir() == Path(next(iter(found.submodule_search_locations)))
    assert (acceptance_dir() / "test_gpus.py").is_file()


def test_a_source_checkout_finds_the_suite_beside_the_package(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m pytest` in the repository, pytest_cluster/ first on sys.path: the
    acceptance/ folder beside it (before: looked for a contract/ folder it has not, and
    said the suite was not installed)."""
    from pytest_cluster.run import suite

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    beside = Path(suite.__file__).resolve().parents[2] / "acceptance"
    assert acceptance_dir() == beside
    assert (beside / "test_gpus.py").is_file()


def test_a_run_without_test_paths_collects_the_suite_and_with_paths_those(
        pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC, encoding="utf-8")
    pytester.makepyfile(test_mine="def test_of_mine(node):\n    pass\n")
    suite = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                               "--collect-only", "-q")
    ids = [line for line in suite.outlines if "::" in line]
    assert ids and all((acceptance_dir() / line.partition("::")[0]).is_file() for line in ids)
    assert not any("test_of_mine" in line for line in ids)
    mine = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                              "--collect-only", "-q", "test_mine.py")
    assert [line for line in mine.outlines if "::" in line] == ["test_mine.py::test_of_mine[n1]"]
    assert f"{acceptance_dir().name}/" == SUITE_PREFIX
