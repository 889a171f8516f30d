"""Published figures beside each measured one: "is my number normal?".

A reference informs; only the contract's clauses decide pass or fail. Each figure says
what it is (measured by whom, or a datasheet peak), for which model, and where it was
published. Values are in base units (FLOPS, bytes/s), as measurements are recorded.

GPU figures are found by the GPU's NVML name (gpu_models); collective figures by the GPU
model the spec names (NVLink) or the NIC rate it names (InfiniBand NDR 400 Gb/s, XDR 800
Gb/s, per NIC times the NICs of a node). Only all_reduce over NCCL has references.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_cluster.contract.sections.gpu_models import model_of_nvml_name
from pytest_cluster.contract.sections.storage import shared_over
from pytest_cluster.units import format_number

# Sources, as each case records them (short: they repeat on every case).
# mamf-finder: stas00/ml-engineering, "maximum achievable matmul FLOPS" table.
MAMF = "https://github.com/stas00/ml-engineering/tree/master/compute/accelerator (mamf-finder)"
# Azure NHC, ND H100 v5: H2D/D2H expected 52 GB/s (fails below 48), P2P >= 335.
NHC = "https://github.com/Azure/azurehpc-health-checks (ND H100 v5 thresholds)"
# The NCCL maintainer: ring ~370 GB/s busbw, NVLink SHARP ~480 on 8 x H100.
NCCL_H100 = "https://github.com/NVIDIA/nccl-tests/issues/212 (NCCL maintainer)"
# all_reduce_perf on 8 x H200 peaks at 475 GB/s busbw (NVLS).
NCCL_H200 = "https://github.com/NVIDIA/nccl-tests/issues/272 (8 x H200)"
H100_SHEET = ("https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
              " (datasheet)")
H200_SHEET = "https://www.nvidia.com/en-us/data-center/h200/ (datasheet)"
B200_SHEET = "https://www.nvidia.com/en-us/data-center/dgx-b200/ (datasheet)"
# NVLS 838-846, ring 682 GB/s busbw on 8 x B200, as users report them.
NCCL_B200 = "https://github.com/NVIDIA/nccl-tests/issues (8 x B200 user reports)"
# 46-48 GB/s busbw per NDR 400 Gb/s NIC (50 GB/s on the wire) in a NCCL ring.
NDR = "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md (NDR, ring)"
XDR = ("derived: no published nccl-tests figure for XDR 800 Gb/s; NDR's 94 % of the wire "
       "applied to 100 GB/s")
# CoreWeave AI Object Storage (LOTA) reads on H100 nodes: 2+ GB/s per GPU, at any count.
COREWEAVE = ("https://www.coreweave.com/blog (Benchmark Results: CoreWeave AI Object Storage "
             "Delivers 2+ GB/s per GPU Throughput Across any Number of GPUs)")
COREWEAVE_B300 = "CoreWeave AI Object Storage on B300 over RDMA (CoreWeave's announcement)"
# FSx for Lustre Persistent_2 SSD: 125, 250, 500 or 1,000 MB/s per TiB of storage.
FSX = ("https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-throughput-capacity.html "
       "(Persistent_2 SSD)")


@dataclass(frozen=True)
class Reference:
    figure: str  # which measurement it is a reference for, e.g. "matmul.bf16"
    value: float  # base units: FLOPS, bytes/s
    unit: str  # the unit it is shown in: TFLOPS, TB/s, GB/s
    what: str  # "measured by mamf-finder on H100 SXM", "datasheet peak of H200"
    source: str

    @property
    def shown(self) -> str:
        return f"{self.value / _SCALE[self.unit]:g}"

    def ratio(self, measured: float) -> float:
        return measured / self.value

    def text(self, measured: float) -> str:
        """'78 % of the 794.5 TFLOPS measured by mamf-finder on H100 SXM'."""
        return f"{self.ratio(measured) * 100:.0f} % of the {self.shown} {self.unit} {self.what}"


_SCALE = {"TFLOPS": 1e12, "TB/s": 1e12, "GB/s": 1e9}


def _t(figure: str, tflops: float, what: str, source: str) -> Reference:
    return Reference(figure, tflops * 1e12, "TFLOPS", what, source)


def _b(figure: str, value: float, unit: str, what: str, source: str) -> Reference:
    return Reference(figure, value * _SCALE[unit], unit, what, source)


#: By model key (gpu_models.MODELS), then figure.
GPU_FIGURES: dict[str, tuple[Reference, ...]] = {
    "H100-SXM-80GB": (
        _t("matmul.bf16", 794.5, "measured by mamf-finder on H100 SXM", MAMF),
        _t("matmul.fp8", 1402.6, "measured by mamf-finder on H100 SXM", MAMF),
        _b("memory_bandwidth", 3.35, "TB/s", "HBM3 peak of H100 SXM (datasheet)",
           H100_SHEET),
        _b("h2d", 52, "GB/s", "Azure NHC expects on H100 SXM (PCIe Gen5 x16)", NHC),
        _b("d2h", 52, "GB/s", "Azure NHC expects on H100 SXM (PCIe Gen5 x16)", NHC),
        _b("p2p", 335, "GB/s", "Azure NHC's floor on H100 SXM (NVLink4)", NHC),
        _b("all_reduce.nvls", 480, "GB/s", "busbw with NVLink SHARP on 8 x H100 SXM "
           "(nccl-tests)", NCCL_H100),
        _b("all_reduce.ring", 370, "GB/s", "ring busbw on 8 x H100 SXM (nccl-tests)",
           NCCL_H100),
    ),
    "H100-PCIe-80GB": (
        _t("matmul.bf16", 756, "datasheet dense peak of H100 PCIe (no published "
           "mamf-finder figure)", H100_SHEET),
        _t("matmul.fp8", 1513, "datasheet dense peak of H100 PCIe", H100_SHEET),
        _b("memory_bandwidth", 2.0, "TB/s", "HBM2e peak of H100 PCIe (datasheet)",
           H100_SHEET),
        _b("h2d", 52, "GB/s", "Azure NHC expects over PCIe Gen5 x16 (H100)", NHC),
        _b("d2h", 52, "GB/s", "Azure NHC expects over PCIe Gen5 x16 (H100)", NHC),
    ),
    "H200-SXM-141GB": (
        _t("matmul.bf16", 989, "datasheet dense peak of H200 (no published mamf-finder "
           "figure)", H200_SHEET),
        _t("matmul.fp8", 1979, "datasheet dense peak of H200", H200_SHEET),
        _b("memory_bandwidth", 4.8, "TB/s", "HBM3e peak of H200 (datasheet)", H200_SHEET),
        _b("h2d", 52, "GB/s", "Azure NHC expects over PCIe Gen5 x16 (H100's host link, "
           "which H200 shares)", NHC),
        _b("d2h", 52, "GB/s", "Azure NHC expects over PCIe Gen5 x16 (H100's host link, "
           "which H200 shares)", NHC),
        _b("all_reduce.nvls", 475, "GB/s", "busbw with NVLink SHARP on 8 x H200 "
           "(nccl-tests)", NCCL_H200),
        _b("all_reduce.ring", 367, "GB/s", "ring busbw on 8 x H200 (nccl-tests)",
           NCCL_H200),
    ),
    "B200-SXM-180GB": (
        _t("matmul.bf16", 1745, "measured by mamf-finder on B200", MAMF),
        _t("matmul.fp8", 3432.5, "measured by mamf-finder on B200", MAMF),
        _b("memory_bandwidth", 8.0, "TB/s", "HBM3e peak of B200 (datasheet)", B200_SHEET),
        _b("all_reduce.nvls", 842, "GB/s", "busbw with NVLink SHARP on 8 x B200 "
           "(nccl-tests)", NCCL_B200),
        _b("all_reduce.ring", 682, "GB/s", "ring busbw on 8 x B200 (nccl-tests)",
           NCCL_B200),
    ),
}

#: Per NIC, by its rate in Gb/s: the busbw one NIC carries in a NCCL ring all_reduce.
NIC_FIGURES: dict[int, tuple[str, float, str]] = {
    400: ("NDR", 47e9, NDR),
    800: ("XDR", 94e9, XDR),
}


def for_gpu(clause_key: str, nvml_name: str | None) -> tuple[Reference, ...]:
    """The references of a per-GPU clause ('gpus.matmul.bf16') for a GPU by NVML name."""
    model = model_of_nvml_name(nvml_name) if nvml_name else None
    if model is None:
        return ()
    figure = clause_key.removeprefix("gpus.")
    return tuple(r for r in GPU_FIGURES.get(model.key, ()) if r.figure == figure)


def for_busbw(scope: str, collective: str, backend: str, gpu_model: str | None,
              nic_rate_bits: float | None, nics: int) -> tuple[Reference, ...]:
    """References of an all_reduce busbw over NCCL: inside a node, by GPU model (NVLS,
    then ring); between nodes, by NIC rate times the node's NICs."""
    if collective != "all_reduce" or backend != "nccl":
        return ()
    if scope == "intra_node":
        return tuple(r for r in GPU_FIGURES.get(gpu_model or "", ())
                     if r.figure.startswith("all_reduce."))
    if nic_rate_bits is None:
        return ()
    found = NIC_FIGURES.get(round(nic_rate_bits / 1e9))
    if found is None:
        return ()
    name, per_nic, source = found
    return (Reference("all_reduce.network", per_nic * nics, "GB/s",
                      f"ring busbw of {nics} x {name} NIC(s) ({per_nic / 1e9:g} GB/s each)",
                      source),)


def for_checkpoint(phase: str, per: str, nodes: int, gpus_per_node: int,
                   gpu_model: str | None, capacity_bytes: float | None) -> tuple[
                       Reference, ...]:
    """Published figures for a checkpoint burst's aggregate `phase` (write, read), in the
    basis its bound counts (`per`: '' the cluster's, 'node', 'gpu'): an object store's
    read per GPU (CoreWeave: 2 GB/s on H100, 7 on B300), and FSx for Lustre's lowest and
    highest tiers for the filesystem's size (125 and 1,000 MB/s per TiB)."""
    gpus = nodes * gpus_per_node
    shared = shared_over(per, nodes, gpus_per_node)
    share, where = shared.count, shared.per or "for the cluster"
    found = []
    if phase == "read" and gpus_per_node > 1:
        per_gpu = 7.0 if (gpu_model or "").startswith("B300") else 2.0
        source = COREWEAVE_B300 if per_gpu == 7.0 else COREWEAVE
        board = "B300" if per_gpu == 7.0 else "H100"
        found.append(Reference(
            f"checkpoint.{phase}", per_gpu * 1e9 * gpus / share, "GB/s",
            f"per GPU CoreWeave AI Object Storage reads on {board}" if per == "gpu" else
            f"{where} at CoreWeave AI Object Storage's {per_gpu:g} GB/s per GPU ({board})",
            source))
    if capacity_bytes:
        tib = capacity_bytes / 2**40
        for tier in (125, 1000):
            found.append(Reference(f"checkpoint.{phase}", tier * 1e6 * tib / share, "GB/s",
                                   f"{where} at FSx for Lustre's {tier} MB/s per TiB of "
                                   f"its {format_number(tib)} TiB", FSX))
    return tuple(found)


def properties(references: Sequence[Reference], measured: float) -> dict[str, object]:
    """What a case records of its references (JUnit properties, results.jsonl)."""
    if not references:
        return {}
    first = references[0]
    return {"reference": "; ".join(r.text(measured) for r in references),
            "reference_ratio": round(first.ratio(measured), 4),
            "reference_source": " | ".join(dict.fromkeys(r.source for r in references))}
