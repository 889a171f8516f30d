"""host.golden's cases on the simulator (pytester): one case per node, the odd node named
with the field, its value and the golden one; against the nodes' majority, a golden node
or a file; no strict majority blames no node; an unreachable node fails once, as
unreachable; the fleet's faulty example fails gpu-004 alone for its drifted VBIOS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.sim.cluster import DRIVER
from tests.conftest import faulted, planned

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CASE = "test_golden_config"
DRIFTED = "96.00.89.00.01"
SXM_VBIOS = "96.00.74.00.0F"  # the simulated H100 SXM's (sim/cluster.py VBIOS)


def spec(golden: str, faults: str, nodes: str = "n[1-5]") -> str:
    return (f"cluster: {{name: golden, nodes: '{nodes}', launcher: sim}}\n"
            f"host: {{golden: {golden}}}\n"
            "gpus: {count: 2, model: H100-SXM-80GB}\n"
            "fabric: {ports: 2, link_layer: InfiniBand}\n"
            f"sim: {{gpus_per_node: 2, faults: [{faults}]}}\n")


def run(pytester: pytest.Pytester, text: str, *args: str) -> tuple[pytest.RunResult,
                                                                    dict[str, dict[str, Any]]]:
    pytester.makefile(".yaml", trial=text)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", "-k", CASE,
                                *args)
    latest = pytester.path / "reports" / "latest"
    lines = [json.loads(line) for line in (latest / "results.jsonl").read_text().splitlines()]
    cases = {line["node"]: line for line in lines if line.get("spec_key") == "host.golden"}
    return result, cases


def failed(cases: dict[str, dict[str, Any]]) -> set[str]:
    return {node for node, line in cases.items() if line.get("outcome") == "failed"}


def test_the_odd_node_is_named_with_the_field_its_value_and_the_majoritys(
        pytester: pytest.Pytester) -> None:
    text = spec("majority", f"{{node: n4, gpu: 1, vbios: {DRIFTED}}}")
    result, cases = run(pytester, text)
    odd = faulted(text, "vbios")
    assert failed(cases) == set(odd) == {"n4"}
    assert len(cases) == len(planned(pytester, text, "-k", CASE))
    result.stdout.fnmatch_lines([f"*n4 golden: n4 GPU 1 vbios {DRIFTED}, golden {SXM_VBIOS} "
                                 "(majority 4 of 5)*"])
    assert cases["n4"].get("error_kind") is None  # a finding, not an error
    raw = cases["n1"]["raw"]
    assert raw["fields"]["GPU 1 vbios"] == {"value": SXM_VBIOS, "golden": SXM_VBIOS,
                                            "source": "majority 4 of 5"}
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    rejected = {v["node"]: v["code"] for v in verdict["nodes"] if v["verdict"] == "REJECTED"}
    assert rejected == {"n4": "PC-NODE-DRIFT"}


def test_against_a_golden_node_every_other_node_differs_from_it(
        pytester: pytest.Pytester) -> None:
    text = spec("n4", f"{{node: n4, gpu: 1, vbios: {DRIFTED}}}")
    result, cases = run(pytester, text)
    assert failed(cases) == set(cases) - {"n4"}
    result.stdout.fnmatch_lines([f"*n1 golden: n1 GPU 1 vbios {SXM_VBIOS}, golden {DRIFTED} "
                                 "(golden node n4)*"])


def test_without_a_strict_majority_no_node_is_blamed_and_each_value_is_said(
        pytester: pytest.Pytester) -> None:
    text = spec("majority", f"{{node: n2, gpu: 0, vbios: {DRIFTED}}}", nodes="n[1-2]")
    result, cases = run(pytester, text)
    assert failed(cases) == {"n1", "n2"}
    assert {line["error_kind"] for line in cases.values()} == {"undecided"}
    result.stdout.fnmatch_lines([f"*GPU 0 vbios: no strict majority: *{DRIFTED} on n2*"])
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    assert {v["verdict"] for v in verdict["nodes"]} == {"NOT CHECKED"}


def test_an_unreachable_node_fails_once_as_unreachable_and_the_others_pass(
        pytester: pytest.Pytester) -> None:
    text = spec("majority", "{node: n3, down: true}")
    _, cases = run(pytester, text)
    assert failed(cases) == {"n3"}
    assert cases["n3"]["error_kind"] == "unreachable"


def test_against_a_yaml_of_golden_values(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", golden=f"driver: {DRIVER}\ngpu: {{vbios: {SXM_VBIOS}}}\n")
    text = spec("golden.yaml", f"{{node: n4, gpu: 1, vbios: {DRIFTED}}}")
    result, cases = run(pytester, text)
    assert failed(cases) == {"n4"}
    result.stdout.fnmatch_lines([f"*n4 GPU 1 vbios {DRIFTED}, golden {SXM_VBIOS} (golden "
                                 "file golden.yaml)*"])
    # the kernel is not in the file: not compared, said
    assert cases["n1"]["raw"]["fields"]["kernel"]["golden"] is None


def test_against_the_inventory_a_healthy_run_wrote(pytester: pytest.Pytester) -> None:
    run(pytester, spec("majority", ""))
    inventory = pytester.path / "reports" / "latest" / "inventory.json"
    (pytester.path / "golden.json").write_bytes(inventory.read_bytes())
    result, cases = run(pytester, spec("golden.json", f"{{node: n2, gpu: 0, vbios: {DRIFTED}}}"))
    assert failed(cases) == {"n2"}
    result.stdout.fnmatch_lines([f"*n2 GPU 0 vbios {DRIFTED}, golden {SXM_VBIOS} (golden "
                                 "file golden.json, majority 5 of 5)*"])


def test_a_golden_file_that_is_not_one_blames_no_node(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", golden="vbios: 1\n")
    _, cases = run(pytester, spec("golden.yaml", ""))
    assert failed(cases) == set(cases)
    assert {line["error_kind"] for line in cases.values()} == {"undecided"}


def test_the_fleets_faulty_example_fails_its_drifted_node_alone(
        pytester: pytest.Pytester) -> None:
    text = (EXAMPLES / "sim-h100-fleet-faulty.yaml").read_text(encoding="utf-8")
    result, cases = run(pytester, text)
    drifted = faulted(text, "vbios")
    assert drifted == ("gpu-004",)
    # a node fails only for a fault of its own that changes a compared field (gpu-005's
    # narrow NIC link is one: the majority's ports are x16)
    assert set(drifted) <= failed(cases) <= set(faulted(text))
    assert "vbios" in cases["gpu-004"]["message"]
    assert cases["gpu-006"]["outcome"] == "passed"
    result.stdout.fnmatch_lines([f"*gpu-004 GPU 3 vbios {DRIFTED}, golden *(majority 5 of 6)*"])


def test_a_run_of_some_nodes_compares_against_a_file_only(pytester: pytest.Pytester) -> None:
    """The nodes' majority and a golden node are of the whole cluster: a run of some
    nodes (--cluster-node) lists host.golden as not checked; a file it compares with."""
    assert not [c for c in planned(pytester, spec("majority", ""), "--cluster-node=n1")
                if c.startswith(CASE)]
    assert [c for c in planned(pytester, spec("golden.yaml", ""), "--cluster-node=n1")
            if c.startswith(CASE)] == [f"{CASE}[n1]"]
