"""inventory.json: the record a node gets from its probes (unreadable fields say why), the
simulated NVML's VBIOS and board part, a GPU replaced in the sim, and the file a run leaves
(the inventory probe itself: tests/probes/test_inventory.py)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from pytest_cluster.contract.sections.sim_records import SimFault, SimSpec
from pytest_cluster.evidence.bundle.verify import verify
from pytest_cluster.launchers import ProbeResult
from pytest_cluster.launchers.result import ErrorKind
from pytest_cluster.measure.inventory import nic_parts, node_record
from pytest_cluster.measure.inventory_file import INVENTORY, is_unreadable
from pytest_cluster.sim.cluster import describe_gpu
from pytest_cluster.sim.nics import nic_payload


def _result(probe: str, data: dict[str, Any] | None, simulated: bool = False,
            error: ErrorKind | None = None) -> ProbeResult:
    return ProbeResult(node="n1", probe=probe, data=data, simulated=simulated, error=error,
                       message="connection refused" if error else "", exit_code=0)


HOST = {"hostname": "n1", "cpu": {"model": "EPYC", "cores": 96, "threads": 192, "sockets": 2},
        "memory": {"total_bytes": 2**40}, "os": "Ubuntu", "versions": {
            "kernel": "6.8", "python": "3.12", "torch": None, "cuda": None, "nccl": None,
            "driver": "550.1"}, "sources": {}}


def test_a_node_record_joins_its_probes_and_marks_what_is_missing() -> None:
    gpu = {"driver": "550.90.07", "cuda_driver": "12.4", "count": 1,
           "gpus": [{"index": 0, "name": "H100", "uuid": "GPU-1", "serial": "165", "vbios":
                     "96.00", "board_part": "692", "pci_bus_id": "0:18", "ecc": {}}]}
    record = node_record(_result("host", HOST), _result("gpu", gpu), None,
                         _result("gpu_perf", {"nccl": "2.21.5"}), with_gpus=True)
    assert record["gpus"] == [{"index": 0, "name": "H100", "uuid": "GPU-1", "serial": "165",
                               "board_part": "692", "vbios": "96.00", "pci_bus_id": "0:18"}]
    assert record["software"]["driver"] == "550.90.07"  # NVML's, not the module's
    assert record["software"]["nccl"] == "2.21.5"
    assert record["software"]["torch"] == {"unreadable": "not found: looked in package "
                                                         "metadata of torch"}
    assert record["nccl_source"].startswith("torch.cuda.nccl.version()")
    assert record["dmi"] == {"unreadable": "the inventory probe did not run on this node"}
    assert record["cpu"] == {"model": "EPYC", "sockets": 2, "cores": 96, "threads": 192}
    no_nvml = node_record(_result("host", HOST), _result("gpu", {"error": "NVML not "
                                                                  "available: driver"}),
                          None, None, with_gpus=True)
    assert no_nvml["gpus"] == {"unreadable": "NVML not available: driver"}
    assert is_unreadable(no_nvml["software"]["nccl"])
    down = node_record(_result("host", None, error=ErrorKind.UNREACHABLE), None, None, None,
                       with_gpus=True)
    assert set(down) == {"simulated", "unreadable"}
    assert "connection refused" in down["unreadable"]


def test_the_sim_answers_vbios_and_a_replaced_gpu_is_another_board() -> None:
    sim = SimSpec("H100-SXM-80GB", 8, faults=(SimFault("n1", 6, 1, replaced=True),))
    healthy = SimSpec("H100-SXM-80GB", 8)
    for index in range(8):
        before, after = describe_gpu(healthy, "n1", index), describe_gpu(sim, "n1", index)
        assert after["vbios"] == "96.00.74.00.0F"
        assert (before["serial"] == after["serial"]) == (index != 6)
        assert (before["uuid"] == after["uuid"]) == (index != 6)
    slow = SimSpec("H100-SXM-80GB", 8, faults=(SimFault("n1", None, 1, link_factor=0.5),))
    _, hcas = nic_parts(nic_payload(slow, "n1", None))
    assert {p["rate"] for h in hcas for p in h["ports"]} == {"200 Gb/sec (4X HDR)"}
    assert len(hcas) == 8 and hcas[0]["firmware"] == "28.39.1002"
    assert hcas[0]["netdevs"] == ["ibp0s0"]


SIM_SPEC = """\
cluster: {name: inv, nodes: "n[1-3]", launcher: sim}
gpus:
  count: 8
  matmul: {bf16: ">= 700 TFLOPS"}
sim:
  gpus_per_node: 8
  faults:
    - {node: n3, down: true}
"""


def test_a_run_leaves_its_inventory_listed_in_its_manifest(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SIM_SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # n3 does not answer
    run_dir = (pytester.path / "reports" / "latest").resolve()
    document = json.loads((run_dir / INVENTORY).read_text())
    assert document["simulated"] is True and document["complete"] is True
    assert list(document["nodes"]) == ["n1", "n2", "n3"]
    n1 = document["nodes"]["n1"]
    assert n1["simulated"] is True
    probed = json.loads(next((run_dir / "probes").glob("gpu-*[0-9a-f].json")).read_text())
    serials = [g["serial"] for g in probed["n1"]["data"]["gpus"]]
    assert [g["serial"] for g in n1["gpus"]] == serials
    assert {g["vbios"] for g in n1["gpus"]} == {"96.00.74.00.0F"}
    assert n1["software"]["nccl"] == "2.21.5"  # from the torch measurements
    assert n1["dmi"]["product_serial"].startswith("SIM")
    assert len(n1["infiniband"]) == 8
    assert "does not answer" in document["nodes"]["n3"]["unreadable"]
    assert verify(run_dir).ok
    statement = json.loads(base64.b64decode(json.loads(
        (run_dir / "manifest.intoto.json").read_text())["payload"]))
    assert INVENTORY in {s["name"] for s in statement["subject"]}
    assert "inventory.json" in result.stdout.str()
    report = (run_dir / "report.html").read_text()
    assert "<h2>Inventory</h2>" in report and serials[0] in report
    assert n1["dmi"]["product_serial"] in report
    assert "UNSIGNED (no --cluster-sign-key or --cluster-ssh-sign-key given)" in report
