"""The spec's `sim:` section: a simulated cluster's description (GPU model and count, host
facts, the shared filesystem's rate) and its faults, per node or per GPU, validated into
SimSpec and SimFault records (contract/sections/sim_records.py; pytest_cluster/sim/ plays them)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, TypeVar

from yaml.nodes import MappingNode, Node, SequenceNode

from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.reading.clause_parsers import as_declared
from pytest_cluster.contract.reading.fields import (
    boolean,
    field,
    one_of,
    or_default,
    positive_int,
    text,
    time_between,
    whole,
)
from pytest_cluster.contract.reading.mapping import Map, for_launcher
from pytest_cluster.contract.reading.yaml_nodes import kind, scalar
from pytest_cluster.contract.sections.gpus import gpu_model
from pytest_cluster.contract.sections.sim_records import (
    NIC_PCIE,
    NIC_PCIE_WIDTHS,
    NICS_PER_NODE,
    SimFault,
    SimSpec,
)
from pytest_cluster.errors import UnitError, head
from pytest_cluster.units import Dim, parse_bytes, parse_quantity

if TYPE_CHECKING:
    from pytest_cluster.contract.model import ClusterSpec, GpuSpec, InterconnectSpec
    from pytest_cluster.contract.reading.located_errors import Ctx


T = TypeVar("T")

FAULT_KEYS = ("node", "gpu", "gpus", "down", "model", "memory_held", "pcie_gen", "pcie_width",
              "row_remap_pending", "row_remap_failure", "ecc_uncorrected", "nvlinks_down",
              "throttle", "xid", "temperature", "matmul_factor", "bandwidth_factor",
              "link_factor", "replaced", "from_round", "until_round", "sdc", "nic", "nic_down",
              "nic_rate", "nic_firmware", "nic_link_downed", "nic_symbol_errors", "nic_pcie_gen",
              "nic_pcie_width", "nic_virtual", "transport",
              "gdr", "latency_factor", "storage_factor", "storage_corrupt", "storage_error",
              "storage_unmounted", "lies", "nccl_dead", "vbios", "dcgm_fail",
              "dcgm_config")
#: What a simulated node's NCCL may fall back to (its `transport` fault).
SIM_TRANSPORTS = ("socket",)
#: The clocks event reasons that count as throttling (the GPU probe's THROTTLE_BITS: the spec
#: imports no probe; tests/contract/sections/test_sim.py asserts both name the same).
THROTTLES = ("hw_slowdown", "sw_thermal", "hw_thermal", "power_brake")
#: Faults of a whole node, and what they change; the simulator applies them per node only.
NODE_FAULTS = {"gpus": "the node's GPU count", "down": "the whole node",
               "link_factor": "the node's network", "transport": "the node's NCCL network",
               "gdr": "the node's GPUDirect RDMA",
               "latency_factor": "the node's latency to its peers",
               "storage_factor": "the node's client of the shared filesystem",
               "storage_corrupt": "what the node reads of the shared filesystem",
               "storage_error": "the node's client of the shared filesystem",
               "storage_unmounted": "the node's mount of the shared filesystem",
               "lies": "what the node reports",
               "dcgm_config": "the node's setup DCGM's diagnostic checks",
               "nic_virtual": "the node's NICs (with nic, that one) as a VM sees them"}
#: What a lying node reports instead of what it measured (its `lies` fault), each a claim
#: the product checks against what the node does not control: a figure read back by
#: another node, the physics the spec implies, a plausible range.
LIES = {"storage_bytes": "its checkpoint and data loader bytes and operations x1000",
        "storage_seconds": "its checkpoint and data loader seconds near zero",
        "read_back": "a checkpoint read-back of writer 999, whom no one is",
        "cores": "1e308 CPU cores",
        "counters": "a NIC error counter of -5",
        "busbw": "its GPUs' busbw among themselves 10x what they reached",
        "gpu_figures": "its GPUs' matmul 10x what they reached"}
#: The errors a simulated node's client of the shared filesystem may fail with (its
#: `storage_error` fault), as the kernel names them, and their text.
STORAGE_ERRORS = {"ENOSPC": "No space left on device", "EIO": "Input/output error",
                  "ENOENT": "No such file or directory", "EROFS": "Read-only file system"}


def _node_faults_on_a_gpu(ctx: Ctx, table: Map, path: str) -> None:
    """Refuse a node fault written with `gpu: N` (it would be silently ignored)."""
    if "gpu" not in table.items:
        return
    for key, what in NODE_FAULTS.items():
        if key in table.items:
            ctx.error(table.items[key][0], f"{path}.{key}", f"{key} is a node fault ({what}), "
                      "not a GPU's: give it without gpu")


def _count(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise UnitError(f"expected a whole number >= 0, got {raw!r}")
    return raw


def _factor(raw: object) -> float:
    value = parse_quantity(raw, Dim.FRACTION).value
    if value <= 0:
        raise UnitError(f"expected a factor above 0 like 0.8, got {raw!r}")
    return value


def _far(raw: object) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 1 <= raw <= 1000:
        raise UnitError(f"expected how many times farther the node is, from 1 to 1000 "
                        f"like 3, got {head(str(raw), 64)!r}")
    return float(raw)


def _celsius(raw: object) -> float:
    return parse_quantity(raw, Dim.TEMPERATURE).value


_throttle = one_of(THROTTLES, f"one of {', '.join(THROTTLES)}")
_storage_error = one_of(tuple(STORAGE_ERRORS), f"one of {', '.join(STORAGE_ERRORS)} (the "
                        "error every write and read of the node's client fails with)")
_lie = one_of(tuple(LIES), f"one of {', '.join(LIES)} (what the node claims instead of what "
              "it measured)")
_sim_transport = one_of(SIM_TRANSPORTS, f"{' or '.join(SIM_TRANSPORTS)} (the network NCCL "
                        "falls back to)")
_firmware = text("a firmware version like '28.39.1002'")
_vbios = text("a VBIOS version as NVML prints it, like '96.00.89.00.01'")
#: DCGM's diagnostic tests a simulated GPU can fail (DCGM 4.x's names; the sim plays each
#: at the levels DCGM runs it: sim/dcgm.py), and the configuration findings it can make.
DCGM_TESTS = ("software", "pcie", "memory", "diagnostic", "targeted_stress",
              "targeted_power", "memory_bandwidth", "memtest", "pulse_test")
DCGM_CONFIGS = ("persistence_mode",)
_dcgm_test = one_of(DCGM_TESTS, f"one of DCGM's tests: {', '.join(DCGM_TESTS)}")
_dcgm_config = one_of(DCGM_CONFIGS, f"{' or '.join(DCGM_CONFIGS)} (what DCGM's diagnostic "
                      "finds wrong with the node's setup)")


def _dcgm_version(raw: object) -> int | None:
    """The DCGM a simulated node has: 3 or 4 (its JSON's shape), or none (not installed)."""
    if isinstance(raw, int) and not isinstance(raw, bool) and raw in (3, 4):
        return raw
    if raw == "none":
        return None
    raise UnitError(f"expected 3 or 4 (the DCGM whose JSON the node prints) or none (no "
                    f"dcgmi), got {head(str(raw), 64)!r}")


def _node_name(nodes: frozenset[str]) -> Callable[[object], str]:
    def parse(raw: object) -> str:
        if raw not in nodes:
            raise UnitError(f"expected one of the cluster's nodes, got {raw!r}")
        return str(raw)
    return parse


def _gpu_index(gpus_per_node: int) -> Callable[[object], int]:
    def parse(raw: object) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw < gpus_per_node:
            raise UnitError(f"expected a GPU index from 0 to {gpus_per_node - 1} "
                            f"(sim.gpus_per_node: {gpus_per_node}), got {raw!r}")
        return raw
    return parse


@dataclass(frozen=True)
class _Fields:
    """A fault's map being read, one key at a time: a wrong value is said at its path and
    read as None; the nodes taken are kept, for the errors that come after."""

    ctx: Ctx
    table: Map
    path: str
    taken: dict[str, Node] = dataclass_field(default_factory=dict)

    def node(self, key: str) -> Node | None:
        """The key's node once taken (None: absent, or given without a value)."""
        return self.taken.get(key)

    def one(self, key: str, parse: Callable[[object], T]) -> T | None:
        """The key's value as `parse` reads it; None when absent or wrong (said)."""
        node = self.table.take(key)
        if node is not None:
            self.taken[key] = node
        return field(self.ctx, node, f"{self.path}.{key}", parse)

    def or_(self, key: str, parse: Callable[[object], T], default: T) -> T:
        """The key's value, or `default` when absent or wrong (said)."""
        return or_default(self.one(key, parse), default)

    def flag(self, key: str) -> bool:
        return bool(self.one(key, boolean))


def _nic_rate(fields: _Fields) -> float | None:
    """The `nic_rate` fault in Gbit/s; None when absent or wrong (said)."""
    ctx, path = fields.ctx, f"{fields.path}.nic_rate"
    rate_node = fields.table.take("nic_rate")
    rate = as_declared(ctx, rate_node, path, declared("sim.faults.nic_rate"))
    if rate is not None and rate.value <= 0:
        ctx.error(rate_node, path, f"expected a rate above 0 like '200 Gb/s', got "
                  f"{scalar(rate_node) if rate_node is not None else None!r}")
    return rate.value * 8 / 1e9 if rate is not None and rate.value > 0 else None


def _nic_width(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw not in NIC_PCIE_WIDTHS:
        raise UnitError(f"expected the lanes a NIC's PCIe link trained to: "
                        f"{', '.join(map(str, NIC_PCIE_WIDTHS))}; got {head(str(raw), 40)!r}")
    return raw


def _read(fields: _Fields, name: str, gpu: int | None, line: int,
          nic_rate: float | None) -> SimFault:
    """The fault's every other key, in the order they were always read (the errors kept
    are the first ones)."""
    model = fields.one("model", gpu_model)
    held = fields.or_("memory_held", parse_bytes, 0)
    temperature = fields.one("temperature", _celsius)
    until = fields.one("until_round", positive_int)
    return SimFault(
        node=name, gpu=gpu, line=line,
        gpus=fields.one("gpus", _count),
        down=fields.flag("down"),
        model=model, memory_held_bytes=held,
        pcie_gen=fields.one("pcie_gen", positive_int),
        pcie_width=fields.one("pcie_width", positive_int),
        row_remap_pending=fields.flag("row_remap_pending"),
        row_remap_failure=fields.flag("row_remap_failure"),
        ecc_uncorrected=fields.or_("ecc_uncorrected", _count, 0),
        nvlinks_down=fields.or_("nvlinks_down", _count, 0),
        throttle=fields.one("throttle", _throttle),
        xid=fields.one("xid", positive_int),
        temperature_c=temperature,
        matmul_factor=fields.or_("matmul_factor", _factor, 1.0),
        bandwidth_factor=fields.or_("bandwidth_factor", _factor, 1.0),
        link_factor=fields.or_("link_factor", _factor, 1.0),
        replaced=fields.flag("replaced"),
        from_round=fields.or_("from_round", positive_int, 1),
        until_round=until,
        sdc=fields.flag("sdc"),
        nic=fields.one("nic", whole(0, 63)),
        nic_down=fields.flag("nic_down"),
        nic_rate_gbit=nic_rate,
        nic_firmware=fields.one("nic_firmware", _firmware),
        nic_link_downed=fields.or_("nic_link_downed", _count, 0),
        nic_symbol_errors=fields.or_("nic_symbol_errors", _count, 0),
        nic_pcie_gen=fields.one("nic_pcie_gen", whole(1, NIC_PCIE[0])),
        nic_pcie_width=fields.one("nic_pcie_width", _nic_width),
        nic_virtual=fields.flag("nic_virtual"),
        transport=fields.one("transport", _sim_transport),
        gdr=fields.one("gdr", boolean),
        latency_factor=fields.or_("latency_factor", _far, 1.0),
        storage_factor=fields.or_("storage_factor", _factor, 1.0),
        storage_corrupt=fields.flag("storage_corrupt"),
        storage_error=fields.one("storage_error", _storage_error),
        storage_unmounted=fields.flag("storage_unmounted"),
        lies=fields.one("lies", _lie),
        nccl_dead=fields.flag("nccl_dead"),
        vbios=fields.one("vbios", _vbios),
        dcgm_fail=fields.one("dcgm_fail", _dcgm_test),
        dcgm_config=fields.one("dcgm_config", _dcgm_config),
    )


def _check(fields: _Fields, node: Node, fault: SimFault) -> None:
    """What a fault's keys must say together: its rounds in order, the NIC or GPU its
    NIC's or GPU's faults are on."""
    ctx, path = fields.ctx, fields.path
    until_node = fields.node("until_round")
    if until_node is not None and fault.until_round is not None \
            and fault.until_round < fault.from_round:
        ctx.error(until_node, f"{path}.until_round",
                  f"expected the last round the fault is on, from from_round "
                  f"({fault.from_round}) on, got {fault.until_round}")
    per_nic = (fault.nic_down, fault.nic_rate_gbit, fault.nic_firmware, fault.nic_link_downed,
               fault.nic_symbol_errors, fault.nic_pcie_gen, fault.nic_pcie_width)
    if fault.nic is None and any(per_nic) and not ctx.failed(f"{path}.nic"):
        ctx.error(node, f"{path}.nic", "missing: a NIC fault needs the NIC's index (nic: 3, "
                  "for mlx5_3)")
    per_gpu = (fault.model, fault.memory_held_bytes, fault.pcie_gen, fault.pcie_width,
               fault.row_remap_pending, fault.row_remap_failure, fault.ecc_uncorrected,
               fault.nvlinks_down, fault.throttle, fault.xid, fault.temperature_c,
               fault.matmul_factor != 1.0, fault.bandwidth_factor != 1.0, fault.replaced,
               fault.sdc, fault.nccl_dead, fault.vbios, fault.dcgm_fail)
    if fields.node("gpu") is None and any(per_gpu):
        ctx.error(node, f"{path}.gpu", "missing: a GPU fault needs the GPU index (gpu: 3)")


def _fault(ctx: Ctx, node: Node, index: int, nodes: frozenset[str],
           gpus_per_node: int, plays: _Plays) -> SimFault | None:
    path = f"sim.faults[{index}]"
    table = Map(ctx, node, path, FAULT_KEYS)
    if not isinstance(node, MappingNode):
        return None
    _node_faults_on_a_gpu(ctx, table, path)
    fields = _Fields(ctx, table, path)
    nic_rate = _nic_rate(fields)
    name = fields.one("node", _node_name(nodes))
    if name is None and not ctx.failed(f"{path}.node"):
        ctx.error(node, f"{path}.node", "missing: which node the fault is on")
    gpu = fields.one("gpu", _gpu_index(gpus_per_node))
    fault = _read(fields, name or "", gpu, node.start_mark.line + 1, nic_rate)
    table.finish()
    _check(fields, node, fault)
    _plays(fields, fault, plays)
    return fault


@dataclass(frozen=True)
class _Plays:
    """What of the spec a fault must be on to play: the simulated node's NICs, whether
    the spec runs DCGM's diagnostic (None: the gpus section failed, nothing said)."""

    nics: int
    dcgm: bool | None


def _plays(fields: _Fields, fault: SimFault, plays: _Plays) -> None:
    """A fault the run would never play is a slip at its line: a NIC beyond the node's
    (the sim's nodes have interconnect.inter_node.nics_per_node, else NICS_PER_NODE), a
    DCGM finding where the spec runs no gpus.dcgm_diag."""
    ctx, path = fields.ctx, fields.path
    nic = fields.node("nic")
    if fault.nic is not None and fault.nic >= plays.nics and nic is not None:
        ctx.error(nic, f"{path}.nic", f"expected a NIC index from 0 to {plays.nics - 1} (the "
                  f"simulated nodes have {plays.nics} NICs: interconnect.inter_node."
                  f"nics_per_node, {NICS_PER_NODE} without it), got {fault.nic}: the fault "
                  "would never play")
    for key in ("dcgm_fail", "dcgm_config"):
        found = fields.node(key)
        if found is not None and plays.dcgm is False and not ctx.failed(f"{path}.{key}"):
            ctx.error(found, f"{path}.{key}", "never plays: the spec runs no DCGM diagnostic "
                      "(add gpus.dcgm_diag: r1, r2, r3 or r4)")


def rate_above_zero(raw: object) -> float:
    """A rate in bytes/s, above 0 ('400 GB/s')."""
    value = parse_quantity(raw, Dim.RATE).value
    if value <= 0:
        raise UnitError(f"expected a rate above 0 like '400 GB/s', got {head(str(raw), 64)!r}")
    return value


#: An RDMA device's name before its index, as a kernel names one (mlx5_, mlx5_ib).
_PREFIX = re.compile(r"^[a-z][a-z0-9_]{0,15}$")


def _nic_prefix(raw: object) -> str:
    """sim.nic_prefix: what the simulated node's RDMA devices are named before their
    index ('mlx5_': mlx5_0..7; 'mlx5_ib': mlx5_ib0..7, as Azure's ND VMs name them)."""
    if isinstance(raw, str) and _PREFIX.match(raw) and not raw[-1].isdigit():
        return raw
    raise UnitError(f"expected a device name's start like 'mlx5_' or 'mlx5_ib' (lowercase "
                    f"letters, digits and _, not ending in a digit), got "
                    f"{head(str(raw), 64)!r}")


def parse_sim(ctx: Ctx, node: Node | None, cluster: ClusterSpec, gpus: GpuSpec | None = None,
              interconnect: InterconnectSpec | None = None) -> SimSpec | None:
    """The sim section; its faults checked against the spec's `gpus` and `interconnect`
    (a fault on a NIC the nodes lack, a DCGM finding no diagnostic reads, is an error)."""
    if node is None:
        launcher = KINDS[cluster.launcher]
        if launcher.section == "sim" and launcher.needs_section:
            ctx.error(None, "sim", f"missing: launcher {launcher.name} needs a sim section "
                      "(gpu_model, gpus_per_node, faults)")
        return None
    if not for_launcher(ctx, node, "sim", cluster):
        return None
    if node.tag.endswith(":null"):  # `sim:` alone: every default
        node = MappingNode("tag:yaml.org,2002:map", [], node.start_mark, node.end_mark)
    table = Map(ctx, node, "sim", ("gpu_model", "gpus_per_node", "cpu_cores", "cpu_threads",
                                   "memory", "faults", "latency", "storage_rate", "dcgm",
                                   "nic_prefix"))
    if not isinstance(node, MappingNode):
        return None
    def memory_size(raw: object) -> int:
        value = parse_bytes(raw)
        if value < 2**30:
            raise UnitError(f"expected a size of at least 1 GiB like '2 TiB', got {raw!r}")
        return value

    def one(key: str, parse: Callable[[object], T], default: T) -> T:
        return or_default(field(ctx, table.take(key), f"sim.{key}", parse), default)

    model = one("gpu_model", gpu_model, "H100-SXM-80GB")
    per_node = one("gpus_per_node", whole(1, 64), 8)
    cores = one("cpu_cores", positive_int, 112)
    threads = one("cpu_threads", positive_int, 224)
    memory = one("memory", memory_size, 2 * 2**40)
    wait = one("latency", time_between(0, 60, "from 0 to 1 min"), 0.0)
    storage_rate = one("storage_rate", rate_above_zero, 0.0)
    nic_prefix = one("nic_prefix", _nic_prefix, "mlx5_")
    dcgm_node = table.take("dcgm")
    dcgm = field(ctx, dcgm_node, "sim.dcgm", _dcgm_version) if dcgm_node is not None else 4
    faults: list[SimFault] = []
    faults_node = table.take("faults")
    if faults_node is not None:
        if not isinstance(faults_node, SequenceNode):
            ctx.error(faults_node, "sim.faults", f"expected a list of faults, got "
                      f"{kind(faults_node)}")
        else:
            nodes = frozenset(cluster.nodes)
            link = interconnect.inter_node if interconnect is not None else None
            plays = _Plays(link.count if link is not None else NICS_PER_NODE,
                           None if ctx.failed("gpus") or ctx.failed("gpus.dcgm_diag")
                           else gpus is not None and gpus.dcgm_level is not None)
            for index, item in enumerate(faults_node.value):
                fault = _fault(ctx, item, index, nodes, per_node, plays)
                if fault is not None:
                    faults.append(fault)
    table.finish()
    return SimSpec(model, per_node, cores, threads, memory, tuple(faults), wait, storage_rate,
                   dcgm, nic_prefix)
