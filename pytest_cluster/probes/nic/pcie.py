"""A port's PCI Express link: its PCI device's `current_link_speed`, `max_link_speed`,
`current_link_width` and `max_link_width` (Documentation/ABI/testing/sysfs-bus-pci; the
kernel's drivers/pci/pci-sysfs.c writes a speed as pci_speed_string does, "16.0 GT/s PCIe",
"Unknown"; kernels before 4.20 wrote "16 GT/s" and "Unknown speed"; a width as a number of
lanes, 0 for a link that did not train).

A NIC's link trains once, at boot or hot-plug, to the widest and fastest both ends allow,
and stays there: unlike a GPU's (whose driver lowers the speed while idle), a NIC's
LnkSta does not move with load (ASPM's L0s and L1 idle the link and bring it back at the
speed and width it trained to), so the link read at rest is the link the card runs at.

An SR-IOV virtual function (a cloud VM's NIC: Azure's ND H100 v5 passes each VM a
ConnectX-7 VF) has no link of its own: the SR-IOV chapter of the PCIe Base Specification
reserves a VF's Link Control and Link Status registers (the link is its physical
function's), and current_link_speed_show reads LnkSta (pcie_capability_read_word
PCI_EXP_LNKSTA, speed = pcie_link_speed[LnkSta & CLS], width = LnkSta's NLW): 0 makes
"Unknown" and width 0. So `virtual_function` says which links are a VF's: the kernel that
created the VF links its directory's `physfn` to its PF (drivers/pci/iov.c
pci_iov_sysfs_link: sysfs_create_link(virtfn, dev, "physfn")), which a guest, whose
hypervisor created the VF, does not have; there its PCI ID says it, as the driver's own
table does (drivers/net/ethernet/mellanox/mlx5/core/main.c mlx5_core_pci_table: the
entries marked MLX5_PCI_DEV_IS_VF; 0x101e "ConnectX Family mlx5Gen Virtual Function", the
ConnectX-7's VF).
"""

from __future__ import annotations

import os
import re

from .sysfs import whole_number

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import PcieLink
    from .sysfs import Reader


#: The link attributes of a PCI Express device; a device without any is no PCIe device
#: (a virtio NIC, a conventional PCI card) and has no link to read.
FILES = ("current_link_speed", "max_link_speed", "current_link_width", "max_link_width")
#: A link's rate per lane: "32.0 GT/s PCIe", "8 GT/s", "2.5 GT/s PCIe".
SPEED = re.compile(r"([0-9]{1,3}(?:\.[0-9]{1,2})?) GT/s(?: PCIe)?")
#: The PCIe generation of each rate per lane (GT/s).
GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
#: The widths a PCIe link can train to (lanes).
WIDTHS = (1, 2, 4, 8, 12, 16, 32)
UNKNOWN = ("Unknown", "Unknown speed")
#: The PCI IDs (vendor, device) of virtual functions, as the kernel writes them in a
#: device's `vendor` and `device` files: mlx5's VFs (mlx5_core_pci_table, MLX5_PCI_DEV_IS_VF:
#: Connect-IB, ConnectX-4, -4 Lx, -5, -5 Ex, -6, the mlx5Gen VF of ConnectX-6 Dx and
#: later, BlueField's ConnectX-5).
VF_IDS = frozenset(("0x15b3", device) for device in (
    "0x1012", "0x1014", "0x1016", "0x1018", "0x101a", "0x101c", "0x101e", "0xa2d3"))


def generation(raw: str | None, path: str, missing: dict[str, str]) -> tuple[int | None,
                                                                             str | None]:
    """The PCIe generation of a link speed the kernel wrote and the speed as written;
    (None, text) when the kernel could not tell it, (None, None) when it is no speed."""
    if raw is None:
        return None, None
    if raw in UNKNOWN:
        missing[path] = f"{raw!r}: the kernel cannot tell the link's speed (no link " \
                        "trained, or a virtual function's link)"
        return None, raw
    match = SPEED.fullmatch(raw)
    if match is None:
        missing[path] = f"not a link speed: {raw[:40]!r} (expected e.g. '16.0 GT/s PCIe')"
        return None, None
    gen = GENERATIONS.get(float(match.group(1)))
    if gen is None:
        missing[path] = f"{raw!r}: no PCIe generation runs at that rate"
    return gen, raw


def width(reader: Reader, path: str, missing: dict[str, str]) -> int | None:
    """The lanes a link has, as the kernel wrote them; None, named, when it is no width a
    link trains to (0: none trained; 63: a device that answers all ones)."""
    raw = reader.text(path, missing)
    if raw is None:
        return None
    lanes = whole_number(raw)
    if lanes is None:
        missing[path] = f"not a width: {raw[:40]!r} (expected a number of lanes)"
    elif lanes == 0:
        missing[path] = "0 lanes: no link trained (or a virtual function's link)"
    elif lanes not in WIDTHS:
        missing[path] = f"{lanes} lanes: no PCIe link has that width " \
                        f"({', '.join(f'x{w}' for w in WIDTHS)})"
    else:
        return lanes
    return None


def virtual_function(reader: Reader, device: str, missing: dict[str, str]) -> bool | None:
    """Whether the PCI device at directory `device` is an SR-IOV virtual function: its
    `physfn` a link to another device of the tree, or its PCI ID a VF's (VF_IDS). None,
    named in `missing`, when its `physfn` is there but is no such link (a file; a link out
    of the tree, not followed): it is not taken as a VF."""
    physfn = os.path.join(device, "physfn")
    if "physfn" in reader.names(device):
        if reader.target(physfn) is not None:
            return True
        missing[physfn] = f"a link out of {reader.root}: not followed" \
            if os.path.islink(physfn) else "not a link (the kernel links a virtual " \
            "function's physfn to its physical function): not taken as one"
        return None
    ids = {}  # a device without these files (no PCI device) is no VF, and says nothing
    for name in ("vendor", "device"):
        ids[name] = reader.text(os.path.join(device, name), {})
    return (ids["vendor"], ids["device"]) in VF_IDS


def pcie_link(reader: Reader, device: str, missing: dict[str, str]) -> PcieLink | None:
    """The PCIe link of the device at directory `device` (a port's `device` link), each
    file not read named in `missing`; None when it has no PCIe link (no device: a virtual
    interface; or none of the link's files)."""
    present = set(reader.names(device))
    if not present.intersection(FILES):
        if os.path.lexists(device) and not reader.exists(device):
            missing[device] = f"a link out of {reader.root}: not followed (its PCIe " \
                              "link not read)"
        return None
    found: dict[str, tuple[int | None, str | None]] = {}
    for name in ("current_link_speed", "max_link_speed"):
        path = os.path.join(device, name)
        found[name] = generation(reader.text(path, missing), path, missing)
    return {"gen": found["current_link_speed"][0], "max_gen": found["max_link_speed"][0],
            "width": width(reader, os.path.join(device, "current_link_width"), missing),
            "max_width": width(reader, os.path.join(device, "max_link_width"), missing),
            "speed": found["current_link_speed"][1], "max_speed": found["max_link_speed"][1],
            "virtual_function": virtual_function(reader, device, missing)}
