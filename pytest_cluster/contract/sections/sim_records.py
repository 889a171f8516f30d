"""The spec's `sim:` section as frozen records: a simulated cluster's description
(`SimSpec`) and its faults (`SimFault`), per node or per GPU. contract/sections/sim.py parses the
section into them; pytest_cluster/sim/ plays them. A leaf: it imports nothing of ours."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SimFault:
    """Something wrong with a simulated node or GPU (gpu None: the whole node)."""

    node: str
    gpu: int | None
    line: int
    gpus: int | None = None  # the node has this many GPUs
    down: bool = False  # the node does not answer
    model: str | None = None
    memory_held_bytes: int = 0
    pcie_gen: int | None = None
    pcie_width: int | None = None
    row_remap_pending: bool = False
    row_remap_failure: bool = False
    ecc_uncorrected: int = 0
    nvlinks_down: int = 0
    throttle: str | None = None  # hw_slowdown, sw_thermal, hw_thermal, power_brake
    xid: int | None = None
    temperature_c: float | None = None
    matmul_factor: float = 1.0
    bandwidth_factor: float = 1.0
    link_factor: float = 1.0  # the node's network runs at this share of its rate
    replaced: bool = False  # another board of the same model in this GPU's slot
    from_round: int = 1  # in a soak, the fault starts at this round (a plain run: round 1)
    until_round: int | None = None  # ... and is repaired after this one (None: never)
    sdc: bool = False  # the GPU's matmul results are wrong (silent data corruption)
    nic: int | None = None  # the node's NIC (mlx5_<nic>) the nic_ faults are on
    nic_down: bool = False  # its port is down
    nic_rate_gbit: float | None = None  # its port trained at this rate
    nic_firmware: str | None = None  # its firmware
    nic_link_downed: int = 0  # its port went down this many times during the run
    nic_symbol_errors: int = 0  # its port took this many symbol errors during the run
    nic_pcie_gen: int | None = None  # its PCIe link trained at this generation (of 5)
    nic_pcie_width: int | None = None  # ... and this many lanes (of 16)
    #: the node's NICs (with `nic`, that one) are SR-IOV virtual functions, as a cloud VM
    #: sees them: a VF's PCI ID, its link 'Unknown' x0 (the host's, which a VM cannot read)
    nic_virtual: bool = False
    transport: str | None = None  # the node's NCCL used this network ("socket": fell back)
    gdr: bool | None = None  # False: the node's NCCL had no GPUDirect RDMA
    #: the node sits this many times farther from its peers (another spine): the
    #: ping-pong's latency to it
    latency_factor: float = 1.0
    storage_factor: float = 1.0  # the node reaches the shared filesystem at this share
    storage_corrupt: bool = False  # what it reads back of the shared filesystem is wrong
    #: every write and read of its client fails with this error (ENOSPC: the export full;
    #: EIO: the server gone; ENOENT: the path not there); on every node, the filesystem's
    storage_error: str | None = None
    #: its path is a local directory, not the shared filesystem (its mount missing): what
    #: it writes no other node sees, and it sees nothing they write
    storage_unmounted: bool = False
    #: what the node reports instead of what it measured (contract/sections/sim.py's LIES: a claim
    #: the
    #: product must find out as the node's bad output)
    lies: str | None = None
    #: DCGM's diagnostic fails this GPU in this test (a hardware finding: 'memory')
    dcgm_fail: str | None = None
    #: DCGM's diagnostic finds this configuration problem on the node ('persistence_mode':
    #: error id 29 on every GPU)
    dcgm_config: str | None = None
    #: the rank on this GPU stops answering in every collective job over its node (its
    #: process wedged): the job hangs past its bound, and NCCL's RAS, asked by the other
    #: ranks, names it DEAD (sim/nccl_ras.py)
    nccl_dead: bool = False
    #: the GPU's VBIOS (another than its model's: a board flashed apart from the fleet's)
    vbios: str | None = None


#: A simulated NIC's PCIe link at its best (a ConnectX-7: Gen5 x16), and the widths its
#: link may train to (a fault's nic_pcie_width).
#: The simulated node's NICs where the spec says no interconnect.inter_node.nics_per_node.
NICS_PER_NODE = 8
NIC_PCIE = (5, 16)
NIC_PCIE_WIDTHS = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class SimSpec:
    gpu_model: str
    gpus_per_node: int
    cpu_cores: int = 112
    cpu_threads: int = 224
    memory_bytes: int = 2 * 2**40
    faults: tuple[SimFault, ...] = ()
    latency_s: float = 0.0  # each probe call waits this long, like a network round-trip
    #: the shared filesystem's aggregate rate (bytes/s) every node shares; 0: no limit
    #: beyond each node's client
    storage_rate: float = 0.0
    #: the DCGM a simulated node has: 4 (4.x's JSON), 3 (3.x's), None (no dcgmi installed)
    dcgm: int | None = 4
    #: how the node names its RDMA devices: mlx5_0..7 (bare metal), mlx5_ib0..7 (Azure's
    #: ND VMs, whose mlx5_an0 is the host network)
    nic_prefix: str = "mlx5_"
