"""What a data loader's worker may claim (measure/storage/dataloader.py's run): its figures, each
number checked, and each claim against what the controller asked (`Asked`): its file
set's bytes; no more bytes read than its reads of `read_size`; a read phase no shorter
than `duration`; a metadata test of exactly 4 x `metadata_files` operations; at most one
operation a microsecond, and no more CPU time than one thread's. A claim that is wrong is
its node's bad output (BAD ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from pytest_cluster.measure.plausible import CPU_GRAIN_S, ONE_THREAD_CPU
from pytest_cluster.measure.storage.claims import Ceiling, figure, ops_above
from pytest_cluster.units import finite

if TYPE_CHECKING:
    from pytest_cluster.probes.jobs.dataloader import RankData

#: The phases that are judged (the write before them only makes the file set).
JUDGED = ("read", "metadata")
#: How a worker's error starts where its answer is its node's bad output.
BAD = "bad data loader output: "
#: The bytes of each small file of the metadata test (probes/jobs/dataloader.py's).
METADATA_FILE_BYTES = 3901


@dataclass(frozen=True)
class WorkerFigures:
    node: str
    rank: int
    ops: int
    bytes: int
    seconds: float
    cpu_s: float
    late_s: float
    error: str = ""
    missing: int = 0  # read: the files other nodes wrote it did not find (not written here)


_NUMBERS = ("ops", "bytes", "seconds", "cpu_s", "late_s")


@dataclass(frozen=True)
class Asked:
    """What the controller asked of a phase's workers, which bounds what each may claim."""

    size: int  # each worker's file of the set
    read_size: int
    duration_s: float
    files: int  # metadata files per worker
    ceiling: Ceiling = field(default_factory=Ceiling)


def worker_figures(node: str, rank: int, data: RankData | None, why: str,
            phase: str = "", asked: Asked | None = None) -> WorkerFigures:
    """One worker's report, each number checked (a node's answer is not trusted), and,
    where the controller says what it asked (`asked`), each claim against it."""
    missing = data.get("missing") if data is not None else None
    empty = WorkerFigures(node, rank, 0, 0, 0.0, 0.0, 0.0,
                          missing=min(len(missing), 2**20) if isinstance(missing, list) else 0)
    if data is None:
        return replace(empty, error=why or "the worker printed no result")
    if "error" in data:
        return replace(empty, error=str(data["error"])[:300])
    numbers = {}
    for name in _NUMBERS:
        value = finite(data.get(name))
        if value is None or value < 0:
            return replace(empty, error=f"{BAD}{name} is {str(data.get(name))[:40]!r}")
        numbers[name] = value
    found = replace(empty, ops=int(numbers["ops"]), bytes=int(numbers["bytes"]),
                    seconds=numbers["seconds"], cpu_s=numbers["cpu_s"],
                    late_s=numbers["late_s"])
    wrong = claimed(found, phase, asked) if asked is not None else ""
    return replace(empty, error=wrong) if wrong else found


def claimed(worker: WorkerFigures, phase: str, asked: Asked) -> str:
    """What is wrong with a worker's claims against what the controller asked ('')."""
    ops, seconds = worker.ops, worker.seconds
    if phase == "write":
        return "" if worker.bytes == asked.size else \
            f"{BAD}it claims {figure(worker.bytes)} bytes written, not the {asked.size} it was " \
            "asked to"
    if phase == "read":
        if worker.bytes > ops * asked.read_size:
            return (f"{BAD}it claims {figure(worker.bytes)} bytes in {figure(ops)} reads "
                    f"of at most {asked.read_size} bytes")
        if seconds < asked.duration_s - 0.001:
            return (f"{BAD}it claims its reads took {seconds:.3g} s; it was to read for "
                    f"{asked.duration_s:g} s")
    if phase == "metadata" and (ops != 4 * asked.files
                                or worker.bytes != asked.files * METADATA_FILE_BYTES):
        return (f"{BAD}it claims {figure(ops)} operations on {figure(worker.bytes)} bytes; its "
                f"{asked.files} files are {4 * asked.files} operations on "
                f"{asked.files * METADATA_FILE_BYTES} bytes")
    above = ops_above(ops, seconds) if phase in JUDGED else ""
    if above:
        return f"{BAD}{phase}: {above}"
    if phase in JUDGED and worker.cpu_s > ONE_THREAD_CPU.high * seconds + CPU_GRAIN_S:
        return (f"{BAD}it claims {worker.cpu_s:.3g} CPU seconds in its {seconds:.3g} s of "
                f"one thread's calls (at most {ONE_THREAD_CPU.high:g} x them)")
    return ""
