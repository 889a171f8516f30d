"""gpus.dcgm_diag end to end on the sim: the key as written, its level (r3 and r4 only with
-m stress), and the shipped fleet example's two DCGM faults: a hardware finding fails its
node naming the GPU and the test, a configuration finding is an ERROR that drains no one,
no dcgmi leaves the node NOT CHECKED. The classification itself: tests/measure/
test_dcgm_diag.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.clauses import declared
from pytest_cluster.evidence.verdict.nodes import ACCEPTED, NOT_CHECKED, REJECTED
from tests.conftest import faulted, planned
from tests.contract.test_loader_slips import error_of
from tests.test_plugin import jsonl

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sim-h100-fleet-faulty.yaml"

SPEC = """\
cluster: {{name: d, nodes: "n[1-2]", launcher: sim}}
gpus:
  count: 2
  dcgm_diag: {level}
sim:
  gpus_per_node: 2
  {sim}faults: [{faults}]
"""


def _spec(level: str = "r1", faults: str = "", sim: str = "") -> str:
    return SPEC.format(level=level, faults=faults, sim=sim)


@pytest.mark.parametrize(("written", "level"), [("r1", 1), ("r2", 2), ("R3", 3), ("4", 4),
                                                  ('"2"', 2), ("' r4'", 4)])
def test_the_level_is_written_r1_to_r4_or_1_to_4(written: str, level: int) -> None:
    gpus = parse_spec(_spec(written), "t.yaml").gpus
    assert gpus is not None and gpus.dcgm_level == level
    rule = gpus.item("dcgm_diag")
    assert rule is not None and f"dcgmi diag -r {level} " in getattr(rule, "text", "")


@pytest.mark.parametrize("written", ["r5", "0", "true", "short", "[1]", '"5"', '"r"'])
def test_any_other_level_is_one_exact_error(written: str) -> None:
    assert error_of(_spec(written)).startswith(
        "t.yaml:4: gpus.dcgm_diag: expected a DCGM diagnostic level, r1, r2, r3, r4 or 1-4 "
        "(dcgmi diag -r N; r3 and r4 run at the stress level), got ")


def test_r3_left_out_of_a_run_without_m_stress_is_said_as_a_stress_clause(
        pytester: pytest.Pytester) -> None:
    """dcgm_diag: r3 in a run of the acceptance level: the terminal says it is of the
    stress level and how to run it, as it says the other stress clauses."""
    (pytester.path / "t.yaml").write_text(_spec("r3"), encoding="utf-8")
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
    [line] = [line for line in result.outlines if line.startswith("not in contract, ")]
    assert "gpus.dcgm_diag (level stress: run it with -m stress)" in line, line


@pytest.mark.parametrize(("level", "stress"), [("r1", False), ("r2", False), ("r3", True),
                                               ("r4", True)])
def test_r3_and_r4_run_at_the_stress_level_alone(pytester: pytest.Pytester, level: str,
                                                 stress: bool) -> None:
    spec = parse_spec(_spec(level), "t.yaml")
    assert (declared("gpus.dcgm_diag").level_in(spec) == "stress") is stress
    by_default = {c for c in planned(pytester, _spec(level)) if "dcgm" in c}
    under_stress = {c for c in planned(pytester, _spec(level), "-m", "stress") if "dcgm" in c}
    assert under_stress == {"test_gpu_dcgm_diag[n1]", "test_gpu_dcgm_diag[n2]"}
    assert by_default == (set() if stress else under_stress)
    assert not {c for c in planned(pytester, _spec(level), "-m", "sanity") if "dcgm" in c}


def _run(pytester: pytest.Pytester, spec: str, *args: str) -> dict[str, Any]:
    path = pytester.path / "trial.yaml"
    path.write_text(spec, encoding="utf-8")
    pytester.runpytest(f"--cluster={path}", "-p", "no:cacheprovider", "-p", "no:randomly",
                       *args)
    verdict: dict[str, Any] = json.loads(
        (pytester.path / "reports" / "latest" / "verdict.json").read_text())
    return verdict


def _dcgm_lines(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    return {r["node"]: r for r in jsonl(pytester)
            if r.get("type") == "result" and r.get("clause") == "gpus.dcgm_diag"}


def test_the_fleet_examples_dcgm_faults_fail_their_nodes_alone(
        pytester: pytest.Pytester) -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    hardware, = faulted(text, "dcgm_fail")
    config, = faulted(text, "dcgm_config")
    verdict = _run(pytester, text, "-k", "dcgm_diag")
    lines = _dcgm_lines(pytester)
    assert set(lines) == {n["node"] for n in verdict["nodes"]}  # one case a node
    assert {n for n, r in lines.items() if r["outcome"] != "passed"} == {hardware, config}
    message = lines[hardware]["message"]
    assert message.startswith(f"Failed: [SIMULATED] {hardware} dcgm_diag: DCGM's diagnostic "
                              "failed: GPU 3 (serial ")
    assert "test 'memory' Fail error id 58" in message and "error_kind" not in lines[hardware]
    assert lines[config]["error_kind"] == "dcgm_config"
    assert "error id 29: Persistence mode for GPU 0 is disabled" in lines[config]["message"]
    nodes = {n["node"]: n for n in verdict["nodes"]}
    assert nodes[hardware]["verdict"] == REJECTED and nodes[hardware]["code"] == "PC-GPU-DCGM"
    assert nodes[config]["verdict"] == NOT_CHECKED and nodes[config]["failed_clauses"] == []
    assert {n: v["verdict"] for n, v in nodes.items() if n not in (hardware, config)} == {
        n: ACCEPTED for n in nodes if n not in (hardware, config)}
    assert [line.split("NodeName=")[1].split()[0] for line in verdict["drain"]] == [hardware]


def test_dcgm_3x_output_gives_the_same_verdicts(pytester: pytest.Pytester) -> None:
    faults = "{node: n1, gpu: 1, dcgm_fail: pcie}, {node: n2, dcgm_config: persistence_mode}"
    verdict = _run(pytester, _spec("r2", faults, sim="dcgm: 3\n  "))
    assert {n["node"]: n["verdict"] for n in verdict["nodes"]} == {"n1": REJECTED,
                                                                   "n2": NOT_CHECKED}
    lines = _dcgm_lines(pytester)
    assert "DCGM 3.x" in lines["n1"]["method"] and "GPU 1 (serial " in lines["n1"]["message"]
    assert "test 'PCIe' Fail error id 98" in lines["n1"]["message"]
    assert lines["n2"]["error_kind"] == "dcgm_config"


def test_no_dcgmi_leaves_the_node_not_checked_never_failed(pytester: pytest.Pytester) -> None:
    verdict = _run(pytester, _spec("r1", sim="dcgm: none\n  "))
    assert {n["node"]: n["verdict"] for n in verdict["nodes"]} == {"n1": NOT_CHECKED,
                                                                   "n2": NOT_CHECKED}
    assert verdict["drain"] == [] and verdict["status"] != "PASS"
    line = _dcgm_lines(pytester)["n1"]
    assert line["error_kind"] == "tool_missing"
    assert line["message"].startswith("Failed: [SIMULATED] n1 dcgm_diag: cannot measure: "
                                      "dcgmi not installed")
