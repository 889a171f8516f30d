"""The inventory probe as it is shipped: this machine read, what cannot be read said, and a
hostile sysfs tree read within bounds (every file is untrusted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

from pytest_cluster.measure.inventory import nic_parts
from pytest_cluster.measure.inventory_file import is_unreadable
from pytest_cluster.probes import inventory, probe_source
from pytest_cluster.probes.inventory import read
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
