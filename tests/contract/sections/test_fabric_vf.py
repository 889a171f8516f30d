"""fabric.pcie on SR-IOV virtual functions (a cloud VM's NICs, the sim's `nic_virtual`):
a VF's link is its host's, neither passed nor failed; a node whose every counted port is
one is NOT CHECKED (error kind virtual_function), never rejected; mixed ports judge the
physical ones and say the VFs were left out; the Azure profiles leave fabric.pcie out,
so a VM of theirs can PASS."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.evidence.verdict.blame import VIRTUAL_PORT
from pytest_cluster.evidence.verdict.nodes import ACCEPTED, NOT_CHECKED
from tests.conftest import planned
from tests.contract.sections.test_fabric import failures
from tests.test_plugin import jsonl

WHY = ("are SR-IOV virtual functions: their PCIe link is the host's, which a VM cannot "
       "read")

#: n1 and n2 are VMs (every NIC a VF); n3 has one VF beside its physical NICs, n4 one VF
#: beside a physical NIC at x8.
VMS = """\
cluster: {name: vm, nodes: "n[1-4]", launcher: sim}
fabric: {ports: 8}
sim:
  faults:
    - {node: n1, nic_virtual: true}
    - {node: n2, nic_virtual: true}
    - {node: n3, nic: 3, nic_virtual: true}
    - {node: n4, nic: 3, nic_virtual: true}
    - {node: n4, nic: 5, nic_pcie_width: 8}
"""


def run_verdict(pytester: pytest.Pytester) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        (pytester.path / "reports" / "latest" / "verdict.json").read_text())
    return found


def verdict_of(pytester: pytest.Pytester) -> dict[str, dict[str, object]]:
    return {str(n["node"]): n for n in run_verdict(pytester)["nodes"]}


def test_a_vms_virtual_functions_are_not_checked_and_mixed_ports_judge_the_physical(
        pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(VMS)
    every = planned(pytester, VMS, "-k", "pcie")
    sim = parse_spec(VMS, "vms.yaml").sim
    assert sim is not None
    vms = [f.node for f in sim.faults if f.nic_virtual and f.nic is None]  # every NIC a VF
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", "-k", "pcie")
    assert vms == ["n1", "n2"]
    result.assert_outcomes(passed=len(every) - len(vms) - 1, failed=len(vms) + 1)
    assert run_verdict(pytester)["outcome"] == "FAIL"  # n4's x8 card; the VMs' said
    assert failures(pytester) == {
        **{f"test_fabric_pcie[{node}]": f"[SIMULATED] {node} pcie: not checked: mlx5_[0-7] "
           f"{WHY} (write fabric.pcie: false for a VM)" for node in vms},
        "test_fabric_pcie[n4]": "[SIMULATED] n4 pcie: 1 of 7 NIC(s) below their maximum "
                                "PCIe link: mlx5_5/1 PCIe Gen5 x8, can do Gen5 x16; left "
                                "out: mlx5_3 is an SR-IOV virtual function: its PCIe link "
                                "is the host's, which a VM cannot read"}
    records = {r["node"]: r for r in jsonl(pytester) if r.get("clause") == "fabric.pcie"}
    assert {node: records[node].get("error_kind") for node in records} == {
        "n1": VIRTUAL_PORT, "n2": VIRTUAL_PORT, "n3": None, "n4": None}
    assert records["n3"]["measured"] == (
        "Gen5 x16 of Gen5 x16 (mlx5_[0-2,4-7]); left out: mlx5_3 is an SR-IOV virtual "
        "function: its PCIe link is the host's, which a VM cannot read")
    assert {(r["node"], r["actor"]) for r in jsonl(pytester)
            if r.get("code") == "PC-SPEC-PCIE-VIRTUAL"} == {(node, "buyer-spec") for node in vms}
    nodes = verdict_of(pytester)
    assert {node: nodes[node]["verdict"] for node in nodes} == {
        "n1": NOT_CHECKED, "n2": NOT_CHECKED, "n3": ACCEPTED, "n4": "REJECTED"}


AZURE_VMS = """\
extends: {profile}
cluster: {{name: vm, nodes: "n[1-2]", launcher: sim}}
interconnect: {{busbw: {{intra_node: ">= 100 GB/s", inter_node: ">= 100 GB/s"}}}}
fabric: {{devices: "mlx5_*"{pcie}}}
sim:
  gpu_model: {model}
  faults:
    - {{node: n1, nic_virtual: true}}
    - {{node: n2, nic_virtual: true}}
"""


@pytest.mark.parametrize(("profile", "model"), [("azure-nd-h100-v5", "H100-SXM-80GB"),
                                               ("azure-nd-h200-v5", "H200-SXM-141GB")])
def test_a_vm_cluster_of_an_azure_profile_passes_without_fabric_pcie(
        pytester: pytest.Pytester, profile: str, model: str) -> None:
    """The profile leaves fabric.pcie out (its ports are VFs, cited): every node of a VM
    cluster with a fabric section is ACCEPTED, the run PASSes; written back on, the same
    cluster is NOT CHECKED, saying why, never REJECTED. (The sim's devices are mlx5_N,
    Azure's mlx5_ibN; its figures below Azure's: both overridden.)"""
    spec = AZURE_VMS.format(profile=profile, pcie="", model=model)
    (pytester.path / "vm.yaml").write_text(spec)
    assert not [case for case in planned(pytester, spec) if "fabric_pcie" in case]
    result = pytester.runpytest("--cluster=vm.yaml", "-p", "no:cacheprovider")
    assert (result.ret, run_verdict(pytester)["outcome"]) == (0, "PASS")
    assert {n["verdict"] for n in verdict_of(pytester).values()} == {ACCEPTED}
    assert any("fabric.pcie" in line and "not in contract" in line
               for line in result.stdout.lines)
    on = AZURE_VMS.format(profile=profile, pcie=", pcie: max", model=model)
    (pytester.path / "on.yaml").write_text(on)
    again = pytester.runpytest("--cluster=on.yaml", "-p", "no:cacheprovider", "-k",
                               "fabric_pcie")
    # INCOMPLETE: not checked, never a pass, never a failure
    assert (again.ret, run_verdict(pytester)["verdict"]) == (1, "INCOMPLETE")
    assert run_verdict(pytester)["outcome"] == "ERROR"
    assert {n["verdict"] for n in verdict_of(pytester).values()} == {NOT_CHECKED}
