"""GPU inventory and health probe through NVML (nvidia-ml-py, `import pynvml`).

Runs ON a node; needs only the standard library and nvidia-ml-py; shipped as a single
file. Every NVML call that fails is reported as an error for that field, never guessed.
"""

from __future__ import annotations

import getopt
import json
import re
import sys
import time

from ._lib.nvml import THROTTLE_BITS as THROTTLE_BITS  # noqa: PLC0414 - the sim reads it here
from ._lib.nvml import text

TYPE_CHECKING = False
if TYPE_CHECKING:  # not imported when it runs: typing and argparse double its start-up
    from collections.abc import Callable
    from typing import Any, Literal, TypedDict, TypeGuard

    # -- the payload: what this probe prints as its `data` -------------------------------
    # A field NVML could not read is {"error": reason} (call): NvmlError.

    class NvmlError(TypedDict):
        error: str

    class Memory(TypedDict):
        total: int
        free: int
        used: int
        reserved: int | None

    class EccCounts(TypedDict):
        corrected: int | NvmlError
        uncorrected: int | NvmlError

    class EccMode(TypedDict):
        current: int
        pending: int

    class Ecc(TypedDict, total=False):
        volatile: EccCounts
        aggregate: EccCounts
        mode: EccMode | NvmlError

    class RetiredPages(TypedDict, total=False):
        multiple_single_bit: int | NvmlError
        double_bit: int | NvmlError
        pending: int | NvmlError

    class RowRemap(TypedDict, total=False):
        """Remapped rows; on a GPU without them (pre-Ampere) an error and its retired
        pages."""

        corrected_rows: int
        uncorrected_rows: int
        pending: bool
        failure: bool
        error: str
        retired_pages: RetiredPages

    class Pcie(TypedDict):
        gen: int | NvmlError
        max_gen: int | NvmlError
        width: int | NvmlError
        max_width: int | NvmlError
        replays: int | NvmlError

    class NvLinks(TypedDict):
        links: list[bool]  # each link: up
        total: int
        up: int
        errors: dict[str, int]  # by NVLINK_COUNTERS, summed over the links

    class Process(TypedDict):
        pid: int
        used_bytes: int | None

    class Gpu(TypedDict):
        index: int
        name: str
        uuid: str
        serial: str
        board_part: str
        vbios: str
        inforom: str | NvmlError  # the infoROM image version, flashed like the VBIOS
        pci_bus_id: str | NvmlError
        memory: Memory | NvmlError
        ecc: Ecc
        row_remap: RowRemap
        pcie: Pcie
        nvlink: NvLinks
        clocks_event_reasons: int | NvmlError
        throttle_idle: list[str] | NvmlError
        temperature_c: int | NvmlError
        power_w: float | NvmlError
        power_limit_w: float | NvmlError
        power_default_limit_w: float | NvmlError
        sm_clock_mhz: int | NvmlError
        sm_clock_max_mhz: int | NvmlError
        processes: list[Process] | NvmlError

    class XidEvent(TypedDict):
        gpu: int | None  # None: NVML could not say which GPU
        xid: int

    class KernelXid(TypedDict):
        pci: str
        xid: int

    class KernelLog(TypedDict, total=False):
        events: list[KernelXid]
        source: str
        error: str

    class Xids(TypedDict, total=False):
        events: list[XidEvent]
        window_s: float
        source: str
        error: str
        kernel_log: KernelLog

    class GpuData(TypedDict, total=False):
        """The probe's payload."""

        error: str
        nvml_module: str | None
        simulated_nvml: bool
        driver: str
        cuda_driver: str | NvmlError
        count: int
        gpus: list[Gpu]
        xid: Xids

def call(nvml: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """fn(*args) or {"error": reason} for an NVML error (e.g. Not Supported)."""
    try:
        return fn(*args, **kwargs)
    except nvml.NVMLError as exc:
        return {"error": f"{fn.__name__}: {exc}"}


def failed(value: Any) -> TypeGuard[NvmlError]:
    """Whether a value `call` returned is its {"error": reason}."""
    return isinstance(value, dict)


def watts(milliwatts: Any) -> Any:
    return milliwatts / 1000 if isinstance(milliwatts, (int, float)) else milliwatts


def throttle_names(reasons: int) -> list[str]:
    return [name for name, bit in THROTTLE_BITS.items() if reasons & bit]


def clocks_reasons(nvml: Any, handle: Any) -> Any:
    fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    if fn is None:  # nvidia-ml-py before 12.535
        fn = nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    return call(nvml, fn, handle)


NVLINK_COUNTERS = {"replay": 0, "recovery": 1, "crc_flit": 2, "crc_data": 3}


def nvlinks(nvml: Any, handle: Any) -> NvLinks:
    links: list[bool] = []
    errors: dict[str, int] = dict.fromkeys(NVLINK_COUNTERS, 0)
    for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            state = nvml.nvmlDeviceGetNvLinkState(handle, link)
        except nvml.NVMLError:
            break  # Not Supported ends the list of links this GPU has
        links.append(state == nvml.NVML_FEATURE_ENABLED)
        for name, counter in NVLINK_COUNTERS.items():
            value = call(nvml, nvml.nvmlDeviceGetNvLinkErrorCounter, handle, link, counter)
            if isinstance(value, int):
                errors[name] += value
    return {"links": links, "total": len(links), "up": sum(links), "errors": errors}


def retired_pages(nvml: Any, handle: Any) -> RetiredPages:
    """Pre-Ampere GPUs retire pages instead of remapping rows."""
    found: RetiredPages = {}
    causes: tuple[tuple[int, Literal["multiple_single_bit", "double_bit"]], ...] = (
        (0, "multiple_single_bit"), (1, "double_bit"))
    for cause, name in causes:
        pages = call(nvml, nvml.nvmlDeviceGetRetiredPages, handle, cause)
        found[name] = pages if failed(pages) else len(pages)
    found["pending"] = call(nvml, nvml.nvmlDeviceGetRetiredPagesPendingStatus, handle)
    return found


def memory(nvml: Any, handle: Any) -> Memory | NvmlError:
    try:
        info = nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
        return {"total": info.total, "free": info.free, "used": info.used,
                "reserved": info.reserved}
    except (nvml.NVMLError, TypeError, AttributeError):
        info = call(nvml, nvml.nvmlDeviceGetMemoryInfo, handle)
        if failed(info):
            return info
        return {"total": info.total, "free": info.free, "used": info.used, "reserved": None}


def inforom(nvml: Any, handle: Any) -> str | NvmlError:
    """The infoROM image version ('G520.0200.00.05'): like the VBIOS version it names
    exactly what is flashed on the board (NVML's nvmlDeviceGetInforomImageVersion,
    https://docs.nvidia.com/deploy/nvml-api/: "for all products with an inforom")."""
    fn = getattr(nvml, "nvmlDeviceGetInforomImageVersion", None)
    if fn is None:
        return {"error": "nvmlDeviceGetInforomImageVersion: not in this nvidia-ml-py"}
    found = call(nvml, fn, handle)
    return found if failed(found) else text(found)


def gpu_info(nvml: Any, index: int) -> Gpu:
    h = nvml.nvmlDeviceGetHandleByIndex(index)
    ecc: Ecc = {}
    counters: tuple[tuple[int, Literal["volatile", "aggregate"]], ...] = (
        (nvml.NVML_VOLATILE_ECC, "volatile"), (nvml.NVML_AGGREGATE_ECC, "aggregate"))
    for counter, counter_name in counters:
        ecc[counter_name] = {
            "corrected": call(nvml, nvml.nvmlDeviceGetTotalEccErrors, h,
                              nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, counter),
            "uncorrected": call(nvml, nvml.nvmlDeviceGetTotalEccErrors, h,
                                nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, counter)}
    mode = call(nvml, nvml.nvmlDeviceGetEccMode, h)
    ecc["mode"] = mode if failed(mode) else {"current": mode[0], "pending": mode[1]}
    rows = call(nvml, nvml.nvmlDeviceGetRemappedRows, h)
    remap: RowRemap
    if not failed(rows):
        remap = {"corrected_rows": rows[0], "uncorrected_rows": rows[1],
                 "pending": bool(rows[2]), "failure": bool(rows[3])}
    else:
        remap = {"error": rows["error"], "retired_pages": retired_pages(nvml, h)}
    pci = call(nvml, nvml.nvmlDeviceGetPciInfo, h)
    reasons = clocks_reasons(nvml, h)
    processes = call(nvml, nvml.nvmlDeviceGetComputeRunningProcesses, h)
    if not isinstance(processes, dict):
        processes = [{"pid": p.pid, "used_bytes": p.usedGpuMemory} for p in processes]
    power = call(nvml, nvml.nvmlDeviceGetPowerUsage, h)
    limit = call(nvml, nvml.nvmlDeviceGetEnforcedPowerLimit, h)
    default_limit = call(nvml, nvml.nvmlDeviceGetPowerManagementDefaultLimit, h)
    return {
        "index": index,
        "name": text(nvml.nvmlDeviceGetName(h)),
        "uuid": text(call(nvml, nvml.nvmlDeviceGetUUID, h)),
        "serial": text(call(nvml, nvml.nvmlDeviceGetSerial, h)),
        "board_part": text(call(nvml, nvml.nvmlDeviceGetBoardPartNumber, h)),
        "vbios": text(call(nvml, nvml.nvmlDeviceGetVbiosVersion, h)),
        "inforom": inforom(nvml, h),
        "pci_bus_id": pci if failed(pci) else text(pci.busId),
        "memory": memory(nvml, h),
        "ecc": ecc,
        "row_remap": remap,
        "pcie": {"gen": call(nvml, nvml.nvmlDeviceGetCurrPcieLinkGeneration, h),
                 "max_gen": call(nvml, nvml.nvmlDeviceGetMaxPcieLinkGeneration, h),
                 "width": call(nvml, nvml.nvmlDeviceGetCurrPcieLinkWidth, h),
                 "max_width": call(nvml, nvml.nvmlDeviceGetMaxPcieLinkWidth, h),
                 "replays": call(nvml, nvml.nvmlDeviceGetPcieReplayCounter, h)},
        "nvlink": nvlinks(nvml, h),
        "clocks_event_reasons": reasons,
        "throttle_idle": throttle_names(reasons) if isinstance(reasons, int) else reasons,
        "temperature_c": call(nvml, nvml.nvmlDeviceGetTemperature, h,
                              nvml.NVML_TEMPERATURE_GPU),
        "power_w": watts(power),
        "power_limit_w": watts(limit),
        "power_default_limit_w": watts(default_limit),
        "sm_clock_mhz": call(nvml, nvml.nvmlDeviceGetClockInfo, h, nvml.NVML_CLOCK_SM),
        "sm_clock_max_mhz": call(nvml, nvml.nvmlDeviceGetMaxClockInfo, h, nvml.NVML_CLOCK_SM),
        "processes": processes,
    }


def xid_events(nvml: Any, count: int, window_s: float) -> Xids:
    """XID errors reported by NVML events during `window_s` seconds."""
    try:
        event_set = nvml.nvmlEventSetCreate()
        for index in range(count):
            nvml.nvmlDeviceRegisterEvents(nvml.nvmlDeviceGetHandleByIndex(index),
                                          nvml.nvmlEventTypeXidCriticalError, event_set)
    except nvml.NVMLError as exc:
        return {"error": f"cannot listen for XID events: {exc}"}
    events: list[XidEvent] = []
    deadline = time.monotonic() + window_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            event = nvml.nvmlEventSetWait(event_set, max(1, int(left * 1000)))
        except nvml.NVMLError_Timeout:
            break
        except nvml.NVMLError as exc:
            return {"error": f"nvmlEventSetWait: {exc}", "events": events}
        # handles are ctypes pointers: unhashable, equal only to themselves; ask NVML
        index = call(nvml, nvml.nvmlDeviceGetIndex, event.device)
        events.append({"gpu": index if isinstance(index, int) else None,
                       "xid": int(event.eventData)})
    call(nvml, getattr(nvml, "nvmlEventSetFree", lambda s: None), event_set)
    return {"events": events, "window_s": window_s, "source": "NVML XID events"}


def kernel_log_xids() -> KernelLog:
    """NVRM Xid lines from the kernel log, where this user may read it."""
    import subprocess  # noqa: PLC0415 - only when the kernel log is read (3 ms to import)
    try:
        done = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=20,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"cannot read the kernel log: {exc}"}
    if done.returncode != 0:
        return {"error": f"cannot read the kernel log: {done.stderr.strip()[:200]}"}
    found: list[KernelXid] = []
    for line in done.stdout.splitlines():
        match = re.search(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+)", line)
        if match:
            found.append({"pci": match.group(1), "xid": int(match.group(2))})
    return {"events": found, "source": "dmesg (since boot)"}


def options(argv: list[str]) -> tuple[float, bool]:
    """(--xid-window SECONDS, default 2; whether --no-kernel-log was given). GetoptError
    or ValueError for anything else."""
    found, rest = getopt.getopt(argv, "", ["xid-window=", "no-kernel-log"])
    if rest:
        raise getopt.GetoptError(f"unexpected argument {rest[0]!r}")
    chosen = dict(found)
    return float(chosen.get("--xid-window", 2.0)), "--no-kernel-log" in chosen


def main(argv: list[str] | None = None) -> int:
    try:
        xid_window, no_kernel_log = options(sys.argv[1:] if argv is None else argv)
    except (getopt.GetoptError, ValueError) as exc:
        print(f"usage: gpu.py [--xid-window SECONDS] [--no-kernel-log]: {exc}",
              file=sys.stderr)
        return 2
    data: GpuData = {}
    try:
        import pynvml  # type: ignore[import-untyped]  # noqa: PLC0415 - absent on nodes without NVIDIA drivers
    except ImportError:
        data["error"] = "nvidia-ml-py is not installed for this interpreter (pip install " \
                        "nvidia-ml-py)"
        print(json.dumps({"probe": "gpu", "schema": 1, "data": data}))
        return 0
    data["nvml_module"] = getattr(pynvml, "__file__", None)
    data["simulated_nvml"] = bool(getattr(pynvml, "SIMULATED", False))
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        data["error"] = f"NVML not available: {exc}"
        print(json.dumps({"probe": "gpu", "schema": 1, "data": data}))
        return 0
    try:
        data["driver"] = text(call(pynvml, pynvml.nvmlSystemGetDriverVersion))
        cuda = call(pynvml, pynvml.nvmlSystemGetCudaDriverVersion)
        data["cuda_driver"] = (f"{cuda // 1000}.{cuda % 1000 // 10}"
                               if isinstance(cuda, int) else cuda)
        count = pynvml.nvmlDeviceGetCount()
        data["count"] = count
        data["gpus"] = [gpu_info(pynvml, index) for index in range(count)]
        xid = xid_events(pynvml, count, xid_window)
        if not no_kernel_log:
            xid["kernel_log"] = kernel_log_xids()
        data["xid"] = xid
    finally:
        pynvml.nvmlShutdown()
    print(json.dumps({"probe": "gpu", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
