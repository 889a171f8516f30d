"""The cluster under test: the validated spec, its launcher and the shared probe cache."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

from pytest_cluster.cache import ProbeCache
from pytest_cluster.launchers import Launcher, ProbeResult, get_launcher
from pytest_cluster.probes import ProbeCall
from pytest_cluster.spec.model import GpuSpec, Spec, StorageSpec

#: gpu_perf parts and the GpuSpec clauses that need them.
PERF_PARTS = {"usable_memory": ("usable_memory",), "copy": ("memory_bandwidth",),
              "h2d": ("h2d",), "d2h": ("d2h",), "p2p": ("p2p",)}


def storage_call(fs: StorageSpec) -> ProbeCall:
    """The storage probe's arguments for one filesystem; parts not in contract are skipped."""
    args = ["--path", fs.path, "--io-size", str(fs.io_size_bytes),
            "--files", str(fs.metadata_files)]
    for part in ("write", "read", "metadata"):
        if fs.clause(part) is None:
            args += ["--skip", part]
    return ProbeCall("storage", tuple(args))


def import_call(fs: StorageSpec) -> ProbeCall:
    args = ["--python", fs.python, "--repeats", str(fs.import_repeats), "--path", fs.path]
    if fs.cold_cache:
        args.append("--cold")
    return ProbeCall("import_latency", tuple(args))


def gpu_call(gpus: GpuSpec) -> ProbeCall:
    return ProbeCall("gpu", ("--xid-window", f"{gpus.xid_window_s:g}"))


def gpu_perf_call(gpus: GpuSpec) -> ProbeCall | None:
    """The torch probe's arguments: only the measurements the contract has; None if none.

    Throttling, the PCIe link and temperature are judged under load, so the throttle and
    pcie rules and the temperature clause also need the load this probe creates."""
    args = ["--dtypes", ",".join(dtype for dtype, _ in gpus.matmul),
            "--shape", ",".join(map(str, gpus.matmul_shape)),
            "--load-time", f"{gpus.load_time_s:g}"]
    wanted = False
    for part, clauses in PERF_PARTS.items():
        if any(gpus.item(name) is not None for name in clauses):
            wanted = True
        else:
            args += ["--skip", part]
    under_load = any(gpus.item(name) is not None for name in ("throttle", "pcie",
                                                               "temperature"))
    if not (wanted or gpus.matmul or under_load):
        return None
    return ProbeCall("gpu_perf", tuple(args))


class Cluster:
    """What the `cluster` fixture gives a test: spec, nodes and probe results."""

    def __init__(self, spec: Spec, cache_dir: Path, launcher: Launcher | None = None) -> None:
        self.spec = spec
        self.launcher = launcher or get_launcher(spec)
        self.cache = ProbeCache(cache_dir)

    @property
    def name(self) -> str:
        return self.spec.cluster.name

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.spec.cluster.nodes

    def _run(self, call: ProbeCall, nodes: Sequence[str]) -> dict[str, ProbeResult]:
        return self.launcher.run(call, nodes, self.spec.cluster.probe_timeout_s)

    def probe(self, call: ProbeCall, node: str) -> ProbeResult:
        """The result of `call` on `node`; the call runs once, on all nodes in parallel."""
        return self.cache.get(call, self.nodes, self._run)[node]

    def probe_all(self, call: ProbeCall) -> dict[str, ProbeResult]:
        return self.cache.get(call, self.nodes, self._run)

    def host(self, node: str) -> ProbeResult:
        return self.probe(ProbeCall("host"), node)

    def host_all(self) -> dict[str, ProbeResult]:
        return self.probe_all(ProbeCall("host"))

    def storage(self, node: str, fs: StorageSpec) -> ProbeResult:
        return self.probe(storage_call(fs), node)

    def import_latency(self, node: str, fs: StorageSpec) -> ProbeResult:
        return self.probe(import_call(fs), node)

    def shared_check(self, fs: StorageSpec) -> tuple[str, ProbeResult,
                                                     dict[str, ProbeResult]]:
        """Write a file on the first node that answers, read it on every node, remove it:
        (writer, its write result, every node's read result). Not cached: run each time."""
        token = uuid.uuid4().hex[:12]
        timeout = self.spec.cluster.probe_timeout_s

        def call(mode: str) -> ProbeCall:
            return ProbeCall("shared", ("--path", fs.path, "--token", token, mode))

        write = ProbeResult(self.nodes[0], "shared", None, message="no node answered")
        writer = self.nodes[0]
        for node in self.nodes:
            writer, write = node, self.launcher.run(call("write"), [node], timeout)[node]
            if write.ok and "error" not in write.payload():
                break
        if not write.ok or "error" in write.payload():
            return writer, write, {}
        try:
            reads = self.launcher.run(call("read"), self.nodes, timeout)
        finally:
            self.launcher.run(call("remove"), [writer], timeout)
        return writer, write, reads

    def _gpus(self) -> GpuSpec:
        if self.spec.gpus is None:
            raise ValueError("the spec has no gpus section")
        return self.spec.gpus

    def gpu(self, node: str) -> ProbeResult:
        """NVML inventory and health of every GPU of `node`."""
        return self.probe(gpu_call(self._gpus()), node)

    def gpu_all(self) -> dict[str, ProbeResult]:
        return self.probe_all(gpu_call(self._gpus()))

    def gpu_perf(self, node: str) -> ProbeResult | None:
        """torch measurements on every GPU of `node` at once; None if none is in contract."""
        call = gpu_perf_call(self._gpus())
        return None if call is None else self.probe(call, node)
