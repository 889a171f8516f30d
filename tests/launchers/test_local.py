"""launchers/local.py: every node is this machine; the probe's command line, the interpreter
it runs with (found on PATH, named when it is missing or crashes)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pytest_cluster.contract import load_spec
from pytest_cluster.contract.model import ClusterSpec, Spec
from pytest_cluster.errors import ProbeFailed
from pytest_cluster.launchers import ErrorKind, get_launcher
from pytest_cluster.launchers.local import probe_command
from pytest_cluster.probes import ProbeCall

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def cluster(python: str = sys.executable, launcher: str = "local") -> Spec:
    return Spec("t.yaml", "0" * 64, ClusterSpec("t", ("n1", "n2"), launcher, python, 60.0, 8))


def test_probe_command_is_an_argument_list() -> None:
    call = ProbeCall("storage", ("--path", "/data; rm -rf /"))
    assert probe_command("/shared/venv/bin/python", call) == [
        "/shared/venv/bin/python", "-", "--path", "/data; rm -rf /"]


def test_local_launcher_runs_every_node() -> None:
    results = get_launcher(cluster()).run(ProbeCall("host"), ["n1", "n2", "n3"], 60)
    assert list(results) == ["n1", "n2", "n3"]
    for name, result in results.items():
        assert result.ok, result.describe()
        assert result.node == name
        assert result.payload()["cpu"]["threads"] == os.cpu_count()
        assert result.simulated is False


def test_missing_interpreter_is_its_own_kind() -> None:
    result = get_launcher(cluster("/no/such/python")).run(ProbeCall("host"), ["n1"], 60)["n1"]
    assert result.error is ErrorKind.INTERPRETER_MISSING
    assert result.describe() == ("n1: host probe interpreter_missing: '/no/such/python' not "
                                 "found (check cluster.python in the spec)")
    with pytest.raises(ProbeFailed):
        result.payload()


def test_local_example_runs_without_the_venv_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """`.venv/bin/pytest --cluster=examples/localhost.yaml` with no venv activated runs the
    probes with pytest's interpreter, not the system python3 (which has no torch)."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    spec = load_spec(EXAMPLES / "localhost.yaml")
    result = get_launcher(spec).run(ProbeCall("host"), ["localhost"], 60)["localhost"]
    assert result.payload()["python_executable"] == sys.executable


def test_crashed_probe_names_the_interpreter_path(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "python-x"
    fake.write_text("#!/bin/sh\necho boom >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    result = get_launcher(cluster("python-x")).run(ProbeCall("host"), ["n1"], 60)["n1"]
    assert result.describe() == (f"n1: host probe crashed: {fake} exited with an error "
                                 "(exit code 3) | stderr: boom")
