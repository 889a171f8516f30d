"""What a simulated node looks like, from the spec's `sim:` section: the description the
simulated NVML answers from, and the payloads of the probes that need real hardware
(host, torch measurements). Pure functions; every number derives from the GPU model's
healthy reference values (gpu_models), the faults and a small deterministic jitter.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import TYPE_CHECKING, Literal, TypedDict

from pytest_cluster.contract.sections.gpu_models import MODELS, GpuModel
from pytest_cluster.contract.sections.sim_records import SimFault, SimSpec
from pytest_cluster.probes.gpu import THROTTLE_BITS, throttle_names
from pytest_cluster.sim import round as rounds

if TYPE_CHECKING:
    from pytest_cluster.probes.gpu_perf import (
        GpuPerfData,
        Options,
        P2pPair,
        PerfGpu,
        Rate,
        Sdc,
    )
    from pytest_cluster.probes.host import HostData
    from pytest_cluster.probes.inventory import Disk, InventoryData, Unreadable

MIB = 2**20
DRIVER = "550.90.07"
CUDA_DRIVER = 12040  # NVML's encoding of CUDA 12.4
#: PCI bus numbers of the 8 GPUs of an HGX H100 board.
BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
CUDA_CONTEXT_BYTES = 534 * MIB  # what the CUDA context of a torch process takes
#: matmul TFLOPS of a dtype relative to bf16 on tensor-core GPUs (measured, not peak)
DTYPE_RATIO = {"bf16": 1.0, "fp16": 1.0, "tf32": 0.47, "fp32": 0.066, "fp8": 1.65}
SIMULATED_BY = "simulated from the spec's sim section, no hardware measured"
#: VBIOS versions as NVML prints them, by form factor (SXM, PCI)
VBIOS = {"SXM": "96.00.74.00.0F", "PCI": "96.00.5E.00.03"}
IB_SPEEDS = {400: "NDR", 200: "HDR", 100: "EDR"}  # 4X link rate (Gb/s) -> its name
#: The smallest share of its rate the sim plays a factor fault at (the spec takes any
#: factor above 0): below a millionth a link is as good as stopped, and its times stay
#: finite numbers.
MIN_FACTOR = 1e-6


def floored(factor: float) -> float:
    """A factor fault as the sim plays it: never below MIN_FACTOR."""
    return max(factor, MIN_FACTOR)


def jitter(*key: object, spread: float = 0.01) -> float:
    """A factor in [1 - spread, 1 + spread], the same for the same key on every run."""
    digest = hashlib.sha256(repr(key).encode()).digest()
    return 1 + spread * (int.from_bytes(digest[:4], "big") / 2**32 * 2 - 1)


def watts(milliwatts: float) -> float:
    return round(milliwatts / 1000, 1)


def faults_on(sim: SimSpec, node: str, gpu: int | None = None) -> list[SimFault]:
    """The faults on a node (gpu None) or one of its GPUs that have started by this
    soak round (rounds.current(): 1 outside a soak) and are not yet repaired
    (`until_round`)."""
    now = rounds.current()
    return [f for f in sim.faults if f.node == node and f.gpu == gpu and f.from_round <= now
            and (f.until_round is None or now <= f.until_round)]


def node_is_down(sim: SimSpec, node: str) -> SimFault | None:
    return next((f for f in faults_on(sim, node) if f.down), None)


def link_factor(sim: SimSpec, node: str) -> float:
    """The share of its rate `node`'s network runs at (its last link_factor fault)."""
    factors = [f.link_factor for f in faults_on(sim, node) if f.link_factor != 1.0]
    return floored(factors[-1]) if factors else 1.0


def latency_factor(sim: SimSpec, node: str) -> float:
    """How many times farther `node` sits from its peers (its last latency_factor fault)."""
    factors = [f.latency_factor for f in faults_on(sim, node) if f.latency_factor != 1.0]
    return factors[-1] if factors else 1.0


def lies(sim: SimSpec, node: str) -> frozenset[str]:
    """What `node` claims instead of what it measured (its `lies` faults, contract/sections/sim.py's
    LIES): the sim reports each figure the lie names as the lie says."""
    return frozenset(f.lies for f in faults_on(sim, node) if f.lies is not None)


#: How much a lying node inflates the figure it lies about (its `lies` fault).
LIE_FACTOR = 1000.0
#: The GPU figures and busbw a lying node claims: this many times what it reached.
PEAK_LIE_FACTOR = 10.0


def gpu_count(sim: SimSpec, node: str) -> int:
    counts = [f.gpus for f in faults_on(sim, node) if f.gpus is not None]
    return counts[-1] if counts else sim.gpus_per_node


def merged(sim: SimSpec, node: str, gpu: int) -> SimFault:
    """All faults on one GPU as one record (later entries win)."""
    result = SimFault(node=node, gpu=gpu, line=0)
    for fault in faults_on(sim, node, gpu):
        changes = {name: getattr(fault, name) for name in SimFault.__dataclass_fields__
                   if name not in ("node", "gpu", "line")
                   and getattr(fault, name) != getattr(SimFault(node, gpu, 0), name)}
        result = SimFault(**{**result.__dict__, **changes})
    return result


def gpu_model(sim: SimSpec, fault: SimFault) -> GpuModel:
    return MODELS[fault.model or sim.gpu_model]


class SimEcc(TypedDict):
    corrected: int
    uncorrected: int


class SimProcess(TypedDict):
    pid: int
    used: int


class SimGpu(TypedDict):
    """One GPU as the simulated NVML (sim/nvml/pynvml.py) answers for it: idle, and under
    load (the torch probe's samples)."""

    name: str
    uuid: str
    serial: str
    board_part: str
    vbios: str
    inforom: str
    pci_bus_id: str
    memory_total: int
    memory_reserved: int
    memory_used: int
    ecc: SimEcc
    remap_pending: bool
    remap_failure: bool
    pcie_gen: int
    pcie_gen_load: int
    pcie_max_gen: int
    pcie_width: int
    pcie_max_width: int
    nvlinks: int
    nvlinks_down: int
    reasons_idle: int
    reasons_under_load: int
    temperature_idle: int
    temperature_load: float
    power_idle_mw: int
    power_load_mw: int
    power_limit_mw: int
    power_default_limit_mw: int
    sm_clock_idle_mhz: int
    sm_clock_load_mhz: int
    sm_clock_max_mhz: int
    processes: list[SimProcess]
    xids: list[int]


class SimNode(TypedDict):
    """What PYTEST_CLUSTER_SIM_NODE carries to the simulated NVML."""

    node: str
    driver: str
    cuda_driver: int
    gpus: list[SimGpu]


def describe_gpu(sim: SimSpec, node: str, index: int) -> SimGpu:
    """One GPU as the simulated NVML reports it."""
    fault = merged(sim, node, index)
    model = gpu_model(sim, fault)
    throttle = THROTTLE_BITS.get(fault.throttle or "", 0)
    held = fault.memory_held_bytes
    bus = BUSES[index % len(BUSES)] if index < len(BUSES) else f"{index + 0x10:02x}"
    load_temp = fault.temperature_c if fault.temperature_c is not None else round(
        64 * jitter(node, index, "temp", spread=0.05))
    board = (node, index, "replaced") if fault.replaced else (node, index)
    seat = f"{node}.gpu{index}" + (".replaced" if fault.replaced else "")
    return {
        "name": model.nvml_names[0],
        "uuid": f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, seat + '.sim')}",
        "serial": f"1654{int(jitter(*board, 'serial', spread=0.5) * 10**9) % 10**9:09d}",
        "board_part": "692-2G520-0200-000" if model.form_factor.startswith("SXM")
        else "900-21010-0000-000",
        "vbios": fault.vbios or VBIOS.get(model.form_factor[:3], "96.00.99.00.01"),
        "inforom": "G520.0200.00.05",  # an H100 SXM's infoROM image (nvidia-smi -q)
        "pci_bus_id": f"00000000:{bus}:00.0",
        "memory_total": model.memory_bytes,
        "memory_reserved": 512 * MIB,
        "memory_used": held,
        "ecc": {"corrected": 0, "uncorrected": fault.ecc_uncorrected},
        "remap_pending": fault.row_remap_pending,
        "remap_failure": fault.row_remap_failure,
        # Links drop to Gen1 when idle to save power, as real GPUs do; faults hold under load.
        "pcie_gen": 1,
        "pcie_gen_load": fault.pcie_gen or model.pcie_gen,
        "pcie_max_gen": model.pcie_gen,
        "pcie_width": fault.pcie_width or model.pcie_width,
        "pcie_max_width": model.pcie_width,
        "nvlinks": model.nvlinks,
        "nvlinks_down": min(fault.nvlinks_down, model.nvlinks),
        "reasons_idle": 0x1,
        "reasons_under_load": throttle,
        "temperature_idle": round(31 * jitter(node, index, "idle", spread=0.05)),
        "temperature_load": load_temp,
        "power_idle_mw": round(72000 * jitter(node, index, "pidle")),
        "power_load_mw": round(model.power_limit_w * 0.93 * 1000 * jitter(node, index, "p")),
        "power_limit_mw": round(model.power_limit_w * 1000),
        "power_default_limit_mw": round(model.power_limit_w * 1000),
        "sm_clock_idle_mhz": 345,
        "sm_clock_load_mhz": 1230 if throttle else 1755,
        "sm_clock_max_mhz": 1980,
        "processes": [{"pid": 4242, "used": held}] if held else [],
        "xids": [fault.xid] if fault.xid else [],
    }


def describe_node(sim: SimSpec, node: str) -> SimNode:
    """What PYTEST_CLUSTER_SIM_NODE carries to the simulated NVML."""
    return {"node": node, "driver": DRIVER, "cuda_driver": CUDA_DRIVER,
            "gpus": [describe_gpu(sim, node, i) for i in range(gpu_count(sim, node))]}


def host_payload(sim: SimSpec, node: str) -> HostData:
    """The host probe's answer for a simulated node."""
    # a liar's 1e308 cores: a float where the probe gives a count, as a forged answer can
    cores: int = 10**308 if "cores" in lies(sim, node) else sim.cpu_cores
    return {
        "hostname": node,
        "cpu": {"model": "Intel(R) Xeon(R) Platinum 8480+ (simulated)", "threads": sim.cpu_threads,
                "cores": cores, "sockets": 2, "usable_threads": sim.cpu_threads,
                "cores_source": SIMULATED_BY},
        "memory": {"total_bytes": sim.memory_bytes,
                   "available_bytes": int(sim.memory_bytes * 0.95), "source": SIMULATED_BY},
        "os": "Ubuntu 22.04.4 LTS (simulated)",
        "python_executable": "/usr/bin/python3",
        "versions": {"kernel": "5.15.0-107-generic", "python": "3.11.9", "torch": "2.4.0",
                     "cuda": "12.4", "nccl": "2.21.5", "driver": DRIVER},
        "sources": dict.fromkeys(("kernel", "python", "torch", "cuda", "nccl", "driver"),
                                 SIMULATED_BY),
    }


def _unreadable(why: str) -> Unreadable:
    return {"unreadable": f"{why} ({SIMULATED_BY})"}


def inventory_payload(sim: SimSpec, node: str, paths: list[str]) -> InventoryData:
    """The inventory probe's answer for a simulated node: a DGX-like machine with one
    400 Gb/s NDR InfiniBand HCA per GPU (a node's link_factor lowers the rate its links
    trained at), and one local NVMe disk behind every filesystem."""
    digest = hashlib.sha256(node.encode()).hexdigest()
    disks: list[Disk] = [{"name": "nvme0n1", "model": "SAMSUNG MZQL23T8HCLS (simulated)",
              "serial": f"S64HNE0T{digest[16:22].upper()}", "size_bytes": 3840755982336,
              "rotational": False}]
    return {"machine": {"hostname": node, "machine_id": digest[:32],
                        "dmi": {"sys_vendor": "NVIDIA (simulated)", "product_name": "DGXH100",
                                "product_serial": f"SIM{digest[:10].upper()}",
                                "product_uuid": str(uuid.uuid5(uuid.NAMESPACE_DNS, node)),
                                "board_serial": _unreadable("not simulated"),
                                "chassis_serial": _unreadable("not simulated"),
                                "bios_version": "1.4.2"}},
            "filesystems": [{"path": path, "mount_point": path, "fs_type": "xfs",
                             "source": "/dev/nvme0n1p1", "block_devices": disks}
                            for path in paths]}


def _rate(value: float, what: str, iterations: int = 100) -> Rate:
    return {"bytes_per_s": value, "median_bytes_per_s": value,
            "max_bytes_per_s": value * 1.01, "min_bytes_per_s": value * 0.98,
            "iterations": iterations, "method": f"{what} ({SIMULATED_BY})"}


def _pcie_factor(gpu: SimGpu) -> float:
    gen = 2.0 ** (gpu["pcie_gen_load"] - gpu["pcie_max_gen"])
    return float(gen * gpu["pcie_width"] / gpu["pcie_max_width"])


def gpu_perf_payload(sim: SimSpec, node: str, options: Options) -> GpuPerfData:
    """The gpu_perf probe's answer for a simulated node, for the probe's options."""
    described = describe_node(sim, node)
    skip = set(options.get("skip", ()))
    m, n, k = options.get("shape", [8192, 8192, 8192])
    gpus: list[PerfGpu] = []
    for index, gpu in enumerate(described["gpus"]):
        fault = merged(sim, node, index)
        model = gpu_model(sim, fault)
        entry: PerfGpu = {"index": index, "name": gpu["name"],
                                 "uuid": gpu["uuid"].removeprefix("GPU-")}
        if "usable_memory" not in skip:
            free = gpu["memory_total"] - gpu["memory_reserved"] - gpu["memory_used"]
            allocated = (free - CUDA_CONTEXT_BYTES) // (2 * MIB) * 2 * MIB
            entry["usable_memory"] = {
                "allocated_bytes": allocated,
                "cuda_total_bytes": gpu["memory_total"] - gpu["memory_reserved"],
                "cuda_free_before_bytes": free - CUDA_CONTEXT_BYTES, "failed_allocations": 10,
                "method": f"allocation until out of memory ({SIMULATED_BY})"}
        bandwidth = floored(fault.bandwidth_factor)
        if "copy" not in skip:
            entry["copy"] = _rate(model.copy_tb_s * 1e12 * bandwidth * jitter(node, index, "c"),
                                  "device-to-device copy, read + write counted")
        directions: tuple[tuple[Literal["h2d", "d2h"], float], ...] = (
            ("h2d", 1.0), ("d2h", 0.96))
        for part, factor in directions:
            if part not in skip:
                entry[part] = _rate(model.h2d_gb_s * 1e9 * factor * _pcie_factor(gpu)
                                    * jitter(node, index, part), f"{part} copy, pinned memory",
                                    20)
        bf16 = model.bf16_tflops * floored(fault.matmul_factor)
        claimed = PEAK_LIE_FACTOR if "gpu_figures" in lies(sim, node) else 1.0
        entry["matmul"] = {}
        for dtype in options.get("dtypes", ()):
            tflops = bf16 * DTYPE_RATIO[dtype] * jitter(node, index, dtype) * claimed
            entry["matmul"][dtype] = {
                "tflops_median": tflops, "tflops_max": tflops * 1.004,
                "tflops_min": tflops * 0.985, "shape": [m, n, k], "warmup": 50,
                "iterations": 100, "method": f"mamf-style matmul ({SIMULATED_BY})"}
        load_time = float(options.get("load_time", 10.0))
        if load_time > 0:
            entry["sustained"] = {"seconds": load_time, "tflops": bf16 * 0.99,
                                  "matmuls": int(load_time * bf16 * 1e12 / (2 * m * n * k))}
        if options.get("sdc"):
            entry["sdc"] = _sdc(model.nvml_names[0], fault)
        reasons = gpu["reasons_under_load"]
        entry["load"] = {
            "nvml_index": index, "samples": int(load_time * 10) + 40,
            "load_samples": int(load_time * 10) + 10, "reasons_mask": reasons,
            "throttle": throttle_names(reasons),
            "temperature_max_c": gpu["temperature_load"],
            "power_max_w": watts(gpu["power_load_mw"]),
            "sm_clock_min_mhz": gpu["sm_clock_load_mhz"],
            "pcie_gen_max": gpu["pcie_gen_load"], "pcie_width_max": gpu["pcie_width"]}
        gpus.append(entry)
    data: GpuPerfData = {"torch": "2.4.0", "cuda": "12.4", "nccl": "2.21.5",
                            "count": len(gpus),
                            "options": options, "gpus": gpus, "simulated": True}
    if len(gpus) > 1 and "p2p" not in skip:
        data["p2p"] = {"pairs": _p2p(sim, node, described["gpus"]),
                       "method": f"GPU-to-GPU copy per ordered pair ({SIMULATED_BY})"}
    return data


def _sdc(name: str, fault: SimFault) -> Sdc:
    """The SDC check's answer: every healthy GPU of a model gives the same checksum; one
    with the `sdc` fault gives another, and not the same one every time."""
    good = int(hashlib.sha256(f"sdc {name}".encode()).hexdigest()[:15], 16)
    checksums = [good] * 8
    if fault.sdc:
        checksums = [good ^ (1 << 17)] * 7 + [good ^ (1 << 40)]
    return {"checksum": checksums[0], "checksums": checksums, "repeats": len(checksums),
            "consistent": len(set(checksums)) == 1, "shape": [4096] * 3,
            "method": f"bf16 matmul of fixed-seed inputs, 8 times ({SIMULATED_BY})"}


def gpu_link_rate(sim: SimSpec, node: str, index: int, gpu: SimGpu) -> float:
    """GPU `index`'s link to its peers (bytes/s): its model's p2p rate, less the NVLink
    links down, times its bandwidth fault. `gpu` is its entry of describe_node. A GPU
    whose NVLink links are all down reaches its peers through PCIe, as NCCL and CUDA's
    peer copies fall back to (its PCIe rate: the model's host copy rate at the link's
    gen and width)."""
    fault = merged(sim, node, index)
    model = gpu_model(sim, fault)
    if gpu["nvlinks"] and gpu["nvlinks_down"] >= gpu["nvlinks"]:
        rate = model.h2d_gb_s * 1e9 * _pcie_factor(gpu)
    else:
        up = (gpu["nvlinks"] - gpu["nvlinks_down"]) / gpu["nvlinks"] if gpu["nvlinks"] \
            else 1.0
        rate = model.p2p_gb_s * 1e9 * up
    return float(rate * floored(fault.bandwidth_factor))


def _p2p(sim: SimSpec, node: str, gpus: list[SimGpu]) -> list[P2pPair]:
    def link(index: int) -> float:
        return gpu_link_rate(sim, node, index, gpus[index])

    pairs: list[P2pPair] = []
    for src in range(len(gpus)):
        for dst in range(len(gpus)):
            if src != dst:
                rate = min(link(src), link(dst)) * jitter(node, src, dst, "p2p")
                pairs.append({"src": src, "dst": dst, "peer_access": True, "bytes_per_s": rate})
    return pairs
