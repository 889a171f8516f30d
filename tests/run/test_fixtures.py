"""The fixtures for your own tests (cluster, node, filesystem, ...): documented,
parametrized from the spec, and saying what is missing without one."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cluster.evidence.record.plan import Plan, PlannedCase
from pytest_cluster.run.fixtures import selected_clauses
from tests import test_plugin
from tests.test_plugin import spec_text

#: A folder to stand for a filesystem (test_plugin's fixture, shared).
fs = test_plugin.fs


def test_own_tests_with_fixtures(pytester: pytest.Pytester, fs: Path) -> None:
    pytester.makefile(".yaml", trial=spec_text(fs, nodes="n[1-2]"))
    pytester.makepyfile(test_mine="""
        def test_every_node_has_a_kernel(cluster, node):
            assert cluster.host(node).payload()["versions"]["kernel"]

        def test_filesystems(filesystem, node):
            assert filesystem.path.endswith("fs")
    """)
    result = pytester.runpytest("--cluster=trial.yaml", "test_mine.py", "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([f"*test_filesystems[[]n1-{fs}[]] PASSED*"])


def test_fixtures_are_documented(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--fixtures")
    result.stdout.fnmatch_lines([
        "*cluster* -- *", "*The cluster under test*",
        "node -- *", "*The name of the node under test*",
        "filesystem -- *", "*The filesystem under test*",
    ])


def test_without_spec_the_fixtures_say_what_is_missing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(node):\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*this test needs a contract spec: run pytest "
                                 "--cluster=trial.yaml*"])


def test_the_cluster_probes_for_the_clauses_the_selection_checks(tmp_path: Path) -> None:
    """The plan the collecting process wrote says which clauses this run checks (the
    `cluster` fixture measures for those only); without one, every clause."""
    assert selected_clauses(tmp_path) is None
    cases = (PlannedCase("a::t[n1]", "gpus.count", "n1"),
             PlannedCase("a::t[n2]", "gpus.count", "n2"),
             PlannedCase("a::u[n1]", "host.cpu_cores", "n1"),
             PlannedCase("a::v[n1]", "storage.write", "n1"))
    Plan(cases, frozenset({"a::t[n2]", "a::v[n1]"})).write(tmp_path)
    assert selected_clauses(tmp_path) == frozenset({"gpus.count", "storage.write"})
