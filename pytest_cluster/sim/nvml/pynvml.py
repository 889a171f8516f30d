"""A simulated `pynvml` (nvidia-ml-py): the same calls, answered from a description.

The sim launcher puts this directory first on PYTHONPATH and the node's description in
PYTEST_CLUSTER_SIM_NODE (JSON), then runs the real GPU probe, which imports this module
instead of the real binding. Only what the probe calls is here; names, constants and error
classes match nvidia-ml-py.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypedDict

    from pytest_cluster.sim.cluster import SimGpu, SimNode

    class _State(TypedDict, total=False):
        node: SimNode  # from nvmlInit to nvmlShutdown
        load: bool  # the torch probe's load is on

SIMULATED = True

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_LIBRARY_NOT_FOUND = 12

NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_TEMPERATURE_GPU = 0
NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1
NVML_NVLINK_MAX_LINKS = 36  # nvidia-ml-py 13; an H100 answers Not Supported from link 18
NVML_CLOCK_SM = 1
nvmlMemory_v2 = 0x02000028
nvmlEventTypeXidCriticalError = 0x0000000000000008

nvmlClocksEventReasonGpuIdle = 0x1
nvmlClocksEventReasonHwSlowdown = 0x8
nvmlClocksEventReasonSwThermalSlowdown = 0x20
nvmlClocksEventReasonHwThermalSlowdown = 0x40
nvmlClocksEventReasonHwPowerBrakeSlowdown = 0x80


class NVMLError(Exception):
    value = 999

    def __init__(self, value: int | None = None) -> None:
        if value is not None:
            self.value = value
        super().__init__(self.value)

    def __str__(self) -> str:
        return {1: "Uninitialized", 2: "Invalid Argument", 3: "Not Supported", 10: "Timeout",
                12: "NVML Shared Library Not Found"}.get(self.value, "Unknown Error")


class NVMLError_Uninitialized(NVMLError):
    value = NVML_ERROR_UNINITIALIZED


class NVMLError_InvalidArgument(NVMLError):
    value = NVML_ERROR_INVALID_ARGUMENT


class NVMLError_NotSupported(NVMLError):
    value = NVML_ERROR_NOT_SUPPORTED


class NVMLError_Timeout(NVMLError):
    value = NVML_ERROR_TIMEOUT


class NVMLError_LibraryNotFound(NVMLError):
    value = NVML_ERROR_LIBRARY_NOT_FOUND


# The binding's structures are ctypes Structures: fields by name, not tuples. Plain
# classes here: typing (NamedTuple) would cost each simulated node's probe 5 ms at start.


class c_nvmlMemory_v2_t:
    __slots__ = ("free", "reserved", "total", "used", "version")

    def __init__(self, version: int, total: int, reserved: int, free: int,
                 used: int) -> None:
        self.version, self.total, self.reserved = version, total, reserved
        self.free, self.used = free, used


class c_nvmlProcessInfo_t:
    __slots__ = ("pid", "usedGpuMemory")

    def __init__(self, pid: int, usedGpuMemory: int) -> None:
        self.pid, self.usedGpuMemory = pid, usedGpuMemory


class c_nvmlEventData_t:
    __slots__ = ("device", "eventData", "eventType")

    def __init__(self, device: _Handle, eventType: int, eventData: int) -> None:
        self.device, self.eventType, self.eventData = device, eventType, eventData


class c_nvmlPciInfo_t:
    __slots__ = ("busId", "busIdLegacy")

    def __init__(self, busId: str, busIdLegacy: str) -> None:
        self.busId, self.busIdLegacy = busId, busIdLegacy


class _Handle:
    """Like the real binding's handle (a ctypes pointer): unhashable, and two handles of
    the same GPU compare equal only if they are the same object."""

    def __hash__(self) -> int:
        raise TypeError(f"unhashable type: '{type(self).__name__}'")

    def __init__(self, index: int) -> None:
        self.index = index


_STATE: _State = {}


def _node() -> SimNode:
    if "node" not in _STATE:
        raise NVMLError_Uninitialized()
    return _STATE["node"]


def _gpu(handle: _Handle) -> SimGpu:
    gpus = _node()["gpus"]
    if not isinstance(handle, _Handle) or not 0 <= handle.index < len(gpus):
        raise NVMLError_InvalidArgument()
    return gpus[handle.index]


def nvmlInit() -> None:
    text = os.environ.get("PYTEST_CLUSTER_SIM_NODE")
    if not text:
        raise NVMLError_LibraryNotFound()
    _STATE["node"] = json.loads(text)


def nvmlShutdown() -> None:
    _STATE.pop("node", None)


def nvmlSystemGetDriverVersion() -> str:
    return str(_node()["driver"])


def nvmlSystemGetCudaDriverVersion() -> int:
    return int(_node()["cuda_driver"])


def nvmlDeviceGetCount() -> int:
    return len(_node()["gpus"])


def nvmlDeviceGetHandleByIndex(index: int) -> _Handle:
    handle = _Handle(index)
    _gpu(handle)
    return handle


def nvmlDeviceGetIndex(handle: _Handle) -> int:
    _gpu(handle)
    return handle.index


def nvmlDeviceGetName(handle: _Handle) -> str:
    return str(_gpu(handle)["name"])


def nvmlDeviceGetUUID(handle: _Handle) -> str:
    return str(_gpu(handle)["uuid"])


def nvmlDeviceGetSerial(handle: _Handle) -> str:
    return str(_gpu(handle)["serial"])


def nvmlDeviceGetBoardPartNumber(handle: _Handle) -> str:
    return str(_gpu(handle)["board_part"])


def nvmlDeviceGetVbiosVersion(handle: _Handle) -> str:
    return str(_gpu(handle)["vbios"])


def nvmlDeviceGetInforomImageVersion(handle: _Handle) -> str:
    return str(_gpu(handle)["inforom"])


def nvmlDeviceGetMemoryInfo(handle: _Handle, version: int | None = None) -> Any:
    gpu = _gpu(handle)
    total, reserved, used = gpu["memory_total"], gpu["memory_reserved"], gpu["memory_used"]
    return c_nvmlMemory_v2_t(version or 1, total, reserved, total - reserved - used, used)


def nvmlDeviceGetEccMode(handle: _Handle) -> tuple[int, int]:
    _gpu(handle)
    return NVML_FEATURE_ENABLED, NVML_FEATURE_ENABLED


def nvmlDeviceGetTotalEccErrors(handle: _Handle, error_type: int,
                                counter_type: int) -> int:
    ecc = _gpu(handle)["ecc"]
    return int(ecc["uncorrected"] if error_type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED
               else ecc["corrected"])


def nvmlDeviceGetRemappedRows(handle: _Handle) -> tuple[int, int, int, int]:
    gpu = _gpu(handle)
    return 0, 0, int(gpu["remap_pending"]), int(gpu["remap_failure"])


def nvmlDeviceGetCurrPcieLinkGeneration(handle: _Handle) -> int:
    gpu = _gpu(handle)
    return int(gpu["pcie_gen_load"] if _STATE.get("load") else gpu["pcie_gen"])


def nvmlDeviceGetMaxPcieLinkGeneration(handle: _Handle) -> int:
    return int(_gpu(handle)["pcie_max_gen"])


def nvmlDeviceGetCurrPcieLinkWidth(handle: _Handle) -> int:
    return int(_gpu(handle)["pcie_width"])


def nvmlDeviceGetMaxPcieLinkWidth(handle: _Handle) -> int:
    return int(_gpu(handle)["pcie_max_width"])


def nvmlDeviceGetPcieReplayCounter(handle: _Handle) -> int:
    _gpu(handle)
    return 0


def nvmlDeviceGetNvLinkState(handle: _Handle, link: int) -> int:
    gpu = _gpu(handle)
    if not 0 <= link < NVML_NVLINK_MAX_LINKS:
        raise NVMLError_InvalidArgument()
    if link >= gpu["nvlinks"]:
        raise NVMLError_NotSupported()
    up = link < gpu["nvlinks"] - gpu["nvlinks_down"]
    return NVML_FEATURE_ENABLED if up else NVML_FEATURE_DISABLED


def nvmlDeviceGetNvLinkErrorCounter(handle: _Handle, link: int,
                                    counter: int) -> int:
    nvmlDeviceGetNvLinkState(handle, link)
    return 0


def nvmlDeviceGetPciInfo(handle: _Handle) -> c_nvmlPciInfo_t:
    bus_id = str(_gpu(handle)["pci_bus_id"])
    return c_nvmlPciInfo_t(bus_id, bus_id[4:])


def nvmlDeviceGetClockInfo(handle: _Handle, clock: int) -> int:
    gpu = _gpu(handle)
    if clock != NVML_CLOCK_SM:
        raise NVMLError_NotSupported()
    return int(gpu["sm_clock_load_mhz"] if _STATE.get("load") else gpu["sm_clock_idle_mhz"])


def nvmlDeviceGetMaxClockInfo(handle: _Handle, clock: int) -> int:
    gpu = _gpu(handle)
    if clock != NVML_CLOCK_SM:
        raise NVMLError_NotSupported()
    return int(gpu["sm_clock_max_mhz"])


def nvmlDeviceGetPowerManagementDefaultLimit(handle: _Handle) -> int:
    return int(_gpu(handle)["power_default_limit_mw"])


def nvmlDeviceGetCurrentClocksEventReasons(handle: _Handle) -> int:
    gpu = _gpu(handle)
    return int(gpu["reasons_under_load"] if _STATE.get("load") else gpu["reasons_idle"])


nvmlDeviceGetCurrentClocksThrottleReasons = nvmlDeviceGetCurrentClocksEventReasons


def nvmlDeviceGetRetiredPages(handle: _Handle, cause: int) -> list[int]:
    """Pre-Ampere page retirement; Hopper remaps rows instead."""
    _gpu(handle)
    raise NVMLError_NotSupported()


def nvmlDeviceGetRetiredPagesPendingStatus(handle: _Handle) -> int:
    _gpu(handle)
    raise NVMLError_NotSupported()


def nvmlDeviceGetTemperature(handle: _Handle, sensor: int) -> int:
    gpu = _gpu(handle)
    return int(gpu["temperature_load"] if _STATE.get("load") else gpu["temperature_idle"])


def nvmlDeviceGetPowerUsage(handle: _Handle) -> int:
    gpu = _gpu(handle)
    return int(gpu["power_load_mw"] if _STATE.get("load") else gpu["power_idle_mw"])


def nvmlDeviceGetEnforcedPowerLimit(handle: _Handle) -> int:
    return int(_gpu(handle)["power_limit_mw"])


def nvmlDeviceGetComputeRunningProcesses(handle: _Handle) -> list[Any]:
    return [c_nvmlProcessInfo_t(p["pid"], p["used"]) for p in _gpu(handle)["processes"]]


def nvmlEventSetCreate() -> list[Any]:
    _node()
    return []


def nvmlDeviceRegisterEvents(handle: _Handle, types: int, event_set: list[Any]) -> None:
    gpu = _gpu(handle)
    if types & nvmlEventTypeXidCriticalError:
        event_set.extend(c_nvmlEventData_t(handle, nvmlEventTypeXidCriticalError, xid)
                         for xid in gpu["xids"])


def nvmlEventSetWait(event_set: list[Any], timeout_ms: int) -> Any:
    if event_set:
        return event_set.pop(0)
    raise NVMLError_Timeout()


def nvmlEventSetFree(event_set: list[Any]) -> None:
    event_set.clear()


def simulate_load(on: bool) -> None:
    """The sim's stand-in for a running matmul: clocks and temperature as under load."""
    _STATE["load"] = on
