"""The validated contract spec as frozen, typed records. Nothing else reads raw YAML."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import TYPE_CHECKING, ClassVar

from pytest_cluster.contract.clauses import CLAUSES, declared
from pytest_cluster.contract.extensions import adds_to
from pytest_cluster.errors import clip, located

if TYPE_CHECKING:
    from pytest_cluster.contract.declaration import Declaration
    from pytest_cluster.contract.requirement import Requirement, VersionRequirement
    from pytest_cluster.contract.sections.host_records import Golden
    from pytest_cluster.contract.sections.sim_records import SimSpec

#: The ids of every clause (the installed extensions' added once they are loaded).
DECLARED: set[str] = set()


@adds_to
def _declared() -> None:
    DECLARED.update(declaration.id for declaration in CLAUSES if declaration.is_clause)


_declared()


@dataclass(frozen=True)
class Clause:
    """One promise of the contract: where it is written and what it requires."""

    key: str  # e.g. "storage[/data].write"
    line: int  # 0: not written in the spec (a default, or its profile's)
    requirement: Requirement
    source: str = ""  # its profile's citation (contract/reading/profiles.py); '': the spec's


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
    #: The most a probe may print on stdout, and on stderr: more fails it as bad output
    probe_output_bytes: int = 16 * 2**20
    #: In a run of some nodes (--cluster-node): the spec's nodes, of which `nodes` are
    #: the ones checked; () when every node is
    chosen_from: tuple[str, ...] = ()
    #: The one node checked is this host, reached by the local launcher instead of the
    #: spec's ssh or srun (a SLURM prolog): a real node, whose drain line is to be run
    here: bool = False


class Promises:
    """What a section promises, each promise found by its declared key: `item('write')`,
    or as an attribute (`fs.write`, `spec.host.cpu_cores`); None when it is not in the
    contract. The declarations (contract/clauses.py) say which keys there are."""

    section: ClassVar[str]
    clauses: tuple[Clause | Rule, ...]

    def _section(self) -> str:
        return self.section

    def _name(self, declaration: Declaration) -> str:
        return declaration.name()

    def item(self, key: str) -> Clause | Rule | None:
        name = self._name(declared(f"{self._section()}.{key}"))
        return next((c for c in self.clauses if c.key == name), None)

    def clause(self, key: str) -> Clause | None:
        """A promise with a number to compare (None if not in contract)."""
        found = self.item(key)
        assert found is None or isinstance(found, Clause), key
        return found

    def rule(self, key: str) -> Rule | None:
        """A promise without a number (a health rule; None if not in contract)."""
        found = self.item(key)
        assert found is None or isinstance(found, Rule), key
        return found

    def __getattr__(self, name: str) -> Clause | Rule | None:
        if name.startswith("_") or f"{self._section()}.{name}" not in DECLARED:
            raise AttributeError(name)
        return self.item(name)


@dataclass(frozen=True)
class SectionSpec(Promises):
    """The record of a section declared without one of its own (contract/sections/__init__.py's
    SECTIONS,
    no parser): the clauses it promises, parsed as declared."""

    name: str  # the section's key, e.g. "nics"
    clauses: tuple[Clause | Rule, ...] = ()

    def _section(self) -> str:
        return self.name


@dataclass(frozen=True)
class HostSpec(Promises):
    section: ClassVar[str] = "host"
    clauses: tuple[Clause | Rule, ...] = ()
    software: tuple[VersionClause, ...] = ()
    same_software: bool = True
    golden: Golden | None = None


@dataclass(frozen=True)
class CheckpointSpec:
    """storage[].checkpoint: how the burst is written. Its promises (write, read,
    keeps_up) are the filesystem's clauses, `checkpoint.write` and so on."""

    size_bytes: int  # per GPU (`per` "gpu") or per node ("node")
    per: str  # what size_bytes is per: "gpu" or "node"
    block_bytes: int  # each write and read call, each block stamped
    #: per clause key ("checkpoint.write"), what its bound is per: "" (the cluster's
    #: aggregate), "node" or "gpu"
    basis: tuple[tuple[str, str], ...] = ()
    keeps_up: float = 0.8  # a node below this share of the nodes' median holds it back
    timeout_s: float = 1800.0  # each phase (the write, the read), hard

    def basis_of(self, key: str) -> str:
        return dict(self.basis).get(key, "")


@dataclass(frozen=True)
class DataloaderSpec:
    """storage[].dataloader: how the data loader's reads are made. Its promises (iops,
    read, metadata, keeps_up) are the filesystem's clauses, `dataloader.iops` and so on."""

    read_size: int = 4096  # each random read
    size_per_node: int = 2**30  # the file set each node writes first
    duration_s: float = 10.0  # how long every worker reads
    workers: int = 0  # per node; 0: one per GPU (one without GPUs)
    metadata_files: int = 1000  # per worker
    basis: tuple[tuple[str, str], ...] = ()
    keeps_up: float = 0.8
    timeout_s: float = 1800.0

    def basis_of(self, key: str) -> str:
        return dict(self.basis).get(key, "")


@dataclass(frozen=True)
class StorageSpec(Promises):
    section: ClassVar[str] = "storage"
    path: str
    index: int
    shared: bool
    python: str
    io_size_bytes: int
    metadata_files: int
    import_repeats: int
    cold_cache: bool
    clauses: tuple[Clause | Rule, ...] = ()
    checkpoint: CheckpointSpec | None = None
    dataloader: DataloaderSpec | None = None

    def _name(self, declaration: Declaration) -> str:
        return declaration.name(self.path)


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
    mpi: str = "pmix"  # srun --mpi for a program built with MPI (nccl-tests across nodes)


@dataclass(frozen=True)
class CreditTier:
    """Below `below` availability (a share), `credit` (a share) of the fees is owed."""

    below: Decimal  # as written in the spec, never through a float
    credit: Decimal


@dataclass(frozen=True)
class SlaSpec:
    """The service level of the contract: the availability promised per node over a soak,
    how long a failure must last to count as downtime, the price of a node-hour and the
    credit owed per availability tier (the lowest tier that applies)."""

    uptime: Decimal  # a share as written, 0.995 = 99.5 %
    down_after_s: float
    price_per_node_hour: Decimal  # money: never a float
    currency: str
    credits: tuple[CreditTier, ...]  # highest threshold first
    line: int = 0


@dataclass(frozen=True)
class BaselineSpec:
    """How a run is compared with an accepted earlier run (--cluster-baseline): a measured
    figure may be worse than at baseline by at most `tolerance` (a share, 0.05 = 5 %)."""

    tolerance: float = 0.05
    line: int = 0  # where the spec sets it; 0: the default


@dataclass(frozen=True)
class TrainingSpec(Promises):
    """A real training loop: a small transformer trained with DistributedDataParallel over
    every node of the cluster (`ranks_per_node` each), `steps` steps after a warm-up; its
    clauses bound each step's time (a step over it is a hang: the job is stopped), its
    step time's spread and the tokens per second."""

    section: ClassVar[str] = "training"
    clauses: tuple[Clause | Rule, ...] = ()
    steps: int = 50
    warmup: int = 3
    ranks_per_node: int = 1
    backend: str = "gloo"
    timeout_s: float = 900.0
    line: int = 0


@dataclass(frozen=True)
class SoakSpec:
    """How steady a soak's figures must stay (--cluster-soak): per case measured in every
    round, its coefficient of variation over the rounds at most `spread`, and its worst
    round at most `drop` worse than its first (shares: 0.05 = 5 %)."""

    spread: float = 0.05
    drop: float = 0.10
    line: int = 0  # where the spec sets it; 0: the defaults


@dataclass(frozen=True)
class SpecNote:
    """A spec warning (a likely slip) where it was found: rendered 'FILE:LINE: KEY: text'
    like a SpecError, and kept as its parts so that nothing reads them back from text."""

    file: str
    line: int | None
    path: str  # the key, e.g. fabric.rate ('' for the whole spec)
    detail: str

    @property
    def said(self) -> str:
        """The warning without its place ('KEY: text')."""
        return located("", None, self.path, self.detail)

    def __str__(self) -> str:
        return clip(located(self.file, self.line, self.path, self.detail))


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
    baseline: BaselineSpec = field(default_factory=BaselineSpec)
    sla: SlaSpec | None = None
    soak: SoakSpec = field(default_factory=SoakSpec)
    training: TrainingSpec | None = None
    fabric: FabricSpec | None = None
    #: The sections without a field here (declared in SECTIONS without a parser), present
    #: in the spec, in SECTIONS' order.
    others: tuple[SectionSpec, ...] = ()
    warnings: tuple[SpecNote, ...] = ()  # likely slips, in line order
    extends: str = ""  # the shipped profile the spec extends ('' for none)
    #: the rules the spec (or its profile) turned off on purpose: id -> as said
    #: ('fabric.pcie' -> 'pcie: false'); not in the contract, and said to be off
    off: tuple[tuple[str, str], ...] = ()
    text: str = field(default="", repr=False, compare=False)  # as read: the evidence keeps it
    #: In a run of some nodes (contract/narrow.py): the spec of the whole cluster
    whole: Spec | None = field(default=None, repr=False, compare=False)

    def section(self, name: str) -> object:
        """The record of the section `name`: its field, or one of `others` (None: absent)."""
        if name in SECTION_FIELDS:
            return getattr(self, name)
        return next((record for record in self.others if record.name == name), None)


#: The fields of Spec that are sections of the spec.
SECTION_FIELDS = frozenset(f.name for f in fields(Spec)) - {
    "file", "sha256", "others", "warnings", "text", "whole", "extends", "off"}


@dataclass(frozen=True)
class Rule:
    """A health rule with a safe default (e.g. PCIe at max gen and width); off if absent."""

    key: str  # e.g. "gpus.pcie"
    line: int  # 0: the default (or its profile's), not written in the spec
    text: str  # what it requires, e.g. "at its maximum generation and width"
    source: str = ""  # as Clause.source


@dataclass(frozen=True)
class GpuSpec(Promises):
    """The GPU promises, each by its key (`item('pcie')`, `gpus.pcie`; the implied ones
    included), matmul's by dtype; `count` is always there."""

    section: ClassVar[str] = "gpus"
    clauses: tuple[Clause | Rule, ...]
    model: str | None = None  # a key of gpu_models.MODELS
    matmul: tuple[tuple[str, Clause], ...] = ()
    matmul_shape: tuple[int, int, int] = (8192, 8192, 8192)  # m, n, k
    xid_window_s: float = 2.0
    load_time_s: float = 10.0  # matmul load while clocks and throttle reasons are sampled
    stress_time_s: float = 300.0  # the stress level's sustained load, every GPU at once
    dcgm_level: int | None = None  # gpus.dcgm_diag: dcgmi diag -r 1..4; None: not promised

    @property
    def count(self) -> Clause:
        found = self.clause("count")
        assert found is not None, "a GpuSpec always has its count"
        return found

    @property
    def slots(self) -> int:
        """How many GPUs per node the per-GPU tests cover (the promised count)."""
        return int(self.count.requirement.bound.value)


@dataclass(frozen=True)
class FabricSpec(Promises):
    """The fabric's promises (ports, rate, link_layer, mtu, pcie, same_firmware), each by its
    key, and which ports they count."""

    section: ClassVar[str] = "fabric"
    clauses: tuple[Clause | Rule, ...] = ()
    link_layer: str | None = None  # "InfiniBand" or "Ethernet"
    devices: str | None = None  # a glob of port or device names; None: the default ports
    flap_s: float = 30.0  # in a soak, a port seen down this long fails its node
    rail_tool: str = "all_reduce"  # what measures a rail: the collective, or ib_write_bw
    rail_cuda: bool = False  # ib_write_bw with its buffer in GPU memory (GPUDirect RDMA)


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
class TransportSpec:
    """What NCCL must have used between nodes (`interconnect.transport`); None: any."""

    inter_node: str | None = None  # "ib", "socket", or a net plugin's name, lowercase
    gdr: bool | None = None  # GPUDirect RDMA on every network channel
    nvls: bool | None = None  # NVLink SHARP available
    line: int = 0

    @property
    def text(self) -> str:
        said = [f"{key} {str(value).lower()}" for key, value in
                (("inter_node", self.inter_node), ("gdr", self.gdr), ("nvls", self.nvls))
                if value is not None]
        return "NCCL used " + ", ".join(said)


@dataclass(frozen=True)
class InterconnectSpec:
    """Collective bandwidth promises: busbw (nccl-tests' definition) at contract payloads,
    inside one node and across node counts, against the links' theoretical rate."""

    busbw: tuple[Clause, ...]  # per scope run, keyed interconnect.busbw[SCOPE]: a share or a rate
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
    stress_time_s: float = 300.0  # the stress level's all_reduce loop over every node
    transport: TransportSpec | None = None  # what NCCL must have used between nodes
    engine: str = "torch"  # what measures a job inside one node: torch or nccl-tests
    nccl_tests: str | None = None  # the folder of nccl-tests' binaries (engine nccl-tests)
    #: each node's median one-way latency to its peers at latency_size (the ping-pong)
    latency: Clause | None = None
    latency_size: int = 8  # bytes: the size latency and colocation are judged at
    #: no node's median latency above colocation_factor x the median between the others
    colocation: Rule | None = None
    colocation_factor: float = 1.5

    def latency_sizes(self) -> tuple[int, ...]:
        """The ping-pong's message sizes: 8 B, 64 KiB and latency_size."""
        return tuple(sorted({8, 64 * 2**10, self.latency_size}))

    def sweep(self) -> tuple[int, ...]:
        """Payloads measured for the plot: x4 steps from sweep_from, plus the contract's."""
        top = max(self.payloads)
        sizes = set(self.payloads)
        size = self.sweep_from
        while size < top:
            sizes.add(size)
            size *= 4
        return tuple(sorted(sizes))
