"""The spec's `sim:` section: a simulated cluster's description (GPU model and count, host
facts, the shared filesystem's rate) and its faults, per node or per GPU, validated into
SimSpec and SimFault records (contract/sim_records.py; pytest_cluster/sim/ plays them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from yaml.nodes import MappingNode, Node, SequenceNode

from pytest_cluster.contract.clause_parsers import as_declared
from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.fields import (
    boolean,
    field,
    one_of,
    or_default,
    positive_int,
    text,
    time_between,
    whole,
)
from pytest_cluster.contract.gpus import gpu_model
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.mapping import Map, for_launcher
from pytest_cluster.contract.sim_records import SimFault, SimSpec
from pytest_cluster.contract.yaml_nodes import kind, scalar
from pytest_cluster.errors import UnitError, head
from pytest_cluster.units import Dim, parse_bytes, parse_quantity

if TYPE_CHECKING:
    from pytest_cluster.contract.located_errors import Ctx
    from pytest_cluster.contract.model import ClusterSpec


T = TypeVar("T")

FAULT_KEYS = ("node", "gpu", "gpus", "down", "model", "memory_held", "pcie_gen", "pcie_width",
              "row_remap_pending", "row_remap_failure", "ecc_uncorrected", "nvlinks_down",
              "throttle", "xid", "temperature", "matmul_factor", "bandwidth_factor",
              "link_factor", "replaced", "from_round", "until_round", "sdc", "nic", "nic_down",
              "nic_rate", "nic_firmware", "nic_link_downed", "nic_symbol_errors", "transport",
              "gdr", "latency_factor", "storage_factor", "storage_corrupt", "storage_error",
              "storage_unmounted", "lies")
#: What a simulated node's NCCL may fall back to (its `transport` fault).
SIM_TRANSPORTS = ("socket",)
#: The clocks event reasons that count as throttling (the GPU probe's THROTTLE_BITS: the spec
#: imports no probe; tests/contract/test_loader.py asserts both name the same).
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
               "lies": "what the node reports"}
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


def _fault(ctx: Ctx, node: Node, index: int, nodes: frozenset[str],
           gpus_per_node: int) -> SimFault | None:
    path = f"sim.faults[{index}]"
    table = Map(ctx, node, path, FAULT_KEYS)
    if not isinstance(node, MappingNode):
        return None
    _node_faults_on_a_gpu(ctx, table, path)

    def node_name(raw: object) -> str:
        if raw not in nodes:
            raise UnitError(f"expected one of the cluster's nodes, got {raw!r}")
        return str(raw)

    def gpu_index(raw: object) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw < gpus_per_node:
            raise UnitError(f"expected a GPU index from 0 to {gpus_per_node - 1} "
                            f"(sim.gpus_per_node: {gpus_per_node}), got {raw!r}")
        return raw

    def count(raw: object) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise UnitError(f"expected a whole number >= 0, got {raw!r}")
        return raw

    def factor(raw: object) -> float:
        value = parse_quantity(raw, Dim.FRACTION).value
        if value <= 0:
            raise UnitError(f"expected a factor above 0 like 0.8, got {raw!r}")
        return value

    def far(raw: object) -> float:
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 1 <= raw <= 1000:
            raise UnitError(f"expected how many times farther the node is, from 1 to 1000 "
                            f"like 3, got {head(str(raw), 64)!r}")
        return float(raw)

    throttle = one_of(THROTTLES, f"one of {', '.join(THROTTLES)}")

    def one(key: str, parse: object) -> object:
        return field(ctx, table.take(key), f"{path}.{key}", parse)  # type: ignore[arg-type]

    storage_error = one_of(tuple(STORAGE_ERRORS), f"one of {', '.join(STORAGE_ERRORS)} (the "
                           "error every write and read of the node's client fails with)")
    lie = one_of(tuple(LIES), f"one of {', '.join(LIES)} (what the node claims instead "
                 "of what it measured)")
    sim_transport = one_of(SIM_TRANSPORTS, f"{' or '.join(SIM_TRANSPORTS)} (the network "
                                           f"NCCL falls back to)")

    rate_node = table.take("nic_rate")
    rate = as_declared(ctx, rate_node, f"{path}.nic_rate", declared("sim.faults.nic_rate"))
    if rate is not None and rate.value <= 0:
        ctx.error(rate_node, f"{path}.nic_rate", f"expected a rate above 0 like '200 Gb/s', "
                  f"got {scalar(rate_node) if rate_node is not None else None!r}")

    name = one("node", node_name)
    if name is None and not ctx.failed(f"{path}.node"):
        ctx.error(node, f"{path}.node", "missing: which node the fault is on")
    gpu_node = table.take("gpu")
    gpu = field(ctx, gpu_node, f"{path}.gpu", gpu_index)
    model = one("model", gpu_model)
    held = one("memory_held", parse_bytes)
    temp = one("temperature", lambda raw: parse_quantity(raw, Dim.TEMPERATURE).value)
    until_node = table.take("until_round")
    until = field(ctx, until_node, f"{path}.until_round", positive_int)
    fault = SimFault(
        node=str(name or ""), gpu=gpu,
        line=node.start_mark.line + 1,
        gpus=one("gpus", count),  # type: ignore[arg-type]
        down=bool(one("down", boolean)),
        model=model if isinstance(model, str) else None,
        memory_held_bytes=held if isinstance(held, int) else 0,
        pcie_gen=one("pcie_gen", positive_int),  # type: ignore[arg-type]
        pcie_width=one("pcie_width", positive_int),  # type: ignore[arg-type]
        row_remap_pending=bool(one("row_remap_pending", boolean)),
        row_remap_failure=bool(one("row_remap_failure", boolean)),
        ecc_uncorrected=or_default(one("ecc_uncorrected", count), 0),  # type: ignore[arg-type]
        nvlinks_down=or_default(one("nvlinks_down", count), 0),  # type: ignore[arg-type]
        throttle=one("throttle", throttle),  # type: ignore[arg-type]
        xid=one("xid", positive_int),  # type: ignore[arg-type]
        temperature_c=temp if isinstance(temp, float) else None,
        matmul_factor=or_default(one("matmul_factor", factor), 1.0),  # type: ignore[arg-type]
        bandwidth_factor=or_default(one("bandwidth_factor", factor),  # type: ignore[arg-type]
                                    1.0),
        link_factor=or_default(one("link_factor", factor), 1.0),  # type: ignore[arg-type]
        replaced=bool(one("replaced", boolean)),
        from_round=or_default(one("from_round", positive_int), 1),  # type: ignore[arg-type]
        until_round=until,
        sdc=bool(one("sdc", boolean)),
        nic=one("nic", whole(0, 63)),  # type: ignore[arg-type]
        nic_down=bool(one("nic_down", boolean)),
        nic_rate_gbit=rate.value * 8 / 1e9 if rate is not None and rate.value > 0 else None,
        nic_firmware=one("nic_firmware", text("a firmware version like '28.39.1002'")),  # type: ignore[arg-type]
        nic_link_downed=or_default(one("nic_link_downed", count), 0),  # type: ignore[arg-type]
        nic_symbol_errors=or_default(one("nic_symbol_errors", count),  # type: ignore[arg-type]
                                     0),
        transport=one("transport", sim_transport),  # type: ignore[arg-type]
        gdr=one("gdr", boolean),  # type: ignore[arg-type]
        latency_factor=or_default(one("latency_factor", far), 1.0),  # type: ignore[arg-type]
        storage_factor=or_default(one("storage_factor", factor), 1.0),  # type: ignore[arg-type]
        storage_corrupt=bool(one("storage_corrupt", boolean)),
        storage_error=one("storage_error", storage_error),  # type: ignore[arg-type]
        storage_unmounted=bool(one("storage_unmounted", boolean)),
        lies=one("lies", lie),  # type: ignore[arg-type]
    )
    table.finish()
    if until_node is not None and fault.until_round is not None \
            and fault.until_round < fault.from_round:
        ctx.error(until_node, f"{path}.until_round",
                  f"expected the last round the fault is on, from from_round "
                  f"({fault.from_round}) on, got {fault.until_round}")
    per_nic = (fault.nic_down, fault.nic_rate_gbit, fault.nic_firmware, fault.nic_link_downed,
               fault.nic_symbol_errors)
    if fault.nic is None and any(per_nic) and not ctx.failed(f"{path}.nic"):
        ctx.error(node, f"{path}.nic", "missing: a NIC fault needs the NIC's index (nic: 3, "
                  "for mlx5_3)")
    per_gpu = (fault.model, fault.memory_held_bytes, fault.pcie_gen, fault.pcie_width,
               fault.row_remap_pending, fault.row_remap_failure, fault.ecc_uncorrected,
               fault.nvlinks_down, fault.throttle, fault.xid, fault.temperature_c,
               fault.matmul_factor != 1.0, fault.bandwidth_factor != 1.0, fault.replaced,
               fault.sdc)
    if gpu_node is None and any(per_gpu):
        ctx.error(node, f"{path}.gpu", "missing: a GPU fault needs the GPU index (gpu: 3)")
    return fault


def rate_above_zero(raw: object) -> float:
    """A rate in bytes/s, above 0 ('400 GB/s')."""
    value = parse_quantity(raw, Dim.RATE).value
    if value <= 0:
        raise UnitError(f"expected a rate above 0 like '400 GB/s', got {head(str(raw), 64)!r}")
    return value


def parse_sim(ctx: Ctx, node: Node | None, cluster: ClusterSpec) -> SimSpec | None:
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
                                   "memory", "faults", "latency", "storage_rate"))
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
    faults: list[SimFault] = []
    faults_node = table.take("faults")
    if faults_node is not None:
        if not isinstance(faults_node, SequenceNode):
            ctx.error(faults_node, "sim.faults", f"expected a list of faults, got "
                      f"{kind(faults_node)}")
        else:
            nodes = frozenset(cluster.nodes)
            for index, item in enumerate(faults_node.value):
                fault = _fault(ctx, item, index, nodes, per_node)
                if fault is not None:
                    faults.append(fault)
    table.finish()
    return SimSpec(model, per_node, cores, threads, memory, tuple(faults), wait, storage_rate)
