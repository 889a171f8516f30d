"""inventory.json: the inventory probe on this machine, the record a node gets from its
probes (unreadable fields say why), the simulated NVML's VBIOS and board part, a GPU
replaced in the sim, and the file a run leaves."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_cluster.contract.sim_records import SimFault, SimSpec
from pytest_cluster.evidence.bundle.verify import verify
from pytest_cluster.launchers import ProbeResult
from pytest_cluster.launchers.result import ErrorKind
from pytest_cluster.measure.inventory import nic_parts, node_record
from pytest_cluster.measure.inventory_file import INVENTORY, InventoryDocument, is_unreadable
from pytest_cluster.probes import inventory, probe_source
from pytest_cluster.probes.inventory import read
from pytest_cluster.report.sections import inventory_html
from pytest_cluster.sim.cluster import describe_gpu
from pytest_cluster.sim.nics import nic_payload
from tests import shipped_probe


def run_probe(*args: str) -> dict[str, Any]:
    return parsed(printed(*args))


def printed(*args: str, timeout: float = 60) -> str:
    """The probe's stdout, run as it is shipped; TimeoutExpired past `timeout` seconds."""
    return shipped_probe.printed("inventory", *args, timeout=timeout)


def parsed(stdout: str) -> dict[str, Any]:
    return shipped_probe.answer("inventory", stdout)


def test_the_probe_reads_this_machine(tmp_path: Path) -> None:
    data = run_probe("--path", str(tmp_path))
    machine = data["machine"]
    assert machine["machine_id"] == read("/etc/machine-id")
    dmi = machine["dmi"]
    assert is_unreadable(dmi) or set(dmi) >= {"product_serial", "product_uuid"}
    assert "interfaces" not in data and "infiniband" not in data  # the NIC probe's
    done = subprocess.run([sys.executable, "-"], input=probe_source("nic"),
                          capture_output=True, text=True, check=True, timeout=60)
    interfaces, _ = nic_parts(json.loads(done.stdout)["data"])
    names = {i["name"] for i in interfaces}
    expected = {n for n in os.listdir("/sys/class/net")
                if Path(f"/sys/class/net/{n}/type").read_text().strip() != "772"}
    assert names == expected
    for interface in interfaces:
        assert cast("str", interface["address"]).count(":") == 5
        assert interface["link_layer"] in ("ethernet", "infiniband") or \
            cast("str", interface["link_layer"]).startswith("arp type")
        assert "driver" in interface or is_unreadable(interface.get("firmware"))
        rate = interface["rate_gbps"]
        assert isinstance(rate, float) or "unreadable" in rate
    (fs,) = data["filesystems"]
    assert fs["path"] == str(tmp_path)
    assert str(tmp_path).startswith(fs["mount_point"])
    devices = fs["block_devices"]
    assert is_unreadable(devices) or all(d["name"] and "size_bytes" in d for d in devices)


def test_what_cannot_be_read_says_why(tmp_path: Path) -> None:
    assert read(str(tmp_path / "absent")) == {"unreadable": f"{tmp_path / 'absent'}: not "
                                                            "present"}
    data = run_probe("--path", str(tmp_path / "absent"))
    assert data["filesystems"] == [{"path": str(tmp_path / "absent"), "unreadable":
                                    f"{tmp_path / 'absent'}: No such file or directory"}]
    done = subprocess.run([sys.executable, "-", "--nope"], input=probe_source("inventory"),
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 2 and "usage: inventory.py" in done.stderr


# -- a hostile tree: every file is untrusted ----------------------------------------------

def _dmi(root: Path) -> Path:
    dmi = root / "class/dmi/id"
    dmi.mkdir(parents=True)
    for name in inventory.DMI_FIELDS:
        (dmi / name).write_text(f"{name}-1\n")
    return dmi


def test_a_dmi_file_that_is_a_fifo_a_link_out_or_too_big_is_unreadable(tmp_path: Path) -> None:
    root = tmp_path / "sys"
    dmi = _dmi(root)
    (tmp_path / "secret").write_text("SECRET-1234\n")
    (dmi / "product_serial").unlink()
    os.mkfifo(dmi / "product_serial")
    (dmi / "product_uuid").unlink()
    (dmi / "product_uuid").symlink_to("../../../../secret")
    (dmi / "board_serial").write_text("x" * 5000)
    (dmi / "chassis_serial").write_text("y" * 300)
    stdout = printed("--sysfs", str(root), timeout=10)
    assert "SECRET" not in stdout
    found = parsed(stdout)["machine"]["dmi"]
    assert found["product_serial"] == {"unreadable": f"{dmi}/product_serial: a fifo, not a "
                                                     "regular file: not read"}
    assert found["product_uuid"] == {"unreadable": f"{dmi}/product_uuid: a link out of "
                                                   f"{root}: not followed"}
    assert found["board_serial"] == {"unreadable": f"{dmi}/board_serial: more than 4096 "
                                                   "bytes: not read"}
    assert found["chassis_serial"] == {"unreadable": f"{dmi}/chassis_serial: 300 characters, "
                                                     "more than the 256 kept"}
    assert found["sys_vendor"] == "sys_vendor-1"


def _block_tree(root: Path, of: Path, slaves: dict[str, str]) -> Path:
    """A sysfs whose block device of the filesystem `of` is is dm-0, built on `slaves`
    (name: where its link leads)."""
    device = of.stat().st_dev
    (root / "dev/block").mkdir(parents=True)
    (root / f"dev/block/{os.major(device)}:{os.minor(device)}").symlink_to("../../block/dm-0")
    (root / "block/dm-0/slaves").mkdir(parents=True)
    for name, target in slaves.items():
        (root / "block/dm-0/slaves" / name).symlink_to(target)
    return root / "block"


def test_a_block_device_is_never_followed_out_of_sysfs_nor_read_without_end(
        tmp_path: Path) -> None:
    root = tmp_path / "sys"
    outside = tmp_path / "outside"
    (outside / "device").mkdir(parents=True)
    (outside / "size").write_text("31337\n")
    (outside / "device/serial").write_text("SECRET-1234\n")
    block = _block_tree(root, tmp_path, {"sda": "../../sda", "evil": str(outside),
                                         "dm-0": "../../dm-0"})  # a loop: once
    (block / "sda/device").mkdir(parents=True)
    (block / "sda/size").write_text("²\n")
    os.mkfifo(block / "sda/device/serial")
    stdout = printed("--sysfs", str(root), "--path", str(tmp_path), timeout=10)
    assert "SECRET" not in stdout and "31337" not in stdout
    (fs,) = parsed(stdout)["filesystems"]
    evil, sda = fs["block_devices"]
    assert evil == {"name": "evil", "unreadable": f"{block}/dm-0/slaves/evil: a link out of "
                                                  f"{root}: not followed"}
    assert sda["name"] == "sda"
    assert sda["size_bytes"] == {"unreadable": f"{block}/sda/size: not a number of sectors: "
                                               "'²'"}
    assert sda["serial"] == {"unreadable": f"{block}/sda/serial: not present"}  # after wwid


def test_the_block_devices_followed_are_bounded(tmp_path: Path) -> None:
    root = tmp_path / "sys"
    count = inventory.MAX_DISKS + 10
    block = _block_tree(root, tmp_path, {f"d{i:03d}": f"../../d{i:03d}" for i in range(count)})
    for index in range(count):
        (block / f"d{index:03d}").mkdir()
        (block / f"d{index:03d}/size").write_text("8\n")
    found = inventory.filesystem(str(tmp_path), str(root))["block_devices"]
    assert isinstance(found, list)
    assert len(found) == inventory.MAX_DISKS
    assert [disk["name"] for disk in found[:-1]] == [f"d{i:03d}" for i in range(63)]
    assert found[-1] == {"name": "d063", "unreadable": f"{block}/dm-0/slaves: more than 64 "
                                                       "block devices: d063 and those after "
                                                       "it not followed"}


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


def test_the_report_renders_any_inventory_and_escapes_it() -> None:
    why = {"unreadable": "<script>alert(1)</script> not probed"}
    document = {"complete": False, "nodes": {
        "n1": why,
        "n2": {"simulated": False, "dmi": why, "machine_id": "<b>m</b>", "cpu": {},
               "memory_bytes": why, "software": {"nccl": why}, "gpus": why,
               "interfaces": why, "infiniband": why, "filesystems": why},
        "n3": {"gpus": [{"index": 0, "name": "H100", "serial": "<i>s</i>"}],
               "filesystems": [{"path": "/d", "block_devices": why}]}}}
    html = inventory_html(cast("InventoryDocument", document))
    assert "<script>" not in html and "<b>m</b>" not in html and "<i>s</i>" not in html
    assert "&lt;i&gt;s&lt;/i&gt;" in html and "3 node(s)" in html
    assert "The run was interrupted" in html
    assert inventory_html(None, "OSError: disk full") == (
        "<h2>Inventory</h2><p>Not taken: OSError: disk full</p>")
