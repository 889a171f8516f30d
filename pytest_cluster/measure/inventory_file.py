"""inventory.json's format: its name, and how a value that could not be read is written.
A leaf (nothing of ours imported): the evidence and the reports read inventories (a
baseline's among them) without importing what takes one."""

from __future__ import annotations

INVENTORY = "inventory.json"
UNREADABLE = "unreadable"
#: What a GPU is known by, in the order the record lists it.
GPU_FIELDS = ("index", "name", "uuid", "serial", "board_part", "vbios", "pci_bus_id")


def unreadable(why: str) -> dict[str, str]:
    return {UNREADABLE: why}


def is_unreadable(value: object) -> bool:
    return isinstance(value, dict) and UNREADABLE in value
