"""NVML sampled in the parent while the GPUs' processes run."""

from __future__ import annotations

import contextlib
import importlib
from typing import Any

from .._lib.nvml import THROTTLE_BITS, text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import Load


class Sampler:
    """NVML in the parent: clocks event reasons, temperature, power, SM clock and PCIe
    link, sampled every `period_s` while the children run; 'load' samples only while
    at least one child is running matmuls."""

    def __init__(self) -> None:
        self.nvml: Any = None
        self.handles: dict[str, Any] = {}
        self.data: dict[str, Load] = {}
        self.error = ""
        try:
            self.nvml = importlib.import_module("pynvml")
            self.nvml.nvmlInit()
            for i in range(self.nvml.nvmlDeviceGetCount()):
                handle = self.nvml.nvmlDeviceGetHandleByIndex(i)
                uuid = text(self.nvml.nvmlDeviceGetUUID(handle))
                self.handles[uuid] = handle
                self.data[uuid] = {"nvml_index": i, "samples": 0, "load_samples": 0,
                                   "reasons_mask": 0, "throttle": [],
                                   "temperature_max_c": None, "power_max_w": None,
                                   "sm_clock_min_mhz": None, "pcie_gen_max": None,
                                   "pcie_width_max": None}
        except Exception as exc:
            self.error = f"NVML sampling unavailable: {type(exc).__name__}: {exc}"
            self.nvml = None

    def sample(self, under_load: bool) -> None:
        if self.nvml is None:
            return
        nvml = self.nvml
        for uuid, handle in self.handles.items():
            entry = self.data[uuid]
            entry["samples"] += 1
            with contextlib.suppress(nvml.NVMLError):
                entry["pcie_gen_max"] = bigger(
                    entry["pcie_gen_max"], nvml.nvmlDeviceGetCurrPcieLinkGeneration(handle))
                entry["pcie_width_max"] = bigger(
                    entry["pcie_width_max"], nvml.nvmlDeviceGetCurrPcieLinkWidth(handle))
            if not under_load:
                continue
            entry["load_samples"] += 1
            with contextlib.suppress(nvml.NVMLError):
                entry["reasons_mask"] |= int(clocks_reasons(nvml, handle))
            with contextlib.suppress(nvml.NVMLError):
                entry["temperature_max_c"] = bigger(
                    entry["temperature_max_c"],
                    nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
            with contextlib.suppress(nvml.NVMLError):
                entry["power_max_w"] = bigger(entry["power_max_w"],
                                              nvml.nvmlDeviceGetPowerUsage(handle) / 1000)
            with contextlib.suppress(nvml.NVMLError):
                clock = nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)
                low = entry["sm_clock_min_mhz"]
                entry["sm_clock_min_mhz"] = clock if low is None else min(low, clock)

    def results(self) -> dict[str, Load]:
        for entry in self.data.values():
            entry["throttle"] = [name for name, bit in THROTTLE_BITS.items()
                                 if entry["reasons_mask"] & bit]
        if self.nvml is not None:
            with contextlib.suppress(Exception):
                self.nvml.nvmlShutdown()
        return self.data


def bigger(old: Any, new: Any) -> Any:
    return new if old is None else max(old, new)


def clocks_reasons(nvml: Any, handle: Any) -> Any:
    fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    if fn is None:  # nvidia-ml-py before 12.535
        fn = nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    return fn(handle)


def bare_uuid(uuid: str) -> str:
    """NVML says 'GPU-1a2b...', torch says '1a2b...'."""
    return uuid.removeprefix("GPU-").lower()
