"""Inventory probe: what exactly this node is, for the record of what was tested.

The machine id, the DMI system serial and UUID and the block devices behind each
filesystem given with --path. CPU, memory, versions come from the host probe, GPUs from
the GPU probe (NVML), network interfaces and InfiniBand HCAs from the NIC probe; this one
reads what none of them does.

Every file is read without trust: only a regular file (opened without blocking: a fifo
is named, never waited on), at most a page of it (mountinfo: MAX_MOUNTINFO_BYTES), and a
file of sysfs only when its real path is inside the sysfs read (a link out of it is named,
not followed). `--sysfs ROOT` reads another tree than /sys (a test's).

Runs ON a node with only the standard library; shipped as a single file. A field that
cannot be read is {"unreadable": why}, never a guess. Prints one JSON document.
"""

from __future__ import annotations

import getopt
import heapq
import json
import os
import re
import socket
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # not imported when it runs: its start-up stays short
    from typing import TypedDict

    class Unreadable(TypedDict):
        """A value the probe could not read, and why."""

        unreadable: str

    #: A file's text, or why it was not read.
    Text = str | Unreadable

    class Machine(TypedDict):
        hostname: str
        machine_id: Text
        dmi: dict[str, Text] | Unreadable  # by DMI_FIELDS

    class Mount(TypedDict):
        mount_point: str
        fs_type: str
        source: str

    class Disk(TypedDict, total=False):
        """A whole disk; only `name` and `unreadable` when it could not be followed."""

        name: str
        model: Text
        serial: Text
        size_bytes: int | Unreadable
        rotational: bool
        unreadable: str

    class Filesystem(TypedDict, total=False):
        """The filesystem a --path is on; `path` and `unreadable` when it was not found."""

        path: str
        mount_point: str
        fs_type: str
        source: str
        block_devices: list[Disk] | Unreadable
        unreadable: str

    class InventoryData(TypedDict):
        """The probe's payload."""

        machine: Machine
        filesystems: list[Filesystem]

SYSFS = "/sys"
DMI = "class/dmi/id"  # under the sysfs read
DMI_FIELDS = ("sys_vendor", "product_name", "product_serial", "product_uuid", "board_vendor",
              "board_name", "board_serial", "chassis_serial", "bios_version")
MAX_FILE_BYTES = 4096  # a sysfs attribute is at most a page; /etc/machine-id is 33 bytes
MAX_MOUNTINFO_BYTES = 8 * 2**20  # some 50,000 mounts
MAX_TEXT = 256  # characters of a value kept (a serial, a model, a UUID)
MAX_DISKS = 64  # block devices followed behind one filesystem
SECTORS = re.compile(r"[0-9]{1,20}")  # /sys/block/X/size: 512-byte sectors, a u64
#: Open a file without blocking on a fifo, without following a last link (checked first),
#: without taking a terminal.
OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC


class Refused(Exception):
    """A file the probe will not read, and why."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def unreadable(why: str) -> Unreadable:
    return {"unreadable": why}


def inside(path: str, root: str) -> str:
    """The real path of `path`; Refused when a link leads out of `root`."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    if real != top and not real.startswith(top.rstrip("/") + "/"):
        raise Refused(f"a link out of {root}: not followed")
    return real


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    for test, word in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a fifo"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return word
    return "not a file"


def read_bytes(path: str, root: str = "/", limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of regular file `path`, inside `root`; Refused or OSError if not read."""
    fd = os.open(inside(path, root), OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise Refused(f"{kind_of(mode)}, not a regular file: not read")
        data = b""
        while len(data) <= limit:
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Refused(f"more than {limit} bytes: not read")
    return data


def read(path: str, root: str = "/") -> Text:
    """The file's text, stripped, or {"unreadable": why}."""
    try:
        text = read_bytes(path, root).decode("utf-8", errors="replace").strip()
    except Refused as exc:
        return unreadable(f"{path}: {exc.why}")
    except PermissionError:
        return unreadable(f"{path}: permission denied (readable by root only)")
    except FileNotFoundError:
        return unreadable(f"{path}: not present")
    except OSError as exc:
        return unreadable(f"{path}: {exc.strerror or exc}")
    if len(text) > MAX_TEXT:
        return unreadable(f"{path}: {len(text)} characters, more than the {MAX_TEXT} kept")
    return text


def machine(sysfs: str = SYSFS) -> Machine:
    hostname, machine_id = socket.gethostname(), read("/etc/machine-id")
    dmi = os.path.join(sysfs, DMI)
    fields: dict[str, Text] | Unreadable
    if not os.path.isdir(dmi):
        fields = unreadable(f"{dmi} not present (no DMI tables: a container, a VM "
                            "without them, or not x86/arm64 firmware)")
    else:
        fields = {name: read(os.path.join(dmi, name), sysfs) for name in DMI_FIELDS}
    return {"hostname": hostname, "machine_id": machine_id, "dmi": fields}


def mount_of(path: str) -> Mount | None:
    """The /proc/self/mountinfo entry of the filesystem `path` is on."""
    device = os.stat(path).st_dev
    wanted = f"{os.major(device)}:{os.minor(device)}"
    best: Mount | None = None
    real = os.path.realpath(path)
    try:
        table = read_bytes("/proc/self/mountinfo", "/proc", MAX_MOUNTINFO_BYTES)
    except Refused as exc:
        raise OSError(f"/proc/self/mountinfo: {exc.why}") from None
    for line in table.decode("utf-8", errors="replace").splitlines():
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


def disk(sysfs: str, name: str) -> Disk:
    base = os.path.join(sysfs, "block", name)
    size: Text = read(f"{base}/size", sysfs)
    serial = read(f"{base}/device/serial", sysfs)
    if isinstance(serial, dict):
        wwid = read(f"{base}/device/wwid", sysfs)
        serial = wwid if not isinstance(wwid, dict) else read(f"{base}/serial", sysfs)
    if isinstance(size, str) and not SECTORS.fullmatch(size):
        size = unreadable(f"{base}/size: not a number of sectors: {size[:40]!r}")
    return {"name": name, "model": read(f"{base}/device/model", sysfs), "serial": serial,
            "size_bytes": int(size) * 512 if isinstance(size, str) else size,
            "rotational": read(f"{base}/queue/rotational", sysfs) == "1"}


def disks_under(sysfs: str, sys_dir: str, seen: set[str]) -> list[Disk]:
    """The whole disks behind a block device: its disk if it is a partition, and the disks
    of what it is built on (device mapper, md RAID, LVM) followed through `slaves`; at most
    MAX_DISKS devices in all, never out of the sysfs read."""
    try:
        real = inside(sys_dir, sysfs)
    except Refused as exc:
        return [{"name": os.path.basename(sys_dir)[:MAX_TEXT],
                 "unreadable": f"{sys_dir}: {exc.why}"}]
    if os.path.exists(os.path.join(real, "partition")):
        real = os.path.dirname(real)
    name = os.path.basename(real)
    if name in seen:
        return []
    seen.add(name)
    slaves = os.path.join(real, "slaves")
    try:
        with os.scandir(slaves) as entries:
            below = heapq.nsmallest(MAX_DISKS + 1, (entry.name for entry in entries))
    except OSError:
        below = []
    if below:
        found: list[Disk] = []
        for slave in below:
            if len(seen) >= MAX_DISKS:
                found.append({"name": slave, "unreadable": f"{slaves}: more than {MAX_DISKS} "
                              f"block devices: {slave} and those after it not followed"})
                break
            found += disks_under(sysfs, os.path.join(slaves, slave), seen)
        return found
    return [disk(sysfs, name)]


def filesystem(path: str, sysfs: str = SYSFS) -> Filesystem:
    entry: Filesystem = {"path": path}
    try:
        mount = mount_of(path)
    except OSError as exc:
        entry["unreadable"] = f"{path}: {exc.strerror or exc}"
        return entry
    if mount is None:
        entry["unreadable"] = f"{path}: no entry in /proc/self/mountinfo"
        return entry
    entry.update({"mount_point": mount["mount_point"], "fs_type": mount["fs_type"],
                  "source": mount["source"]})
    device = os.stat(path).st_dev
    sys_dir = os.path.join(sysfs, "dev", "block", f"{os.major(device)}:{os.minor(device)}")
    if not os.path.lexists(sys_dir):
        entry["block_devices"] = unreadable(
            f"no block device: a {mount['fs_type']} filesystem from {mount['source']}")
    else:
        entry["block_devices"] = disks_under(sysfs, sys_dir, set())
    return entry


def main(argv: list[str] | None = None) -> int:
    try:
        found, rest = getopt.getopt(sys.argv[1:] if argv is None else argv, "",
                                    ["path=", "sysfs="])
        if rest:
            raise getopt.GetoptError(f"unexpected argument {rest[0]!r}")
    except getopt.GetoptError as exc:
        print(f"usage: inventory.py [--sysfs ROOT] [--path DIR]...: {exc}", file=sys.stderr)
        return 2
    sysfs = dict(found).get("--sysfs", SYSFS)
    data: InventoryData = {"machine": machine(sysfs),
            "filesystems": [filesystem(value, sysfs) for key, value in found
                            if key == "--path"]}
    print(json.dumps({"probe": "inventory", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
