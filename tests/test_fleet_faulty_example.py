"""The whole shipped faulty example (examples/sim-h100-fleet-faulty.yaml), run as shipped:
every node its `sim: faults:` give a fault of its own is not accepted, the one without is;
each node has the verdict and the first fault code its fault calls for (a NOT CHECKED
node's: what kept it undecided, said in every view); the gate drains exactly the nodes
that failed; every view agrees (tests/oracle.py)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.evidence.verdict.gate import decide
from pytest_cluster.evidence.verdict.nodes import ACCEPTED, NOT_CHECKED, REJECTED, outcome_of
from pytest_cluster.report import failures
from tests.oracle import check

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sim-h100-fleet-faulty.yaml"

#: Each faulted node's verdict and first fault code, as the example's header says them.
EXPECTED = {
    "gpu-001": (REJECTED, "PC-GPU-DCGM"),  # DCGM's memory test failed on GPU 3
    "gpu-002": (NOT_CHECKED, "PC-DCGM-CONFIG"),  # persistence mode off: never drained
    "gpu-003": (REJECTED, "PC-NODE-RANK-DEAD"),  # NCCL RAS: its rank on GPU 1 DEAD
    "gpu-004": (REJECTED, "PC-NODE-DRIFT"),  # a VBIOS not the fleet's
    "gpu-005": (REJECTED, "PC-NET-PCIE"),  # a NIC trained at x8
}


def _fault_said(entry: dict[str, str]) -> str:
    return f"; {entry['code']} ({entry['actor']}): {entry['action']}"


def test_the_faulty_fleet_example_fails_each_faulted_node_as_its_fault_calls_for(
        pytester: pytest.Pytester) -> None:
    spec = parse_spec(EXAMPLE.read_text(encoding="utf-8"), EXAMPLE.name)
    assert spec.sim is not None
    faulted = {fault.node for fault in spec.sim.faults}
    healthy = set(spec.cluster.nodes) - faulted
    assert faulted == set(EXPECTED) and healthy, (faulted, healthy)
    shutil.copy(EXAMPLE, pytester.path / "faulty.yaml")
    metrics = pytester.path / "metrics.prom"
    result = pytester.runpytest("--cluster=faulty.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", f"--cluster-metrics={metrics}")
    run = (pytester.path / "reports" / "latest").resolve()
    assert check(run, result.stdout.str(), metrics) == []
    document = json.loads((run / "verdict.json").read_text(encoding="utf-8"))
    nodes = {entry["node"]: entry for entry in document["nodes"]}
    assert {n for n, e in nodes.items() if e["verdict"] != ACCEPTED} == faulted
    assert {n for n, e in nodes.items() if e["verdict"] == ACCEPTED} == healthy
    assert {n: (nodes[n]["verdict"], nodes[n]["code"]) for n in faulted} == EXPECTED
    assert all(nodes[n]["action"] and nodes[n]["actor"] for n in faulted)
    drained = sorted(n for n in faulted if outcome_of(EXPECTED[n][0]) == "FAIL")
    assert [line.split("NodeName=")[1].split()[0] for line in document["drain"]] == drained
    # the node not checked: what kept it undecided ends its line, in the terminal too
    unchecked = [n for n in sorted(faulted) if EXPECTED[n][0] == NOT_CHECKED]
    for node in unchecked:
        said = [line for line in result.outlines if line.startswith(f"  NOT CHECKED {node}: ")]
        assert len(said) == 1 and said[0].endswith(_fault_said(nodes[node])), said
    # the gate: FAIL exactly the drained nodes, the one not checked said and not drained
    decided = decide(document, int(result.ret))
    assert sorted(node.node for node in decided.failed) == drained
    gate = subprocess.run([sys.executable, "-m", "pytest_cluster.cli", "gate", str(run),
                           "--exit-status", str(int(result.ret))],
                          capture_output=True, text=True, check=False, timeout=120)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    lines = gate.stdout.splitlines()
    assert sorted(line.split()[2].rstrip(":") for line in lines
                  if line.startswith("pytest-cluster FAIL ")) == drained
    for node in unchecked:
        [line] = [line for line in lines if line.startswith(f"pytest-cluster ERROR {node}: ")]
        assert line.endswith(_fault_said(nodes[node]) + " (not drained)"), line



def _text(html_part: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", html_part))


def test_the_faulty_fleet_s_views_name_what_failed_and_say_apart_what_was_not_decided(
        pytester: pytest.Pytester) -> None:
    """report.html's What failed names each node's failed GPU, test or field (the case's
    message where its measurement is words, '1 of 60 field(s) differ'); its Clauses table
    says gpu-002's DCGM configuration ERROR not decided, not failed on; the terminal's
    count of failed checks says how many of them were not decided, as the nodes' lines."""
    shutil.copy(EXAMPLE, pytester.path / "faulty.yaml")
    result = pytester.runpytest("--cluster=faulty.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports")
    run = (pytester.path / "reports" / "latest").resolve()
    report = (run / "report.html").read_text(encoding="utf-8")
    block = report[report.index('id="what-failed"'):report.index("<h2>Nodes</h2>")]
    said = {line.split()[0]: line for line in _text(block).splitlines()
            if line.startswith("gpu-")}
    assert "GPU 3" in said["gpu-001"] and "test 'memory'" in said["gpu-001"], said
    assert "GPU 3 vbios 96.00.89.00.01" in said["gpu-004"], said
    assert "result(s) passed" not in block and "field(s) differ" not in block
    assert all(len(line) < failures.MAX_MESSAGE + 1000 for line in said.values())
    table = report[report.index('<table id="clauses">'):]
    [dcgm] = [_text(row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)
              if "gpus.dcgm_diag" in row][:1]
    assert "gpu-001; not decided: gpu-002" in dcgm, dcgm
    document = json.loads((run / "verdict.json").read_text(encoding="utf-8"))
    undecided = sum(n["checks_undecided"] for n in document["nodes"])
    assert undecided == sum(EXPECTED[n][0] == NOT_CHECKED for n in EXPECTED)
    result.stdout.fnmatch_lines([f"cluster sim-h100-fleet-faulty: * contract check(s) ran, "
                                 f"* failed, {undecided} of them not decided; nodes covered:*"])


def test_the_faulty_fleet_example_s_header_says_each_node_s_fault_and_no_note_to_developers(
        ) -> None:
    """Its opening comment names every node (what fails on it, or that it has no fault), as
    the other examples' do, and keeps no note on how the file was written."""
    text = EXAMPLE.read_text(encoding="utf-8")
    header = text[:text.index("\ncluster:")].splitlines()
    spec = parse_spec(text, EXAMPLE.name)
    named = {line.split()[1].rstrip(":").removesuffix("'s") for line in header
             if re.match(r"#   gpu-\d+", line)}
    assert named == set(spec.cluster.nodes), named
    assert not [line for line in header if "added below" in line or "the change" in line]
