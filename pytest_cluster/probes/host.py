"""Host probe: CPU, memory, kernel, OS, Python and the ML stack's versions.

Runs ON a node with only the standard library; shipped as a single file, so it imports
nothing from pytest_cluster. Prints one JSON document on stdout. Versions are read
without importing torch (package metadata and torch/version.py), so it stays fast.
"""

from __future__ import annotations

import glob
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import socket
import sys
from typing import TypedDict


class Cpu(TypedDict):
    model: str | None
    threads: int | None
    cores: int | None
    sockets: int | None
    usable_threads: int | None
    cores_source: str | None


class Memory(TypedDict):
    total_bytes: int | None
    available_bytes: int | None
    source: str


class Software(TypedDict):
    """Versions by name (kernel, python, torch, cuda, nccl, driver), and where each was read."""

    versions: dict[str, str | None]
    sources: dict[str, str | None]


class HostData(Software):
    """The probe's payload."""

    hostname: str
    cpu: Cpu
    memory: Memory
    os: str | None
    python_executable: str


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def cpu_info() -> Cpu:
    model = None
    text = _read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    cores: set[tuple[str, str]] = set()
    for topo in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology"):
        package = _read(os.path.join(topo, "physical_package_id"))
        core = _read(os.path.join(topo, "core_id"))
        if package is not None and core is not None:
            cores.add((package.strip(), core.strip()))
    sockets = {package for package, _ in cores}
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    return {
        "model": model,
        "threads": os.cpu_count(),
        "cores": len(cores) or None,
        "sockets": len(sockets) or None,
        "usable_threads": usable,
        "cores_source": "/sys/devices/system/cpu/*/topology" if cores else None,
    }


def memory_info() -> Memory:
    fields: dict[str, int] = {}
    for line in (_read("/proc/meminfo") or "").splitlines():
        match = re.match(r"^(\w+):\s+(\d+)\s*kB", line)
        if match:
            fields[match.group(1)] = int(match.group(2)) * 1024
    return {
        "total_bytes": fields.get("MemTotal"),
        "available_bytes": fields.get("MemAvailable"),
        "source": "/proc/meminfo MemTotal (installed RAM less what the kernel reserves)",
    }


def os_release() -> str | None:
    for line in (_read("/etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


def _dist_version(*names: str) -> tuple[str | None, str | None]:
    for name in names:
        try:
            return importlib.metadata.version(name), f"package {name}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return None, None


def torch_cuda_version() -> str | None:
    """CUDA version torch was built with, read from torch/version.py without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        text = _read(os.path.join(location, "version.py")) or ""
        match = re.search(r"^cuda(?:\s*:\s*[^=]+)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
        if match:
            return match.group(1)
    return None


def nvidia_driver() -> tuple[str | None, str | None]:
    text = _read("/sys/module/nvidia/version")
    if text and text.strip():
        return text.strip(), "/sys/module/nvidia/version"
    text = _read("/proc/driver/nvidia/version") or ""
    match = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+(?:\.\d+)+)", text)
    if match:
        return match.group(1), "/proc/driver/nvidia/version"
    return None, None


def software() -> Software:
    torch, torch_source = _dist_version("torch")
    nccl, nccl_source = _dist_version("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
    driver, driver_source = nvidia_driver()
    cuda = torch_cuda_version() if torch else None
    versions = {
        "kernel": platform.release(),
        "python": platform.python_version(),
        "torch": torch,
        "cuda": cuda,
        "nccl": nccl,
        "driver": driver,
    }
    sources = {
        "kernel": "uname -r",
        "python": sys.executable,
        "torch": torch_source,
        "cuda": "torch/version.py (the CUDA torch was built for)" if cuda else None,
        "nccl": nccl_source,
        "driver": driver_source,
    }
    return {"versions": versions, "sources": sources}


def main() -> int:
    found = software()
    data: HostData = {
        "hostname": socket.gethostname(),
        "cpu": cpu_info(),
        "memory": memory_info(),
        "os": os_release(),
        "python_executable": sys.executable,
        "versions": found["versions"],
        "sources": found["sources"],
    }
    print(json.dumps({"probe": "host", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
