"""Inventory probe: what exactly this node is, for the record of what was tested.

The machine id, the DMI system serial and UUID and the block devices behind each
filesystem given with --path. CPU, memory, versions come from the host probe, GPUs from
the GPU probe (NVML), network interfaces and InfiniBand HCAs from the NIC probe; this one
reads what none of them does.

Runs ON a node with only the standard library; shipped as a single file. A field that
cannot be read is {"unreadable": why}, never a guess. Prints one JSON document.
"""

from __future__ import annotations

import getopt
import json
import os
import socket
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DMI = "/sys/class/dmi/id"
DMI_FIELDS = ("sys_vendor", "product_name", "product_serial", "product_uuid", "board_vendor",
              "board_name", "board_serial", "chassis_serial", "bios_version")


def unreadable(why: str) -> dict[str, str]:
    return {"unreadable": why}


def read(path: str) -> Any:
    """The file's text, stripped, or {"unreadable": why}."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except PermissionError:
        return unreadable(f"{path}: permission denied (readable by root only)")
    except FileNotFoundError:
        return unreadable(f"{path}: not present")
    except OSError as exc:
        return unreadable(f"{path}: {exc.strerror or exc}")


def machine() -> dict[str, Any]:
    found: dict[str, Any] = {"hostname": socket.gethostname(),
                             "machine_id": read("/etc/machine-id")}
    if not os.path.isdir(DMI):
        found["dmi"] = unreadable(f"{DMI} not present (no DMI tables: a container, a VM "
                                  "without them, or not x86/arm64 firmware)")
    else:
        found["dmi"] = {name: read(os.path.join(DMI, name)) for name in DMI_FIELDS}
    return found


def mount_of(path: str) -> dict[str, str] | None:
    """The /proc/self/mountinfo entry of the filesystem `path` is on."""
    device = os.stat(path).st_dev
    wanted = f"{os.major(device)}:{os.minor(device)}"
    best: dict[str, str] | None = None
    real = os.path.realpath(path)
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) < 10 or fields[2] != wanted or " - " not in line:
                continue
            point = fields[4].replace("\\040", " ")
            tail = line.split(" - ", 1)[1].split()
            if (real == point or real.startswith(point.rstrip("/") + "/")) and (
                    best is None or len(point) > len(best["mount_point"])):
                best = {"mount_point": point, "fs_type": tail[0],
                        "source": tail[1] if len(tail) > 1 else ""}
    return best


def disk(name: str) -> dict[str, Any]:
    base = f"/sys/block/{name}"
    size = read(f"{base}/size")
    serial = read(f"{base}/device/serial")
    if isinstance(serial, dict):
        wwid = read(f"{base}/device/wwid")
        serial = wwid if not isinstance(wwid, dict) else read(f"{base}/serial")
    return {"name": name, "model": read(f"{base}/device/model"), "serial": serial,
            "size_bytes": int(size) * 512 if isinstance(size, str) and size.isdigit()
            else size,
            "rotational": read(f"{base}/queue/rotational") == "1"}


def disks_under(sys_dir: str, seen: set[str]) -> list[dict[str, Any]]:
    """The whole disks behind a block device: its disk if it is a partition, and the disks
    of what it is built on (device mapper, md RAID, LVM) followed through `slaves`."""
    real = os.path.realpath(sys_dir)
    if os.path.exists(os.path.join(real, "partition")):
        real = os.path.dirname(real)
    name = os.path.basename(real)
    if name in seen:
        return []
    seen.add(name)
    slaves = os.path.join(real, "slaves")
    below = sorted(os.listdir(slaves)) if os.path.isdir(slaves) else []
    if below:
        found = []
        for slave in below:
            found += disks_under(os.path.join(slaves, slave), seen)
        return found
    return [disk(name)]


def filesystem(path: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": path}
    try:
        mount = mount_of(path)
    except OSError as exc:
        entry["unreadable"] = f"{path}: {exc.strerror or exc}"
        return entry
    if mount is None:
        entry["unreadable"] = f"{path}: no entry in /proc/self/mountinfo"
        return entry
    entry.update(mount)
    device = os.stat(path).st_dev
    sys_dir = f"/sys/dev/block/{os.major(device)}:{os.minor(device)}"
    if not os.path.exists(sys_dir):
        entry["block_devices"] = unreadable(
            f"no block device: a {mount['fs_type']} filesystem from {mount['source']}")
    else:
        entry["block_devices"] = disks_under(sys_dir, set())
    return entry


def main(argv: list[str] | None = None) -> int:
    try:
        found, rest = getopt.getopt(sys.argv[1:] if argv is None else argv, "", ["path="])
        if rest:
            raise getopt.GetoptError(f"unexpected argument {rest[0]!r}")
    except getopt.GetoptError as exc:
        print(f"usage: inventory.py [--path DIR]...: {exc}", file=sys.stderr)
        return 2
    data = {"machine": machine(), "filesystems": [filesystem(value) for _, value in found]}
    print(json.dumps({"probe": "inventory", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
