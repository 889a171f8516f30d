"""Every clause of the contract, declared once.

A declaration says what a clause is: its section and key, the kind of value written
(`Value`) with its unit dimension and default comparison, what it requires when it is a
rule, the probe field it reads and how that is measured (`Reads`), when the contract has
it (contract/implied.py), and what its failure means to whoever fixes it (`Fault`: a stable
code, an action, who acts; docs/faults.md). The rest derives from it: the spec loader's
known keys and the parsing of each value, the names in errors and evidence, the `clause`
markers, "not in contract", the tests of the clauses that compare a probe field (`Reads`),
the clause names of the report, and the fault codes of the evidence.

One name per clause: the family `storage.write` (its marker) and each instance
`storage[/data].write` (errors, evidence, reports) are the same name with the filesystem
filled in; members of a family add their own (`host.software.torch`, `gpus.matmul.bf16`).
A family's members and instances share its fault code (`PC-HOST-SOFTWARE`): the failure's
clause names the member and the place.

A section's keys are listed here in the order error messages list them, settings included
(`Value.SETTING`: how a clause is measured, e.g. `io_size`; their parsing stays with the
section's parser). Clauses not written in the spec (`Value.IMPLIED`, e.g. `gpus.uniform`)
are always promised with their section, or when `when` says so.
"""

from __future__ import annotations

from pytest_cluster.contract import implied
from pytest_cluster.contract.declaration import (
    ACCEPTANCE,
    SANITY,
    STRESS,
    Declaration,
    Fault,
    Reads,
    Value,
)

# Who acts on a clause's failure (its Fault): one of these, with its code and action
from pytest_cluster.contract.declaration import hardware as _hw
from pytest_cluster.contract.declaration import network as _net
from pytest_cluster.contract.declaration import storage as _sto
from pytest_cluster.contract.extensions import added_clauses, adds_to, free, problem
from pytest_cluster.units import Dim

SOFTWARE = ("kernel", "python", "torch", "cuda", "nccl", "driver")
DTYPES = ("bf16", "fp16", "tf32", "fp32", "fp8")


def _quantity(section: str, key: str, dim: Dim, op: str = ">=", *, fault: Fault,
              reads: Reads | None = None, default: str | None = None,
              level: str = ACCEPTANCE, last: bool = False, link: bool = False) -> Declaration:
    return Declaration(section, key, Value.QUANTITY, dim, op, default=default, reads=reads,
                       level=level, last=last, link=link, fault=fault)


def _setting(section: str, key: str) -> Declaration:
    return Declaration(section, key, Value.SETTING)


#: What the torch probe measures under load: throttling, the PCIe link, the temperature.
_LOAD = Reads("gpu_perf", "load")


def _rule(key: str, text: str, *on: object, fault: Fault, reads: Reads | None = None,
          level: str = ACCEPTANCE) -> Declaration:
    return Declaration("gpus", key, Value.RULE, text=text, on=(True, *on), reads=reads,
                       level=level, fault=fault)


_BUILTIN: tuple[Declaration, ...] = (
    # -- host: per node, from the host probe ------------------------------------------------
    _quantity("host", "cpu_cores", Dim.COUNT, level=SANITY,
              reads=Reads("host", "cpu", "cores", method_field="cores_source"),
              fault=_hw("PC-HOST-CORES", "check the BIOS for disabled cores and the CPU "
                        "model against the order; replace the CPU or board")),
    _quantity("host", "cpu_threads", Dim.COUNT, level=SANITY,
              reads=Reads("host", "cpu", "threads", method="logical CPUs (os.cpu_count)"),
              fault=_hw("PC-HOST-THREADS", "enable SMT (hyper-threading) in the BIOS and "
                        "check the kernel's maxcpus/nosmt options")),
    _quantity("host", "memory", Dim.SIZE, level=SANITY,
              reads=Reads("host", "memory", "total_bytes", method_field="source"),
              fault=_hw("PC-HOST-MEMORY", "find the missing DIMM (dmidecode, the BMC's "
                        "event log): reseat or replace it")),
    _quantity("host", "memory_available", Dim.SIZE, level=SANITY,
              reads=Reads("host", "memory", "available_bytes",
                          "/proc/meminfo MemAvailable (what new jobs can have without "
                          "swapping)"),
              fault=_hw("PC-HOST-MEMFREE", "find what holds the memory (a leftover job, "
                        "hugepages, tmpfs): clean it up or reboot the node")),
    Declaration("host", "software", Value.VERSIONS, members=SOFTWARE, level=SANITY,
                fault=_hw("PC-HOST-SOFTWARE", "install the promised version of the named "
                          "package: reimage the node with the contract's image")),
    Declaration("host", "same_software", Value.FLAG, members=SOFTWARE, needs_nodes=2,
                text="the same versions on every node", level=SANITY,
                fault=_hw("PC-HOST-SOFTWARE-DRIFT", "reimage the odd node(s) with the "
                          "image the others run")),
    # golden-config drift: each node's driver, CUDA, NCCL, kernel, GPUs' VBIOS and InfoROM,
    # NIC ports' firmware and every GPU's and NIC's PCIe link the same as the golden's (the
    # cluster's strict majority, a node of it, or a file's values): the odd node named
    Declaration("host", "golden", Value.NAME, level=SANITY, when=implied.golden,
                text="the node's driver, CUDA, NCCL, kernel, VBIOS, GPU and NIC firmware "
                     "and PCIe links the same as the golden configuration's",
                fault=_hw("PC-NODE-DRIFT", "flash the golden VBIOS/firmware or reimage the "
                          "node (the case names each field, its value and the golden one)")),
    # -- storage: per node and filesystem ---------------------------------------------------
    _setting("storage", "path"),
    Declaration("storage", "shared", Value.FLAG,
                text="a file written on one node is seen with the same content on every "
                     "node",
                fault=_sto("PC-STORAGE-SHARED", "check the mount on the node (a local disk "
                           "where the shared filesystem belongs?): remount it")),
    _quantity("storage", "capacity", Dim.SIZE, level=SANITY,
              reads=Reads("storage", "capacity", "total_bytes", "statvfs total size"),
              fault=_sto("PC-STORAGE-CAPACITY", "call the storage team: the filesystem is "
                         "smaller than ordered (grow it, or mount the right one)")),
    _quantity("storage", "free", Dim.SIZE, level=SANITY,
              reads=Reads("storage", "capacity", "free_bytes",
                          "statvfs f_bavail (space a non-root user can still write)",
                          method_field="free_source"),
              fault=_sto("PC-STORAGE-FREE", "free space (old checkpoints, quotas) or call "
                         "the storage team to grow the filesystem")),
    _quantity("storage", "write", Dim.RATE, reads=Reads("storage", "write", "bytes_per_s"),
              fault=_sto("PC-STORAGE-WRITE", "call the storage team: check the node's mount "
                         "options and client, its link to the filesystem, the servers' load")),
    _quantity("storage", "read", Dim.RATE, reads=Reads("storage", "read", "bytes_per_s"),
              fault=_sto("PC-STORAGE-READ", "call the storage team: check the node's mount "
                         "options and client, its link to the filesystem, the servers' load")),
    _quantity("storage", "metadata", Dim.OPS,
              reads=Reads("storage", "metadata", "ops_per_s"),
              fault=_sto("PC-STORAGE-METADATA", "call the storage team: the metadata "
                         "servers' load and the client's caching")),
    _quantity("storage", "import_torch", Dim.TIME, "<=", reads=Reads("import_latency"),
              fault=_sto("PC-STORAGE-IMPORT", "put the Python environment on local disk or a "
                         "faster filesystem; call the storage team")),
    _setting("storage", "python"),
    _setting("storage", "io_size"),
    _setting("storage", "metadata_files"),
    _setting("storage", "import_repeats"),
    _setting("storage", "cold_cache"),
    # -- storage as the cluster uses it (a shared filesystem, every node at once): a
    # checkpoint written by every node's writers (one per GPU) at once, fsync'ed, then each
    # read back by the next node (storage[].checkpoint: size, bounds, keeps_up) ----------
    _setting("storage", "checkpoint"),
    Declaration("storage", "checkpoint.write", Value.QUANTITY, Dim.RATE, within="checkpoint",
                fault=_sto("PC-STORAGE-CKPT-WRITE", "call the storage team: the filesystem "
                           "cannot take a checkpoint from every node at the promised rate")),
    Declaration("storage", "checkpoint.read", Value.QUANTITY, Dim.RATE, within="checkpoint",
                fault=_sto("PC-STORAGE-CKPT-READ", "call the storage team: the filesystem "
                           "cannot give a checkpoint back to every node at the promised rate")),
    Declaration("storage", "checkpoint.keeps_up", Value.RULE, within="checkpoint",
                needs_nodes=2,
                text="every node writes its share of the checkpoint and reads another's "
                     "back, every block as written, at no less than keeps_up (80%) of the "
                     "nodes' median rate (none holds the burst back)",
                fault=_sto("PC-STORAGE-CKPT-SLOW-NODE", "check this node's path to the "
                           "filesystem (its client, mount options, NIC and cable)")),
    *(Declaration("storage", f"checkpoint.{key}", Value.SETTING, within="checkpoint")
      for key in ("size_per_gpu", "size_per_node", "block_size", "timeout")),
    # the data loader's reads (storage[].dataloader): every node's workers at once, small
    # random reads over a file set every node wrote (IO500's), and small-file metadata
    # (mdtest-hard's 3,901-byte files)
    _setting("storage", "dataloader"),
    Declaration("storage", "dataloader.iops", Value.QUANTITY, Dim.OPS, within="dataloader",
                fault=_sto("PC-STORAGE-DL-IOPS", "call the storage team: small random reads "
                           "from every node are below the promised rate")),
    Declaration("storage", "dataloader.read", Value.QUANTITY, Dim.RATE, within="dataloader",
                fault=_sto("PC-STORAGE-DL-READ", "call the storage team: random reads from "
                           "every node are below the promised rate")),
    Declaration("storage", "dataloader.metadata", Value.QUANTITY, Dim.OPS,
                within="dataloader",
                fault=_sto("PC-STORAGE-DL-METADATA", "call the storage team: small-file "
                           "metadata from every node is below the promised rate")),
    Declaration("storage", "dataloader.keeps_up", Value.RULE, within="dataloader",
                needs_nodes=2,
                text="every node's random reads and metadata operations at no less than "
                     "keeps_up (80%) of the nodes' median rate (none slows the others' "
                     "data loaders)",
                fault=_sto("PC-STORAGE-DL-SLOW-NODE", "check this node's path to the "
                           "filesystem (its client, mount options, NIC and cable)")),
    *(Declaration("storage", f"dataloader.{key}", Value.SETTING, within="dataloader")
      for key in ("read_size", "size_per_node", "duration", "workers", "metadata_files",
                  "timeout")),
    # -- gpus: per node, and per GPU of each node ---------------------------------------------
    _quantity("gpus", "count", Dim.COUNT, "==", level=SANITY,
              fault=_hw("PC-GPU-COUNT", "a GPU is missing (fallen off the bus?): read dmesg, "
                        "reboot; reseat the GPU, RMA it if it stays missing")),
    Declaration("gpus", "model", Value.NAME, level=SANITY,
                fault=_hw("PC-GPU-MODEL", "the node has another GPU model than ordered: "
                          "swap the node, or fix the spec if the order was that model")),
    _quantity("gpus", "memory", Dim.SIZE, level=SANITY,
              fault=_hw("PC-GPU-MEMORY", "the GPU shows less memory than ordered: check its "
                        "SKU and MIG mode (disable MIG); swap the GPU")),
    Declaration("gpus", "usable_memory", Value.SHARE, Dim.SIZE,
                expected="a share of total like '95%' or a size like '76 GiB'",
                reads=Reads("gpu_perf", "usable_memory"),
                fault=_hw("PC-GPU-USABLE-MEMORY", "find what holds GPU memory (nvidia-smi: "
                          "a leftover process): end it, or reset the GPU")),
    _quantity("gpus", "temperature", Dim.TEMPERATURE, "<=", default="<= 85 C", reads=_LOAD,
              fault=_hw("PC-GPU-TEMP", "check the node's cooling at the BMC (fans, inlet "
                        "air); reseat the heatsink, RMA the GPU if it alone runs hot")),
    _quantity("gpus", "ecc_uncorrected", Dim.COUNT, "<=", default="<= 0", level=SANITY,
              fault=_hw("PC-GPU-ECC", "reset the GPU (or reboot); RMA it if uncorrected "
                        "errors come back")),
    _quantity("gpus", "ecc_corrected", Dim.COUNT, "<=", level=SANITY,
              fault=_hw("PC-GPU-ECC-CORRECTED", "reset the GPU and watch it; RMA it if "
                        "corrected errors keep growing")),
    _rule("row_remap", "no pending or failed row remaps", level=SANITY,
          fault=_hw("PC-GPU-ROWREMAP", "reset the GPU (or reboot) to apply pending row "
                    "remaps; RMA the GPU if a remap failed")),
    _rule("pcie", "PCIe link at its maximum generation and width", "max", reads=_LOAD,
          fault=_hw("PC-GPU-PCIE", "the GPU's PCIe link is slower or narrower than it "
                    "should be: reseat the GPU and its riser; RMA if it stays")),
    Declaration("gpus", "nvlink", Value.RULE, Dim.COUNT, text="every NVLink link up",
                on=(True, "all"), level=SANITY,
                fault=_hw("PC-GPU-NVLINK", "an NVLink link is down: reset the GPUs (check "
                          "Fabric Manager); RMA the GPU or baseboard if it stays down")),
    _rule("throttle", "no HW slowdown, thermal or power-brake throttling under load", "none",
          reads=_LOAD,
          fault=_hw("PC-GPU-THROTTLE", "check cooling and power supplies at the BMC (the "
                    "case says which throttle); RMA the GPU if it alone throttles")),
    _rule("xid", "no critical XID errors", "none", level=SANITY,
          fault=_hw("PC-GPU-XID", "look the XID up in NVIDIA's catalogue: reset the GPU for a "
                    "one-off; RMA it for a repeated 48, 63, 64, 74, 79 or 94")),
    Declaration("gpus", "matmul", Value.MEMBERS, Dim.FLOPS, members=DTYPES,
                reads=Reads("gpu_perf", "matmul"),
                fault=_hw("PC-GPU-MATMUL", "the GPU computes slower than promised: check "
                          "its clocks, power limit and throttling; RMA if it stays slow")),
    _setting("gpus", "matmul_size"),
    _quantity("gpus", "memory_bandwidth", Dim.RATE,
              reads=Reads("gpu_perf", "copy", "bytes_per_s"),
              fault=_hw("PC-GPU-MEMBW", "check the GPU's memory clock and ECC state; reset "
                        "it, RMA if it stays slow")),
    _quantity("gpus", "h2d", Dim.RATE, reads=Reads("gpu_perf", "h2d", "bytes_per_s"),
              fault=_hw("PC-GPU-H2D", "check the GPU's PCIe link, the BIOS' PCIe and IOMMU "
                        "settings and NUMA placement; reseat the GPU")),
    _quantity("gpus", "d2h", Dim.RATE, reads=Reads("gpu_perf", "d2h", "bytes_per_s"),
              fault=_hw("PC-GPU-D2H", "check the GPU's PCIe link, the BIOS' PCIe and IOMMU "
                        "settings and NUMA placement; reseat the GPU")),
    _quantity("gpus", "p2p", Dim.RATE, reads=Reads("gpu_perf", "p2p"),
              fault=_hw("PC-GPU-P2P", "check NVLink and PCIe peer access (ACS in the BIOS, "
                        "the IOMMU); reset the GPUs")),
    _setting("gpus", "xid_window"),
    _quantity("gpus", "power_limit", Dim.POWER, level=SANITY,
              fault=_hw("PC-GPU-POWERCAP", "set the GPU's power limit to the ordered one "
                        "(nvidia-smi -pl) and check the power supplies")),
    _setting("gpus", "load_time"),
    # -- gpus under stress (-m stress, opt-in): every GPU of a node loaded at once for
    # stress_time, NVML sampled throughout, then the same matmul on every GPU compared ------
    _rule("stress_throttle", "no HW slowdown, thermal or power-brake throttling during the "
          "stress", "none", level=STRESS,
          fault=_hw("PC-GPU-STRESS-THROTTLE", "check cooling and power supplies at the BMC "
                    "under sustained load; RMA the GPU if it alone throttles")),
    _rule("sdc", "the same matmul result on every GPU of a node, every time (no silent data "
          "corruption)", level=STRESS,
          fault=_hw("PC-GPU-SDC", "silent data corruption: take the GPU out of service and "
                    "RMA it")),
    _setting("gpus", "stress_time"),
    # DCGM's own diagnostic, dcgmi diag -r N -j (r3, r4: stress); measure/dcgm_diag.py
    Declaration("gpus", "dcgm_diag", Value.NAME, level_when=implied.dcgm_level, reads=Reads(
        "dcgm"), text="every test of DCGM's diagnostic at the level passes on every GPU",
        fault=_hw("PC-GPU-DCGM", "DCGM's diagnostic found a hardware fault on the named GPU "
                  "and test: reset the GPU, run the level again; RMA it if it fails again")),
    Declaration("gpus", "uniform", Value.IMPLIED,
                text="every GPU of a node is the same model", level=SANITY,
                fault=_hw("PC-GPU-MIXED", "the node mixes GPU models: install matching "
                          "GPUs")),
    Declaration("gpus", "same_driver", Value.IMPLIED, needs_nodes=2,
                text="the same NVIDIA driver on every node", level=SANITY,
                fault=_hw("PC-GPU-DRIVER-DRIFT", "install the driver the other nodes run on "
                          "the odd node(s)")),
    # -- interconnect: the busbw promise, tested three ways (its scopes); the spec writes it
    # once, `interconnect.busbw`, and each scope is an instance of it ------------------------
    Declaration("interconnect", "busbw[intra_node]", Value.IMPLIED, when=implied.intra,
                fault=_hw("PC-NET-NVLINK-BUSBW", "GPU-to-GPU traffic inside the node is slow: "
                          "check NVLink/NVSwitch and Fabric Manager; reset the GPUs")),
    Declaration("interconnect", "busbw[inter_node]", Value.IMPLIED, when=implied.inter,
                fault=_net("PC-NET-BUSBW", "check the fabric between these nodes: port error "
                           "counters, cables, switch congestion, NCCL's transport")),
    Declaration("interconnect", "busbw[node_network]", Value.IMPLIED, when=implied.search,
                fault=_net("PC-NET-SLOW-NODE", "the node's network is slower than its "
                           "peers': check its NICs, cables and transceivers, its switch ports")),
    # the stress level: all_reduce over every node, back to back for stress_time, every
    # result checked (-m stress, opt-in)
    Declaration("interconnect", "stress_loop", Value.IMPLIED, when=implied.stress_loop,
                text="all_reduce over every node back to back for stress_time, every "
                     "result correct", level=STRESS,
                fault=_net("PC-NET-STRESS", "all_reduce failed under sustained load: check "
                           "port error counters and switch logs; replace a flapping cable")),
    _setting("interconnect", "stress_time"),
    _setting("interconnect", "engine"),  # torch, or nccl-tests inside one node
    _setting("interconnect", "nccl_tests"),  # the folder of nccl-tests' binaries
    # what NCCL used between nodes, from its log (interconnect.transport): each inter-node
    # job, whatever its busbw
    Declaration("interconnect", "transport", Value.IMPLIED, when=implied.transport,
                text="the network, GPUDirect RDMA and NVLS the contract names, on every "
                     "rank",
                fault=_net("PC-NET-TRANSPORT", "NCCL fell back from the promised transport: "
                           "check the RDMA devices, nvidia-peermem and the NIC driver")),
    # small-message latency between node pairs (a ping-pong, one rank per node): each
    # node's median one-way latency to its peers at latency_size, and the colocation rule
    # (no node much farther from its peers than the rest: another spine or switch)
    Declaration("interconnect", "latency", Value.QUANTITY, Dim.TIME, "<=",
                when=implied.latency, needs_nodes=2,
                fault=_net("PC-NET-LATENCY", "check the node's NIC, its cable and its switch "
                           "port, and where it sits in the topology")),
    Declaration("interconnect", "colocation", Value.RULE, when=implied.colocation,
                needs_nodes=3,
                text="no node's median latency to its peers above colocation_factor x the "
                     "median between the other nodes (a node on another spine or switch)",
                fault=_net("PC-NET-PLACEMENT", "the node sits on another spine or switch "
                           "than its peers: move it to their leaf")),
    _setting("interconnect", "latency_size"),
    _setting("interconnect", "colocation_factor"),
    # the theoretical rates busbw's share is of: a GPU's link in a node (NVLink: GB/s),
    # each NIC between nodes (a NIC's rate, stated in bits: 400 Gb/s)
    Declaration("interconnect", "intra_node.rate", Value.SETTING, Dim.RATE,
                within="intra_node"),
    Declaration("interconnect", "inter_node.rate_per_nic", Value.SETTING, Dim.RATE,
                within="inter_node", link=True),
    # -- fabric: every network port of a node as the kernel shows it (the NIC probe reads
    # sysfs), counted among `devices` (default: the RDMA ports, or with none the network
    # interfaces that are devices); each failure names the node and the port -------------
    _setting("fabric", "devices"),
    _quantity("fabric", "ports", Dim.COUNT, level=SANITY, reads=Reads("nic"),
              fault=_net("PC-NET-PORTS", "a port is missing or down: reseat or replace its "
                         "cable and transceiver; check the NIC is seen (lspci)")),
    _quantity("fabric", "rate", Dim.RATE, level=SANITY, reads=Reads("nic"), link=True,
              fault=_net("PC-NET-PORT-RATE", "the port trained below its rate: replace the "
                         "cable or transceiver; check the switch port")),
    Declaration("fabric", "link_layer", Value.NAME, level=SANITY, reads=Reads("nic"),
                fault=_net("PC-NET-LINK-LAYER", "set the port's link type (InfiniBand or "
                           "Ethernet: mlxconfig LINK_TYPE) and reboot")),
    _quantity("fabric", "mtu", Dim.COUNT, level=SANITY, reads=Reads("nic"),
              fault=_net("PC-NET-MTU", "set the port's MTU to the fabric's (the interface, "
                         "or the subnet manager's partition)")),
    # a NIC's PCIe link trains once (boot, hot-plug) and keeps its speed idle or loaded
    # (unlike a GPU's): read at rest, on every counted port's PCI device, once per device
    Declaration("fabric", "pcie", Value.RULE, on=(True, "max"), level=SANITY,
                reads=Reads("nic"),
                text="every counted port's NIC at its maximum PCIe generation and width",
                fault=_hw("PC-NET-PCIE", "reseat the NIC in a x16 Gen5 slot (or the slot "
                          "its card is made for) and check its riser; replace the card if "
                          "its link stays narrow or slow")),
    Declaration("fabric", "same_firmware", Value.IMPLIED, needs_nodes=2,
                text="the same NIC firmware on every node", level=SANITY, reads=Reads("nic"),
                fault=_net("PC-NET-FIRMWARE-DRIFT", "flash the NIC firmware the other nodes "
                           "run on the odd node(s)")),
    Declaration("fabric", "counters", Value.RULE, reads=Reads("nic"), last=True,
                text="no counted port's error counters grow during the run (read before "
                     "the first case and after the last)",
                fault=_net("PC-NET-PORT-ERRORS", "the port's error counters grew: replace "
                           "its cable or transceiver; check the switch port")),
    # symbol errors: a healthy link sees a few, so their rate over the run has a bound
    _quantity("fabric", "symbol_errors", Dim.EVENTS, "<=", reads=Reads("nic"), last=True,
              fault=_net("PC-NET-SYMBOL-ERRORS", "bit errors on the link: clean or replace "
                         "the cable and transceiver")),
    _setting("fabric", "flap"),  # in a soak: a port down this long fails its node (30 s)
    # each rail alone: the slow-node search's all_reduce with every job bound to one port
    # (NCCL_IB_HCA, NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME), one rail after another
    Declaration("fabric", "rail_busbw", Value.QUANTITY, Dim.RATE, needs_nodes=2,
                fault=_net("PC-NET-RAIL", "the named rail is slow: check that port's cable, "
                           "transceiver and switch port")),
    _setting("fabric", "rail_tool"),  # all_reduce (the default) or ib_write_bw
    _setting("fabric", "rail_cuda"),  # ib_write_bw --use_cuda (GPUDirect RDMA)
    # -- sim: a simulated NIC's rate (a fault of faults[]: the rate its port runs at) ------
    Declaration("sim", "faults.nic_rate", Value.SETTING, Dim.RATE, within="faults",
                link=True),
    # -- baseline: how a run is compared with an accepted one (--cluster-baseline); its
    # cases (baseline.nodes, .hardware, .performance) are derived after the run ----------
    _setting("baseline", "tolerance"),
    # -- sla: availability over a soak and the credit owed for falling short --------------
    _setting("sla", "uptime"),
    _setting("sla", "down_after"),
    _setting("sla", "price_per_node_hour"),
    _setting("sla", "currency"),
    _setting("sla", "credits"),
    # -- training: a small transformer trained with DistributedDataParallel on every node;
    # the step-time bound is also how a hang is found ----------------------------------------
    _quantity("training", "step_time", Dim.TIME, "<=", default="<= 60 s",
              fault=_hw("PC-TRAIN-STEP-TIME", "training steps are slow: fix the same nodes' "
                        "GPU and network failures first; the case's raw has the steps")),
    _quantity("training", "spread", Dim.FRACTION, "<=", default="<= 25%",
              fault=_hw("PC-TRAIN-STRAGGLER", "a straggler: check the slowest rank's node "
                        "(GPU clocks, throttling, its network)")),
    _quantity("training", "tokens_per_s", Dim.COUNT,
              fault=_hw("PC-TRAIN-THROUGHPUT", "training is slower than promised: fix the "
                        "same nodes' GPU and network failures first")),
    # per node: its ranks kept giving signs of life (a rank silent past the watchdog's
    # limit is stopped or frozen: its node is rejected, the figure the silence measured)
    Declaration("training", "ranks", Value.IMPLIED, Dim.TIME, "<=", when=implied.training,
                text="every rank of the node gives a sign of life within the watchdog's "
                     "limit (the step bound, at least 2 s), from its start to its end",
                fault=_hw("PC-TRAIN-HANG", "a rank hung: read the node's dmesg for XIDs, "
                          "reset its GPUs or reboot it")),
    _setting("training", "steps"),
    _setting("training", "ranks_per_node"),
    _setting("training", "backend"),
    _setting("training", "timeout"),
    # -- soak: how steady figures must stay over a soak's rounds (--cluster-soak) ---------
    _setting("soak", "spread"),
    _setting("soak", "drop"),
)


#: Every clause and setting, in the order error messages list a section's keys: ours, then
#: those of the installed extensions once they are loaded (contract/extensions.py).
CLAUSES: list[Declaration] = list(_BUILTIN)
_BY_ID = {declaration.id: declaration for declaration in CLAUSES}


@adds_to
def _add_extensions() -> None:
    """The extensions' clauses: each a clause whose test compares a probe's field (`Reads`
    with a field), or a setting; another is left out and said."""
    added = []
    for declaration in added_clauses():
        if declaration.is_clause and not declaration.table:
            problem(f"extension clause {declaration.id}: an extension's clause is tested by "
                    "comparing one field of a probe's payload; declare it with "
                    "reads=Reads(probe, part, field)")
        else:
            added.append(declaration)
    new = free(((d.id, d) for d in added), _BY_ID, "the clauses")
    CLAUSES.extend(new.values())
    _BY_ID.update(new)


def declared(name: str) -> Declaration:
    """The declaration of a clause by its family name ('storage.write'); KeyError if none."""
    return _BY_ID[name]


def clauses(section: str) -> tuple[Declaration, ...]:
    """The clauses of a section, in their declared order (settings left out)."""
    return tuple(d for d in CLAUSES if d.section == section and d.is_clause)


def keys(section: str, within: str = "") -> tuple[str, ...]:
    """The keys a section of the spec may have (of its map `within`: 'checkpoint'), in the
    order errors list them."""
    return tuple(d.written_as for d in CLAUSES
                 if d.section == section and d.written and d.within == within)


def readers(probe: str) -> dict[str, tuple[str, ...]]:
    """Each part of `probe`'s payload and the keys of the clauses that read it."""
    found: dict[str, tuple[str, ...]] = {}
    for d in CLAUSES:
        if d.reads is not None and d.reads.probe == probe:
            found[d.reads.part] = (*found.get(d.reads.part, ()), d.key)
    return found
