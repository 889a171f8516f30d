"""The gpu_perf probe's payload: what it prints as its `data`. Each measured part is its
figures or {"error": reason} (errors_to_json), hence total=False and an `error` key in each."""

from __future__ import annotations

from typing import TypedDict


class Options(TypedDict):
    """The probe's options (parse_options), echoed in its payload."""

    dtypes: list[str]
    shape: list[int]
    warmup: int
    warmup_time: float
    iterations: int
    load_time: float
    copy_bytes: int
    xfer_bytes: int
    skip: list[str]
    sdc: bool


class UsableMemory(TypedDict, total=False):
    allocated_bytes: int
    cuda_total_bytes: int
    cuda_free_before_bytes: int
    failed_allocations: int
    method: str
    error: str


class Rate(TypedDict, total=False):
    """A copy's rate: device to device, host to device, device to host."""

    bytes_per_s: float
    median_bytes_per_s: float
    max_bytes_per_s: float
    min_bytes_per_s: float
    buffer_bytes: int
    iterations: int
    warmup_s: float
    method: str
    error: str


class Matmul(TypedDict, total=False):
    tflops_median: float
    tflops_max: float
    tflops_min: float
    shape: list[int]
    warmup: int
    warmup_s: float
    iterations: int
    method: str
    error: str


class Sustained(TypedDict, total=False):
    seconds: float
    matmuls: int
    tflops: float
    error: str


class Sdc(TypedDict, total=False):
    checksum: int
    checksums: list[int]
    repeats: int
    consistent: bool
    shape: list[int]
    method: str
    error: str


class P2pPair(TypedDict):
    src: int
    dst: int
    peer_access: bool
    bytes_per_s: float


class P2p(TypedDict, total=False):
    pairs: list[P2pPair]
    buffer_bytes: int
    iterations: int
    method: str
    error: str


class Load(TypedDict, total=False):
    """What NVML said of one GPU while the processes ran (Sampler)."""

    nvml_index: int
    samples: int
    load_samples: int
    reasons_mask: int
    throttle: list[str]
    temperature_max_c: float | None
    power_max_w: float | None
    sm_clock_min_mhz: int | None
    pcie_gen_max: int | None
    pcie_width_max: int | None
    error: str


class PerfGpu(TypedDict, total=False):
    """One GPU's measurements (worker), with its NVML samples (`load`)."""

    index: int
    name: str
    uuid: str
    capability: list[int]
    usable_memory: UsableMemory
    copy: Rate
    h2d: Rate
    d2h: Rate
    matmul: dict[str, Matmul]  # by dtype
    sustained: Sustained
    sdc: Sdc
    load: Load
    error: str
    traceback: str


class DeviceInfo(TypedDict, total=False):
    """What the forked child says of torch and the GPUs it sees (device_info)."""

    torch: str | None
    cuda: str | None
    nccl: str | None
    count: int
    uuids: list[str]
    error: str


class GpuPerfData(TypedDict, total=False):
    """The probe's payload."""

    torch: str | None
    cuda: str | None
    nccl: str | None
    pid: int
    options: Options
    count: int
    gpus: list[PerfGpu]
    p2p: P2p
    error: str
    simulated: bool  # the sim's answer says so
