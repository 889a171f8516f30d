"""The nic probe's payload: what it prints as its `data` (types only: nothing here runs)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # not imported when it runs: its start-up stays short
    from typing import TypedDict

    class PcieLink(TypedDict):
        """A port's PCI device's link (probes/nic/pcie.py): its generation and width now
        and at most, and the speeds as the kernel wrote them; None: not read (why: the
        port's `unreadable`)."""

        gen: int | None
        max_gen: int | None
        width: int | None
        max_width: int | None
        speed: str | None
        max_speed: str | None
        #: an SR-IOV virtual function's link (its `physfn`, or a VF's PCI ID): its
        #: figures are none of its own; None: its physfn is no link in the tree
        virtual_function: bool | None

    class DeviceFacts(TypedDict):
        """What an RDMA device has once, the same on each of its ports."""

        firmware: str | None
        board_id: str | None
        hca_type: str | None
        node_guid: str | None
        sys_image_guid: str | None
        pci: str | None
        pcie: PcieLink | None
        netdevs: list[str]

    class Port(TypedDict, total=False):
        """An RDMA port (kind "rdma": a device's facts too) or a network interface (kind
        "net": its driver's, from ethtool); named as the kernel does (mlx5_3/1, eth0)."""

        name: str
        device: str
        port: int | None
        kind: str
        state: str | None
        phys_state: str | None
        active: bool
        rate_gbit: float | None
        rate_text: str | None
        link_layer: str | None
        lid: str | None
        gid: bool | None
        netdev: str | None
        mtu: int | None
        firmware: str | None
        board_id: str | None
        hca_type: str | None
        node_guid: str | None
        sys_image_guid: str | None
        netdevs: list[str]
        driver: str | None
        driver_version: str | None
        bus: str | None
        ethtool_error: str | None
        address: str | None
        pci: str | None
        pcie: PcieLink | None  # None: no PCI Express device (a virtual interface)
        virtual: bool
        counters: dict[str, int]  # error counters by the kernel's name
        unreadable: dict[str, str]  # why, by the file not read

    class Interfaces(TypedDict):
        sysfs: list[str]
        namespace: list[str]

    class NicData(TypedDict, total=False):
        """The probe's payload."""

        sysfs: str
        read_at: float
        error: str
        error_kind: str
        namespace_unchecked: str
        interfaces: Interfaces
        ports: list[Port]
        ports_left_out: int
        skipped: dict[str, str]
        skipped_more: int
        output_cut: str
        when: str

    class Document(TypedDict):
        probe: str
        schema: int
        data: NicData
