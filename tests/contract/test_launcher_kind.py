"""contract/launcher_kind.py: what a kind of launcher is, as one record."""

from __future__ import annotations

import dataclasses
import sys

import pytest

from pytest_cluster.contract.launcher_kind import LauncherKind


def test_the_nodes_interpreter_is_the_kinds_or_the_one_running_pytest(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert LauncherKind("x", "m:C").default_python() == "python3"
    assert LauncherKind("x", "m:C", python="/opt/py/bin/python").default_python() == (
        "/opt/py/bin/python")
    here = LauncherKind("x", "m:C", python=None)
    assert here.default_python() == sys.executable
    monkeypatch.setattr(sys, "executable", "")  # an embedded interpreter may not know it
    assert here.default_python() == "python3"


def test_a_kind_can_do_everything_and_is_ours_unless_it_says_otherwise() -> None:
    kind = LauncherKind("x", "m:C")
    assert (kind.section, kind.needs_section, kind.no_storage, kind.no_training) == (
        None, False, None, None)
    assert not (kind.remote or kind.simulated or kind.one_host)
    assert kind.extension == ""
    with pytest.raises(dataclasses.FrozenInstanceError):
        kind.name = "y"  # type: ignore[misc]
