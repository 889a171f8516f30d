"""host.golden's cases on the simulator (pytester): one case per node, the odd node named
with the field, its value and the golden one; against the nodes' majority, a golden node
or a file; no strict majority blames no node; an unreachable node fails once, as
unreachable; the fleet's faulty example fails gpu-004 alone for its drifted VBIOS."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.evidence.verdict.blame import NO_GOLDEN
from pytest_cluster.sim.cluster import DRIVER
from tests.conftest import faulted, planned
from tests.oracle import check

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


def _verdict(pytester: pytest.Pytester) -> dict[str, Any]:
    return dict(json.loads((pytester.path / "reports" / "latest" / "verdict.json")
                           .read_text()))


def test_without_a_strict_majority_no_node_is_blamed_and_each_value_is_said(
        pytester: pytest.Pytester) -> None:
    text = spec("majority", f"{{node: n2, gpu: 0, vbios: {DRIFTED}}}", nodes="n[1-2]")
    result, cases = run(pytester, text)
    assert failed(cases) == {"n1", "n2"}
    assert {line["error_kind"] for line in cases.values()} == {NO_GOLDEN}
    result.stdout.fnmatch_lines([f"*GPU 0 vbios: no strict majority: *{DRIFTED} on n2*"])
    assert {v["verdict"] for v in _verdict(pytester)["nodes"]} == {"NOT CHECKED"}


def test_an_undecided_comparison_leaves_every_view_incomplete_and_drains_none(
        pytester: pytest.Pytester) -> None:
    """Three nodes, three VBIOS versions of GPU 2 (a new user's u.yaml): nothing singles a
    node out, so each is NOT CHECKED with golden's own fault (never the network's
    'look at a leaf or spine switch'), the run INCOMPLETE (ERROR, exit 2), no cluster
    check failed, and verdict.json, the gate and every other view agree (pytest exits 1
    for its failed cases, as for any case not judged: docs/running.md)."""
    text = spec("majority", f"{{node: n3, gpu: 1, vbios: {DRIFTED}}}, "
                "{node: n2, gpu: 1, vbios: 96.00.99.00.01}", nodes="n[1-3]")
    (pytester.path / "trial.yaml").write_text(text)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports")
    run_dir = (pytester.path / "reports" / "latest").resolve()
    assert check(run_dir, result.stdout.str()) == []
    verdict = _verdict(pytester)
    assert (verdict["verdict"], verdict["outcome"]) == ("INCOMPLETE", "ERROR")
    assert verdict["cluster_checks_failed"] == []
    assert {(v["verdict"], v["code"]) for v in verdict["nodes"]} == {
        ("NOT CHECKED", "PC-GOLDEN-UNDECIDED")}
    assert "cluster check failed" not in result.stdout.str()
    assert "leaf or spine" not in result.stdout.str()
    gate = subprocess.run([sys.executable, "-m", "pytest_cluster.cli", "gate", str(run_dir),
                           "--exit-status", str(int(result.ret))],
                          capture_output=True, text=True, check=False, timeout=120)
    assert gate.returncode == 2, gate.stdout + gate.stderr
    assert "DRAIN" not in gate.stdout


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


def test_a_golden_file_that_is_not_one_is_a_usage_error_before_any_test_runs(
        pytester: pytest.Pytester) -> None:
    """A golden file with a key it may not have (a new user's gf/s.yaml) failed every
    node's case and the cluster: it is the spec's slip, refused before anything runs."""
    pytester.makefile(".yaml", golden="vbios: 1\n")
    pytester.makefile(".yaml", trial=spec("golden.yaml", ""))
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*trial.yaml:2: host.golden: the golden file cannot be "
                                 "read: *vbios*"])
    assert not (pytester.path / "reports").exists()


def test_a_hostile_vbios_is_shown_escaped_in_every_line(pytester: pytest.Pytester) -> None:
    """A node's VBIOS with ESC, a bidi override and a NUL (the sim's vbios fault plays a
    hostile node) is never printed raw: not in the summary, not in pytest's FAILED lines,
    not in the record."""
    text = spec("majority", '{node: n4, gpu: 1, vbios: "\\e[2J\\u202eEVIL\\x00"}')
    result, cases = run(pytester, text)
    assert failed(cases) == {"n4"}
    out = result.stdout.str()
    assert not {"\x1b", "\u202e", "\x00"} & set(out)
    assert "\\x1b[2J\\u202eEVIL\\x00" in out
    assert not {"\x1b", "\u202e", "\x00"} & set(cases["n4"]["message"])


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
    pytester.makefile(".yaml", golden=f"driver: {DRIVER}\n")
    assert [c for c in planned(pytester, spec("golden.yaml", ""), "--cluster-node=n1")
            if c.startswith(CASE)] == [f"{CASE}[n1]"]
