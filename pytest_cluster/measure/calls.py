"""The probe calls the cluster makes, from the spec: which probe, with which arguments
(pure functions, tested against exact arguments)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_cluster.contract.clauses import readers
from pytest_cluster.probes import ProbeCall
from pytest_cluster.probes.gpu_perf import PARTS as PERF_PARTS

if TYPE_CHECKING:
    from pytest_cluster.contract.model import GpuSpec, StorageSpec

STORAGE_PARTS = ("write", "read", "metadata")  # what the storage probe measures under load


def storage_call(fs: StorageSpec,
                 selected: frozenset[str] | None = None) -> ProbeCall:
    """The storage probe's arguments for one filesystem. A part not in contract is skipped,
    and so is one this run's selection left out (`selected`: the clauses it checks, e.g.
    `-m sanity` checks capacity without writing a byte) when it checks any clause of this
    filesystem; None, or none of them: every part in contract."""
    args = ["--path", fs.path, "--io-size", str(fs.io_size_bytes),
            "--files", str(fs.metadata_files)]
    ours = {c.key for c in fs.clauses}
    chosen = selected if selected is not None and ours & selected else None
    for part in STORAGE_PARTS:
        clause = fs.clause(part)
        if clause is None or (chosen is not None and clause.key not in chosen):
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

    Which clauses read which part of its payload is declared (contract/clauses.py): a part no
    clause of the contract reads is skipped. Throttling, the PCIe link and temperature
    read its `load` part: judged under load, they need the load this probe creates."""
    args = ["--dtypes", ",".join(dtype for dtype, _ in gpus.matmul),
            "--shape", ",".join(map(str, gpus.matmul_shape)),
            "--load-time", f"{gpus.load_time_s:g}"]
    needed = readers("gpu_perf")
    wanted = False
    for part in PERF_PARTS:
        if any(gpus.item(key) is not None for key in needed.get(part, ())):
            wanted = True
        else:
            args += ["--skip", part]
    under_load = any(gpus.item(key) is not None for key in needed["load"])
    if not (wanted or gpus.matmul or under_load):
        return None
    return ProbeCall("gpu_perf", tuple(args))


def gpu_stress_call(gpus: GpuSpec) -> ProbeCall:
    """The stress level's torch probe: every GPU of the node under bf16 matmuls for
    stress_time, NVML sampled throughout, then the SDC check; nothing else measured."""
    args = ["--dtypes", "", "--shape", ",".join(map(str, gpus.matmul_shape)),
            "--load-time", f"{gpus.stress_time_s:g}", "--sdc"]
    for part in PERF_PARTS:
        args += ["--skip", part]
    return ProbeCall("gpu_perf", tuple(args))


#: Each DCGM diagnostic level's time limit, with margin over what DCGM's user guide says it
#: takes ("Run Levels": r1 seconds, r2 about 2 min, r3 about 15-30 min, r4 one to two hours
#: and more on 8 GPUs): past it, dcgmi is stopped and the case says so (an ERROR).
DCGM_LIMITS_S = {1: 300.0, 2: 900.0, 3: 3600.0, 4: 4 * 3600.0}


def dcgm_call(gpus: GpuSpec) -> ProbeCall:
    """The DCGM probe: `dcgmi diag -r N -j` at the contract's level, within its limit."""
    level = gpus.dcgm_level
    assert level is not None, "gpus.dcgm_diag is not in the contract"
    return ProbeCall("dcgm", ("--level", str(level), "--timeout", f"{DCGM_LIMITS_S[level]:g}"))
