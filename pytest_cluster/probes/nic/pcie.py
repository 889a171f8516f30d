"""A port's PCI Express link: its PCI device's `current_link_speed`, `max_link_speed`,
`current_link_width` and `max_link_width` (Documentation/ABI/testing/sysfs-bus-pci; the
kernel's drivers/pci/pci-sysfs.c writes a speed as pci_speed_string does, "16.0 GT/s PCIe",
"Unknown"; kernels before 4.20 wrote "16 GT/s" and "Unknown speed"; a width as a number of
lanes, 0 for a link that did not train).

A NIC's link trains once, at boot or hot-plug, to the widest and fastest both ends allow,
and stays there: unlike a GPU's (whose driver lowers the speed while idle), a NIC's
LnkSta does not move with load (ASPM's L0s and L1 idle the link and bring it back at the
speed and width it trained to), so the link read at rest is the link the card runs at.
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
            "speed": found["current_link_speed"][1], "max_speed": found["max_link_speed"][1]}
