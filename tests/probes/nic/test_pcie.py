"""probes/nic/pcie.py: a port's PCI Express link, from its PCI device's link files, each
odd one named in the port's `unreadable`, never guessed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_cluster.probes.nic import pcie
from pytest_cluster.probes.nic.sysfs import MAX_FILE_BYTES, Reader

if TYPE_CHECKING:
    from pytest_cluster.probes.nic.payload import PcieLink

DEVICE = "devices/pci0000:00/0000:3a:00.0"


def reader_of(root: Path, files: dict[str, str]) -> Reader:
    for name, text in files.items():
        path = root / DEVICE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    return Reader(str(root))


def link(root: Path, **files: str) -> tuple[PcieLink | None, dict[str, str]]:
    """The link read of a device with `files` (the four of a Gen5 x16 link, those given
    replaced; one given as None is left out), and what was not read, by file name."""
    written = {"current_link_speed": "32.0 GT/s PCIe", "max_link_speed": "32.0 GT/s PCIe",
               "current_link_width": "16", "max_link_width": "16", **files}
    reader = reader_of(root, {k: v for k, v in written.items() if v != "-"})
    missing: dict[str, str] = {}
    found = pcie.pcie_link(reader, reader.path(DEVICE), missing)
    return found, {os.path.basename(path): why for path, why in missing.items()}


def test_a_link_is_read_as_the_kernel_writes_it(tmp_path: Path) -> None:
    assert link(tmp_path, current_link_width="8") == (
        {"gen": 5, "max_gen": 5, "width": 8, "max_width": 16, "speed": "32.0 GT/s PCIe",
         "max_speed": "32.0 GT/s PCIe", "virtual_function": False}, {})


@pytest.mark.parametrize(("raw", "gen"), [
    ("2.5 GT/s PCIe", 1), ("5.0 GT/s PCIe", 2), ("8.0 GT/s PCIe", 3), ("16.0 GT/s PCIe", 4),
    ("32.0 GT/s PCIe", 5), ("64.0 GT/s PCIe", 6),
    ("2.5 GT/s", 1), ("5 GT/s", 2), ("16 GT/s", 4)])  # before Linux 4.20: no ".0 ... PCIe"
def test_each_speed_is_its_generation(raw: str, gen: int) -> None:
    missing: dict[str, str] = {}
    assert pcie.generation(raw, "/s", missing) == (gen, raw)
    assert missing == {}


def test_an_unknown_speed_is_kept_as_written_and_named(tmp_path: Path) -> None:
    found, missing = link(tmp_path, current_link_speed="Unknown",
                          max_link_speed="Unknown speed")
    assert found is not None
    assert (found["gen"], found["speed"], found["max_gen"], found["max_speed"]) == (
        None, "Unknown", None, "Unknown speed")
    assert missing["current_link_speed"].startswith("'Unknown': the kernel cannot tell")


@pytest.mark.parametrize(("raw", "why"), [
    ("fast", "not a link speed: 'fast' (expected e.g. '16.0 GT/s PCIe')"),
    ("16.0 Gb/s", "not a link speed: '16.0 Gb/s' (expected e.g. '16.0 GT/s PCIe')"),
    ("-16.0 GT/s PCIe", "not a link speed: '-16.0 GT/s PCIe' (expected e.g. '16.0 GT/s "
                        "PCIe')"),
    ("9" * 200 + " GT/s", f"not a link speed: {('9' * 40)!r} (expected e.g. '16.0 GT/s "
                          "PCIe')"),
    ("128.0 GT/s PCIe", "'128.0 GT/s PCIe': no PCIe generation runs at that rate")])
def test_a_speed_that_is_none_is_named_never_guessed(tmp_path: Path, raw: str,
                                                     why: str) -> None:
    found, missing = link(tmp_path, max_link_speed=raw)
    assert found is not None and found["max_gen"] is None and found["gen"] == 5
    assert missing == {"max_link_speed": why}


@pytest.mark.parametrize(("raw", "why"), [
    ("0", "0 lanes: no link trained (or a virtual function's link)"),
    ("63", "63 lanes: no PCIe link has that width (x1, x2, x4, x8, x12, x16, x32)"),
    ("x16", "not a width: 'x16' (expected a number of lanes)"),
    (str(2**70), f"not a width: {str(2**70)!r} (expected a number of lanes)"),
    ("-8", "-8 lanes: no PCIe link has that width (x1, x2, x4, x8, x12, x16, x32)")])
def test_a_width_that_is_none_is_named_never_guessed(tmp_path: Path, raw: str,
                                                     why: str) -> None:
    found, missing = link(tmp_path, current_link_width=raw)
    assert found is not None and found["width"] is None and found["max_width"] == 16
    assert missing == {"current_link_width": why}


def test_a_missing_file_is_named_the_others_read(tmp_path: Path) -> None:
    found, missing = link(tmp_path, max_link_width="-", current_link_speed="-")
    assert found == {"gen": None, "max_gen": 5, "width": 16, "max_width": None,
                     "speed": None, "max_speed": "32.0 GT/s PCIe",
                     "virtual_function": False}
    assert missing == {"current_link_speed": "not present", "max_link_width": "not present"}


def test_a_device_without_any_link_file_has_no_pcie_link(tmp_path: Path) -> None:
    # a virtio NIC, a conventional PCI card: no link attributes; a virtual interface: no
    # device at all
    assert link(tmp_path, current_link_speed="-", max_link_speed="-",
                current_link_width="-", max_link_width="-") == (None, {})
    reader = Reader(str(tmp_path))
    assert pcie.pcie_link(reader, reader.path("class/net/veth0/device"), {}) is None


def test_a_huge_file_or_a_fifo_is_refused_and_named(tmp_path: Path) -> None:
    found, missing = link(tmp_path, current_link_speed="1" * (MAX_FILE_BYTES + 10))
    os.mkfifo(tmp_path / DEVICE / "fifo")
    (tmp_path / DEVICE / "max_link_width").unlink()
    (tmp_path / DEVICE / "max_link_width").symlink_to("fifo")
    reader = Reader(str(tmp_path))
    unread: dict[str, str] = {}
    again = pcie.pcie_link(reader, reader.path(DEVICE), unread)
    assert found is not None and again is not None
    assert (again["gen"], again["max_width"]) == (None, None)
    assert missing["current_link_speed"].startswith(f"more than {MAX_FILE_BYTES} bytes")
    assert unread[reader.path(DEVICE, "max_link_width")] == \
        "a fifo, not a regular file: not read"


def test_a_device_linked_out_of_the_tree_is_named_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "current_link_speed").write_text("32.0 GT/s PCIe\n")
    root = tmp_path / "sys"
    (root / "class/net/eth0").mkdir(parents=True)
    (root / "class/net/eth0/device").symlink_to(outside)
    reader = Reader(str(root))
    missing: dict[str, str] = {}
    device = reader.path("class/net/eth0/device")
    assert pcie.pcie_link(reader, device, missing) is None
    assert missing == {device: f"a link out of {root}: not followed (its PCIe link not "
                               "read)"}


#: A VF's link as its kernel writes it: the SR-IOV chapter reserves its link registers.
VF_LINK = {"current_link_speed": "Unknown", "max_link_speed": "Unknown",
           "current_link_width": "0", "max_link_width": "0"}


def test_a_device_whose_physfn_links_into_the_tree_is_a_virtual_function(
        tmp_path: Path) -> None:
    # the host's view: drivers/pci/iov.c links the VF's physfn to its PF
    reader = reader_of(tmp_path, VF_LINK)
    (tmp_path / "devices/pci0000:00/0000:3a:00.1").mkdir(parents=True)
    (tmp_path / DEVICE / "physfn").symlink_to("../0000:3a:00.1")
    found = pcie.pcie_link(reader, reader.path(DEVICE), {})
    assert found is not None and found["virtual_function"] is True
    assert (found["gen"], found["width"]) == (None, None)


@pytest.mark.parametrize(("device", "vf"), [
    ("0x101e", True),  # ConnectX Family mlx5Gen Virtual Function (a ConnectX-7's VF)
    ("0x101c", True),  # ConnectX-6 VF
    ("0x1021", False),  # ConnectX-7 (its physical function)
    ("0x1017", False)])  # ConnectX-5
def test_a_guest_sees_a_virtual_function_by_its_pci_id(tmp_path: Path, device: str,
                                                       vf: bool) -> None:
    # a VM's view: the hypervisor made the VF, the guest's kernel has no physfn
    found, missing = link(tmp_path, vendor="0x15b3", device=device)
    assert found is not None and found["virtual_function"] is vf
    assert missing == {}


def test_another_vendors_device_of_the_same_id_is_no_virtual_function(
        tmp_path: Path) -> None:
    found, _ = link(tmp_path, vendor="0x8086", device="0x101e")
    assert found is not None and found["virtual_function"] is False


def test_a_physfn_linked_out_of_the_tree_is_named_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "sys"
    reader = reader_of(root, VF_LINK)
    (root / DEVICE / "physfn").symlink_to(outside)
    missing: dict[str, str] = {}
    found = pcie.pcie_link(reader, reader.path(DEVICE), missing)
    assert found is not None and found["virtual_function"] is None
    assert missing[reader.path(DEVICE, "physfn")] == f"a link out of {root}: not followed"


def test_a_physfn_that_is_a_file_is_named_not_taken_as_a_link(tmp_path: Path) -> None:
    found, missing = link(tmp_path, physfn="0000:3a:00.1", **VF_LINK)
    assert found is not None and found["virtual_function"] is None
    assert missing["physfn"].startswith("not a link")
