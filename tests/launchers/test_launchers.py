"""What the rest of the code asks of launchers, and what is kept for them: whether a run is
simulated, each launcher's default interpreter. Each launcher module's own tests are in
tests/launchers/test_<module>.py (a result's in test_result.py, the registry's in
tests/test_launchers.py; the probe cache's in tests/measure/test_cache.py)."""

from __future__ import annotations

import dataclasses
import sys

import pytest

from pytest_cluster.contract import load_spec, parse_spec
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.evidence.record.summary import is_simulated
from tests.launchers.test_local import EXAMPLES, cluster


def test_a_run_is_simulated_when_its_launcher_is(monkeypatch: pytest.MonkeyPatch) -> None:
    assert is_simulated(load_spec(EXAMPLES / "sim-h100.yaml")) is True
    assert is_simulated(cluster()) is False
    # asked of the launcher's declaration, not inferred from a name
    monkeypatch.setitem(KINDS, "local", dataclasses.replace(KINDS["local"], simulated=True))
    assert is_simulated(cluster()) is True


def test_default_interpreter_is_the_launchers() -> None:
    """Local nodes are this machine: pytest's own interpreter (and its torch); elsewhere
    python3 on the nodes' PATH."""
    assert KINDS["local"].default_python() == sys.executable
    assert KINDS["ssh"].default_python() == KINDS["slurm"].default_python() == "python3"


@pytest.mark.parametrize(("section", "python"), [
    ("launcher: local", sys.executable),
    ("launcher: ssh", "python3"),
    ("python: python3", "python3"),  # named in the spec: kept as written
])
def test_spec_takes_the_launchers_default_interpreter(section: str, python: str) -> None:
    spec = parse_spec(f"cluster: {{name: x, nodes: a, {section}}}\n"
                      "storage: [{path: /tmp, free: '>= 1 B'}]\n", "t.yaml")
    assert spec.cluster.python == python
    assert spec.storage[0].python == python
