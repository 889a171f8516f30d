"""The validated contract spec as frozen, typed records. Nothing else reads raw YAML."""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_cluster.requirement import Requirement, VersionRequirement
from pytest_cluster.units import Dim


@dataclass(frozen=True)
class Clause:
    """One promise of the contract: where it is written and what it requires."""

    key: str  # e.g. "storage[/data].write"
    line: int
    requirement: Requirement


@dataclass(frozen=True)
class VersionClause:
    key: str  # e.g. "host.software.torch"
    line: int
    name: str  # e.g. "torch"
    requirement: VersionRequirement


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    nodes: tuple[str, ...]
    launcher: str
    python: str
    probe_timeout_s: float
    parallel: int


@dataclass(frozen=True)
class HostSpec:
    cpu_cores: Clause | None = None
    cpu_threads: Clause | None = None
    memory: Clause | None = None
    software: tuple[VersionClause, ...] = ()
    same_software: bool = True


@dataclass(frozen=True)
class StorageSpec:
    path: str
    index: int
    shared: bool
    python: str
    io_size_bytes: int
    metadata_files: int
    import_repeats: int
    cold_cache: bool
    capacity: Clause | None = None
    free: Clause | None = None
    write: Clause | None = None
    read: Clause | None = None
    metadata: Clause | None = None
    import_torch: Clause | None = None
    shared_line: int = 0

    def clause(self, name: str) -> Clause | None:
        value = getattr(self, name)
        assert value is None or isinstance(value, Clause), name
        return value


@dataclass(frozen=True)
class SshSpec:
    """How the ssh launcher reaches nodes; unset values come from ~/.ssh/config."""

    user: str | None = None
    port: int | None = None
    identity_file: str | None = None
    config: str | None = None  # an ssh_config file (ssh -F)
    options: tuple[tuple[str, str], ...] = ()  # extra -o Key=Value, validated
    connect_timeout_s: float = 10.0


@dataclass(frozen=True)
class SlurmSpec:
    """Where the slurm launcher runs its steps; unset values are the site's defaults."""

    partition: str | None = None
    account: str | None = None
    reservation: str | None = None
    time_limit_min: int | None = None  # srun --time, a backstop behind probe_timeout
    allocation: bool = False  # the nodes are those of the allocation this runs in


@dataclass(frozen=True)
class Spec:
    file: str
    sha256: str
    cluster: ClusterSpec
    host: HostSpec = field(default_factory=HostSpec)
    storage: tuple[StorageSpec, ...] = ()
    gpus: GpuSpec | None = None
    sim: SimSpec | None = None
    ssh: SshSpec | None = None
    slurm: SlurmSpec | None = None
    interconnect: InterconnectSpec | None = None
    warnings: tuple[str, ...] = ()  # likely slips, "FILE:LINE: KEY: text" like errors

    def host_clause(self, name: str) -> Clause | None:
        value = getattr(self.host, name)
        assert value is None or isinstance(value, Clause), name
        return value


@dataclass(frozen=True)
class Rule:
    """A health rule with a safe default (e.g. PCIe at max gen and width); off if absent."""

    key: str  # e.g. "gpus.pcie"
    line: int  # 0: the default, not written in the spec
    text: str  # what it requires, e.g. "at its maximum generation and width"


@dataclass(frozen=True)
class GpuSpec:
    count: Clause
    model: str | None = None  # a key of gpu_models.MODELS
    model_line: int = 0
    memory: Clause | None = None
    usable_memory: Clause | None = None  # a fraction of total, or a size
    temperature: Clause | None = None
    ecc_uncorrected: Clause | None = None
    ecc_corrected: Clause | None = None
    row_remap: Rule | None = None
    pcie: Rule | None = None
    nvlink: Rule | None = None
    nvlink_count: Clause | None = None
    throttle: Rule | None = None
    xid: Rule | None = None
    matmul: tuple[tuple[str, Clause], ...] = ()
    memory_bandwidth: Clause | None = None
    h2d: Clause | None = None
    d2h: Clause | None = None
    p2p: Clause | None = None
    matmul_shape: tuple[int, int, int] = (8192, 8192, 8192)  # m, n, k
    xid_window_s: float = 2.0
    power_limit: Clause | None = None
    load_time_s: float = 10.0  # matmul load while clocks and throttle reasons are sampled

    @property
    def slots(self) -> int:
        """How many GPUs per node the per-GPU tests cover (the promised count)."""
        return int(self.count.requirement.bound.value)

    def item(self, name: str) -> Clause | Rule | None:
        value = getattr(self, name)
        assert value is None or isinstance(value, (Clause, Rule)), name
        return value


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


@dataclass(frozen=True)
class SimSpec:
    gpu_model: str
    gpus_per_node: int
    cpu_cores: int = 112
    cpu_threads: int = 224
    memory_bytes: int = 2 * 2**40
    faults: tuple[SimFault, ...] = ()
    latency_s: float = 0.0  # each probe call waits this long, like a network round-trip


@dataclass(frozen=True)
class LinkSpec:
    """A link of the contract: NVLink inside a node, or the NICs between nodes."""

    kind: str  # e.g. "nvlink", "infiniband", "roce", "ethernet"
    rate_bytes_per_s: float  # per GPU per direction (intra), per NIC (inter)
    rate_text: str  # as written, e.g. "450 GB/s"
    count: int = 1  # NICs per node (inter); 1 for intra

    @property
    def total_bytes_per_s(self) -> float:
        return self.rate_bytes_per_s * self.count


@dataclass(frozen=True)
class InterconnectSpec:
    """Collective bandwidth promises: busbw (nccl-tests' definition) at contract payloads,
    inside one node and across node counts, against the links' theoretical rate."""

    busbw: Clause  # a share of theoretical (Dim.FRACTION) or a rate
    payloads: tuple[int, ...]  # bytes, the sizes the contract names
    intra_node: LinkSpec | None = None
    inter_node: LinkSpec | None = None
    collectives: tuple[str, ...] = ("all_reduce",)
    node_counts: tuple[int, ...] = ()  # tested, capped by the cluster size, all >= 2
    node_counts_dropped: tuple[int, ...] = ()  # promised, beyond the cluster size
    ranks_per_node: int = 1
    backend: str = "gloo"  # nccl (GPUs) or gloo (CPUs)
    sweep_from: int = 2**20  # smallest payload of the plotted sweep (bytes)
    warmup: int = 5
    iterations: int = 20
    node_network: bool = True  # the per-node search for slow nodes
    search_payload: int = 0  # bytes, the slow-node search's all-reduce (the parser's default:
                             # the smallest contract payload)
    timeout_s: float = 600.0  # one job, wall clock

    @property
    def is_share(self) -> bool:
        return self.busbw.requirement.bound.dim is Dim.FRACTION

    def sweep(self) -> tuple[int, ...]:
        """Payloads measured for the plot: x4 steps from sweep_from, plus the contract's."""
        top = max(self.payloads)
        sizes = set(self.payloads)
        size = self.sweep_from
        while size < top:
            sizes.add(size)
            size *= 4
        return tuple(sorted(sizes))
