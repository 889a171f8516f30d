"""GPU models a contract can name, and the NVML names that identify them.

Reference numbers are public datasheet peaks (dense, no sparsity) and what healthy
hardware measures (see shared/GUIDE.md); the simulated cluster uses the latter.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30


@dataclass(frozen=True)
class GpuModel:
    key: str                      # friendly name used in specs, e.g. H100-SXM-80GB
    nvml_names: tuple[str, ...]   # what nvmlDeviceGetName returns
    form_factor: str              # SXM5, SXM4, PCIe
    memory_bytes: int             # what NVML reports as total on healthy hardware
    nvlinks: int                  # NVLink links per GPU (0: none)
    pcie_gen: int
    pcie_width: int
    power_limit_w: float
    # What healthy hardware achieves (used by the simulator, never as a measurement):
    bf16_tflops: float
    copy_tb_s: float              # device-to-device copy, read + write counted
    h2d_gb_s: float
    p2p_gb_s: float


MODELS: dict[str, GpuModel] = {m.key: m for m in (
    GpuModel("H100-SXM-80GB", ("NVIDIA H100 80GB HBM3",), "SXM5", 81559 * 2**20, 18, 5, 16,
             700.0, 798.0, 3.0, 55.0, 370.0),
    GpuModel("H100-PCIe-80GB", ("NVIDIA H100 PCIe",), "PCIe", 81559 * 2**20, 0, 5, 16,
             350.0, 600.0, 1.8, 55.0, 50.0),
    GpuModel("H100-NVL-94GB", ("NVIDIA H100 NVL",), "PCIe", 95830 * 2**20, 0, 5, 16,
             400.0, 680.0, 3.3, 55.0, 50.0),
    GpuModel("H200-SXM-141GB", ("NVIDIA H200",), "SXM5", 143771 * 2**20, 18, 5, 16,
             700.0, 800.0, 4.3, 55.0, 370.0),
    GpuModel("B200-SXM-180GB", ("NVIDIA B200",), "SXM6", 183359 * 2**20, 18, 5, 16,
             1000.0, 1745.0, 6.6, 55.0, 740.0),
    GpuModel("A100-SXM4-80GB", ("NVIDIA A100-SXM4-80GB",), "SXM4", 81920 * 2**20, 12, 4, 16,
             400.0, 280.0, 1.7, 25.0, 230.0),
    GpuModel("A100-SXM4-40GB", ("NVIDIA A100-SXM4-40GB",), "SXM4", 40960 * 2**20, 12, 4, 16,
             400.0, 280.0, 1.3, 25.0, 230.0),
    GpuModel("A100-PCIe-80GB", ("NVIDIA A100 80GB PCIe",), "PCIe", 81920 * 2**20, 0, 4, 16,
             300.0, 250.0, 1.6, 25.0, 20.0),
)}


#: Datasheet dense peaks (no sparsity) in TFLOPS per dtype, from NVIDIA's datasheets
#: (H100 SXM/PCIe/NVL, H200, B200, A100): no contract can promise a matmul above them.
#: A dtype a model lacks (fp8 before Hopper) is left out.
PEAK_TFLOPS: dict[str, dict[str, float]] = {
    "H100-SXM-80GB": {"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "fp8": 1979},
    "H100-PCIe-80GB": {"fp32": 51, "tf32": 378, "bf16": 756, "fp16": 756, "fp8": 1513},
    "H100-NVL-94GB": {"fp32": 60, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5, "fp8": 1670.5},
    "H200-SXM-141GB": {"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "fp8": 1979},
    "B200-SXM-180GB": {"fp32": 80, "tf32": 1100, "bf16": 2250, "fp16": 2250, "fp8": 4500},
    **{key: {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312}
       for key in ("A100-SXM4-80GB", "A100-SXM4-40GB", "A100-PCIe-80GB")},
}


def model_named(name: str) -> GpuModel | None:
    """A model by friendly name (any case) or by its exact NVML name."""
    for model in MODELS.values():
        if name.lower() == model.key.lower() or name in model.nvml_names:
            return model
    return None


def model_of_nvml_name(nvml_name: str) -> GpuModel | None:
    for model in MODELS.values():
        if nvml_name in model.nvml_names:
            return model
    return None
