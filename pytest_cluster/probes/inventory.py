"""Inventory probe: what exactly this node is, for the record of what was tested.

The machine id, the DMI system serial and UUID, every network interface (MAC, driver,
firmware, link layer, rate), every InfiniBand device (GUIDs, firmware, ports and their
rates) and the block devices behind each filesystem given with --path. CPU, memory,
versions come from the host probe and GPUs from the GPU probe (NVML); this one reads what
neither does.

Runs ON a node with only the standard library; shipped as a single file. A field that
cannot be read is {"unreadable": why}, never a guess. Prints one JSON document.
"""

from __future__ import annotations

import getopt
import json
import os
import socket
import struct
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DMI = "/sys/class/dmi/id"
DMI_FIELDS = ("sys_vendor", "product_name", "product_serial", "product_uuid", "board_vendor",
              "board_name", "board_serial", "chassis_serial", "bios_version")
#: /sys/class/net/*/type (include/uapi/linux/if_arp.h)
LINK_LAYERS = {1: "ethernet", 32: "infiniband", 772: "loopback", 65534: "none"}
SIOCETHTOOL = 0x8946
ETHTOOL_GDRVINFO = 0x3
DRVINFO_BYTES = 196  # struct ethtool_drvinfo
IFREQ_BYTES = 40  # struct ifreq on 64-bit Linux


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


def drvinfo(name: str) -> dict[str, Any]:
    """Driver, its version, firmware and bus of interface `name` (ETHTOOL_GDRVINFO, what
    `ethtool -i` prints)."""
    import array  # noqa: PLC0415 - only here
    import fcntl  # noqa: PLC0415

    buffer = array.array("B", struct.pack("I", ETHTOOL_GDRVINFO)
                         + bytes(DRVINFO_BYTES - 4))
    address, _ = buffer.buffer_info()
    request = struct.pack("16sP", name.encode()[:15], address)
    request += bytes(IFREQ_BYTES - len(request))
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            fcntl.ioctl(sock.fileno(), SIOCETHTOOL, request)
    except OSError as exc:
        return unreadable(f"ethtool drvinfo of {name}: {exc.strerror or exc}")
    raw = buffer.tobytes()

    def string(index: int) -> str:
        return raw[4 + 32 * index: 4 + 32 * (index + 1)].split(b"\0", 1)[0].decode(
            errors="replace")

    return {"driver": string(0), "driver_version": string(1),
            "firmware": string(2) or unreadable(f"the {string(0)} driver reports none"),
            "bus": string(3)}


def rate_gbps(base: str) -> Any:
    speed = read(os.path.join(base, "speed"))
    if isinstance(speed, dict):
        return unreadable(speed["unreadable"].replace("Invalid argument",
                                                      "no speed (link down or virtual)"))
    try:
        mbps = int(speed)
    except ValueError:
        return unreadable(f"{base}/speed: {speed!r}")
    if mbps <= 0:
        return unreadable(f"{base}/speed: {mbps} (link down or a virtual interface)")
    return mbps / 1000


def interfaces() -> Any:
    root = "/sys/class/net"
    try:
        names = sorted(os.listdir(root))
    except OSError as exc:
        return unreadable(f"{root}: {exc.strerror or exc}")
    found = []
    for name in names:
        base = os.path.join(root, name)
        kind = read(os.path.join(base, "type"))
        layer = LINK_LAYERS.get(int(kind), f"arp type {kind}") if str(kind).isdigit() \
            else kind
        if layer == "loopback":
            continue
        device = os.path.join(base, "device")
        found.append({
            "name": name, "address": read(os.path.join(base, "address")),
            "link_layer": layer, "state": read(os.path.join(base, "operstate")),
            "rate_gbps": rate_gbps(base), "mtu": read(os.path.join(base, "mtu")),
            "pci": os.path.basename(os.path.realpath(device)) if os.path.exists(device)
            else None,
            **drvinfo(name)})
    return found


def infiniband() -> Any:
    root = "/sys/class/infiniband"
    if not os.path.isdir(root):
        return []
    found = []
    for name in sorted(os.listdir(root)):
        base = os.path.join(root, name)
        ports = []
        ports_dir = os.path.join(base, "ports")
        for port in sorted(os.listdir(ports_dir)) if os.path.isdir(ports_dir) else ():
            where = os.path.join(ports_dir, port)
            ports.append({"port": port, "state": read(os.path.join(where, "state")),
                          "rate": read(os.path.join(where, "rate")),
                          "link_layer": read(os.path.join(where, "link_layer"))})
        net = os.path.join(base, "device", "net")
        found.append({"name": name, "node_guid": read(os.path.join(base, "node_guid")),
                      "sys_image_guid": read(os.path.join(base, "sys_image_guid")),
                      "firmware": read(os.path.join(base, "fw_ver")),
                      "board_id": read(os.path.join(base, "board_id")),
                      "hca_type": read(os.path.join(base, "hca_type")),
                      "netdevs": sorted(os.listdir(net)) if os.path.isdir(net) else [],
                      "ports": ports})
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
    data = {"machine": machine(), "interfaces": interfaces(), "infiniband": infiniband(),
            "filesystems": [filesystem(value) for _, value in found]}
    print(json.dumps({"probe": "inventory", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
