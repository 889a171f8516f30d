"""sim/dcgm.py: a simulated node's DCGM answers in 4.x's shape or 3.x's, and its faults
are found where the level runs their test, on their GPU and node alone."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.sections.sim import DCGM_TESTS
from pytest_cluster.contract.sections.sim_records import SimFault, SimSpec
from pytest_cluster.measure.dcgm_diag import diagnose
from pytest_cluster.sim.dcgm import TESTS, dcgm_payload

FAULTS = (SimFault("n1", 3, 1, dcgm_fail="memory"),
          SimFault("n2", None, 2, dcgm_config="persistence_mode"))


def _outcome(version: int | None, node: str, level: int) -> tuple[str, set[tuple[str, int]]]:
    payload = dcgm_payload(SimSpec("H100-SXM-80GB", 8, faults=FAULTS, dcgm=version), node,
                           ["--level", str(level), "--timeout", "300"])
    found = diagnose(payload.get("report"))
    assert payload["level"] == level and found.bad == ""
    return found.outcome, {(f.kind, f.gpu) for f in found.findings if f.gpu is not None}


@pytest.mark.parametrize("version", [3, 4])
def test_each_fault_is_found_on_its_gpu_and_node_alone_in_either_shape(version: int) -> None:
    assert _outcome(version, "n1", 2) == ("hardware", {("hardware", 3)})
    assert _outcome(version, "n2", 2) == ("config", {("config", g) for g in range(8)})
    assert _outcome(version, "n3", 2) == ("pass", set())


def test_each_shape_is_its_own() -> None:
    for version, shape in ((3, "DCGM 3.x"), (4, "DCGM 4.x")):
        payload = dcgm_payload(SimSpec("H100-SXM-80GB", 2, dcgm=version), "n1", ["--level", "1"])
        assert diagnose(payload.get("report")).shape == shape


def test_a_test_the_level_does_not_run_finds_nothing() -> None:
    """The memory test runs from r2: at r1 the GPU's fault is not seen (as on a real node)."""
    assert _outcome(4, "n1", 1) == ("pass", set())


def test_every_test_a_fault_may_name_is_played_from_its_level() -> None:
    assert set(TESTS) == set(DCGM_TESTS)
    for level in (1, 2, 3, 4):
        payload = dcgm_payload(SimSpec("H100-SXM-80GB", 1), "n1", ["--level", str(level)])
        ran = set(diagnose(payload.get("report")).tests)
        assert ran == {t for t, (_, _, first, _) in TESTS.items() if first <= level}


def test_no_dcgm_is_said_as_the_probe_says_it() -> None:
    payload = dcgm_payload(SimSpec("H100-SXM-80GB", 8, dcgm=None), "n1", ["--level", "1"])
    assert payload["missing"] == "dcgmi" and "report" not in payload
