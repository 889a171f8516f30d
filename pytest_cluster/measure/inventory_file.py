"""inventory.json's format: its name, its records, and how a value that could not be read
is written. A leaf (nothing of ours imported): the evidence and the reports read
inventories (a baseline's among them) without importing what takes one."""

from __future__ import annotations

from typing import Any, Final, TypedDict, TypeGuard

INVENTORY = "inventory.json"
UNREADABLE: Final = "unreadable"
#: What a GPU is known by, in the order the record lists it.
GPU_FIELDS = ("index", "name", "uuid", "serial", "board_part", "vbios", "pci_bus_id")


class Unreadable(TypedDict):
    """A value that could not be read, and why."""

    unreadable: str


class GpuRecord(TypedDict, total=False):
    """A GPU as the record lists it (GPU_FIELDS), as NVML gave each field (one it could
    not read: its error)."""

    index: int
    name: str
    uuid: str
    serial: str
    board_part: str
    vbios: str
    pci_bus_id: Any  # its bus id, or NVML's {"error": ...}


class CpuRecord(TypedDict):
    """The CPU as the host probe read it (None: not found)."""

    model: str | None
    sockets: int | None
    cores: int | None
    threads: int | None


class SoftwareRecord(TypedDict, total=False):
    """Each version found, or why not."""

    python: str | Unreadable
    torch: str | Unreadable
    cuda: str | Unreadable
    nccl: str | Unreadable
    driver: str | Unreadable
    cuda_driver: str | Unreadable  # with the GPUs: NVML's


class InterfaceRecord(TypedDict, total=False):
    """A network interface as the NIC probe read it (a field it could not read: why);
    its driver's, where ethtool answered, else why not (`unreadable`)."""

    name: str
    address: str | Unreadable
    link_layer: str | Unreadable  # ethernet, infiniband
    state: str | Unreadable
    rate_gbps: float | Unreadable
    mtu: str | Unreadable
    pci: str | None
    unreadable: str
    driver: str
    driver_version: str
    firmware: str | Unreadable
    bus: str


class HcaPortRecord(TypedDict, total=False):
    """An HCA's port (a run writes every key; a baseline's record may lack some)."""

    port: str
    state: str | Unreadable
    rate: str | Unreadable
    link_layer: str | Unreadable


class HcaRecord(TypedDict, total=False):
    """An InfiniBand (RDMA) device, its netdevs and ports (a run writes every key; a
    baseline's record may lack some)."""

    name: str
    node_guid: str | Unreadable
    sys_image_guid: str | Unreadable
    firmware: str | Unreadable
    board_id: str | Unreadable
    hca_type: str | Unreadable
    netdevs: list[str]
    ports: list[HcaPortRecord]


class NodeRecord(TypedDict, total=False):
    """One node's entry: what was tested on it; without the host probe's answer only
    whether it was simulated, and why (`unreadable`)."""

    simulated: bool
    unreadable: str
    hostname: str | None
    machine_id: Any  # the inventory probe's (its text, or why not), or why it has none
    dmi: Any  # ... its DMI fields by name, or why none
    cpu: CpuRecord
    memory_bytes: int | None
    os: str | None
    kernel: str | None
    gpus: list[GpuRecord] | Unreadable  # a run that checks GPUs
    software: SoftwareRecord
    nccl_source: str  # where the NCCL version was read
    interfaces: list[InterfaceRecord] | Unreadable
    infiniband: list[HcaRecord] | Unreadable
    filesystems: Any  # the inventory probe's, or why it has none


class _Nodes(TypedDict):
    nodes: dict[str, NodeRecord]


class InventoryDocument(_Nodes, total=False):
    """inventory.json (a run writes every key; a baseline's is checked for its nodes)."""

    schema: int
    cluster: str
    simulated: bool
    taken_at: str  # UTC
    complete: bool  # False: the run was interrupted, nothing more was asked for


def unreadable(why: str) -> Unreadable:
    return {UNREADABLE: why}


def is_unreadable(value: object) -> TypeGuard[Unreadable]:
    return isinstance(value, dict) and UNREADABLE in value
