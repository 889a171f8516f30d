"""What a checkpoint burst's rank may claim (measure/storage/checkpoint.py's burst): its figures,
each number checked, and each claim against what the controller asked (`Asked`): the bytes
it was to write or read, whose file it was to read, a digest of the pages the read's
challenge picks, and the nodes' ceiling. A claim that is wrong is its node's bad output
(BAD ...); a file that read back not as its writer said is the writer's (NOT_AS_CLAIMED).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from pytest_cluster.measure.storage.claims import Ceiling, figure
from pytest_cluster.probes.jobs.checkpoint import expected_digest, writer_of
from pytest_cluster.units import finite

if TYPE_CHECKING:
    from pytest_cluster.probes.jobs.checkpoint import RankData

#: How a rank's error starts where its answer is its node's bad output.
BAD = "bad checkpoint output: "
#: How a writer's error starts where its file read back not as it claimed (no phase's
#: failure: a fault every node shares is judged without it).
PROVEN = "its write, read back: "
#: The errno of a read whose file was not as its writer claimed (short, long): the
#: writer's fault, not the reader's.
NOT_AS_CLAIMED = "NOT_AS_CLAIMED"
#: What a rank reports of each phase (RankFigures' fields, in order).
_NUMBERS = ("bytes", "seconds", "started_at", "ended_at", "late_s", "cpu_s")


@dataclass(frozen=True)
class RankFigures:
    node: str
    rank: int
    bytes: int
    seconds: float  # in the timed calls (write + fsync, or read)
    started_at: float
    ended_at: float
    late_s: float
    cpu_s: float
    bad_blocks: int = 0  # read: blocks not as their writer wrote them
    writer: int = -1  # read: whose file
    error: str = ""
    wait_s: float = 0.0  # of `seconds`, waiting for the data to be made or checked (CPU)
    errno: str = ""  # the error's name: 'ENOENT', a read's file not there


@dataclass(frozen=True)
class Asked:
    """What the controller asked of a phase's ranks, which bounds what each may claim:
    the bytes each writer writes (and each reader reads), the burst's token (its data's
    seed), the read's challenge, the nodes' ceiling, and whose file each reader reads
    (writer_of over the write job's nodes that wrote, `write_nodes`)."""

    size: int
    block: int
    token: str = ""
    ceiling: Ceiling = field(default_factory=Ceiling)
    challenge: str = ""
    per_node: int = 1
    world: int = 1
    write_nodes: tuple[int, ...] = ()

    def writer(self, rank: int) -> int:
        return writer_of(rank, self.world, self.per_node, list(self.write_nodes) or None)


def figures(node: str, rank: int, data: RankData | None, phase: str,
             stderr: str, asked: Asked | None = None) -> RankFigures:
    """One rank's report, each number checked (a node's answer is not trusted), and,
    where the controller says what it asked (`asked`), each claim against it."""
    empty = RankFigures(node, rank, 0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if asked is not None and phase == "read":
        empty = replace(empty, writer=asked.writer(rank))
    if data is None:
        return replace(empty, error=stderr.strip().splitlines()[-1][:300] if stderr.strip()
                       else "the rank printed no result")
    if "error" in data:
        writer = data.get("writer")
        said = writer if isinstance(writer, int) and not isinstance(
            writer, bool) and 0 <= writer < 2**31 else -1
        if asked is not None and phase == "read" and said not in (-1, empty.writer):
            return replace(empty, error=f"{BAD}its read failed on writer {said}'s file, not "
                                        f"on writer {empty.writer}'s, which it was to read")
        return replace(empty, error=str(data["error"])[:300], errno=str(data.get("errno")
                                                                        or "")[:20],
                       writer=said if asked is None else empty.writer)
    numbers = {}
    for name in (*_NUMBERS, *(("bad_blocks", "writer") if phase == "read" else ()), "wait_s",
                 *(("file_bytes",) if asked is not None and phase == "read" else ())):
        if name == "wait_s" and name not in data:
            continue  # an older probe's
        value = finite(data.get(name))
        if value is None or value < 0:
            return replace(empty, error=f"{BAD}{name} is {str(data.get(name))[:40]!r}")
        numbers[name] = value
    found = RankFigures(node, rank, int(numbers["bytes"]), float(numbers["seconds"]),
                        float(numbers["started_at"]), float(numbers["ended_at"]),
                        float(numbers["late_s"]), float(numbers["cpu_s"]),
                        int(numbers.get("bad_blocks", 0)), int(numbers.get("writer", -1)),
                        wait_s=float(numbers.get("wait_s", 0.0)))
    if asked is None:
        return found
    wrong = claimed(found, phase, asked, int(numbers.get("file_bytes", 0)),
                     data.get("digest"))
    if wrong.startswith(BAD):
        return replace(empty, error=wrong)
    if wrong:  # the writer's file, not as it claimed: the reader measured no whole file
        return replace(empty, error=wrong, errno=NOT_AS_CLAIMED)
    return found


def claimed(rank: RankFigures, phase: str, asked: Asked, file_bytes: int,
             digest: object) -> str:
    """What is wrong with a rank's claims against what the controller asked: its own bad
    output (BAD ...), the writer's file not as claimed (read: ..., NOT_AS_CLAIMED), or ''."""
    size = asked.size
    if phase == "write":
        if rank.bytes != size:
            return (f"{BAD}it claims {figure(rank.bytes)} bytes written, not the {size} it was "
                    "asked to")
        above = asked.ceiling.above(rank.bytes, rank.seconds)
        return f"{BAD}write: {above}" if above else ""
    expected = asked.writer(rank.rank)
    if rank.writer != expected:
        return (f"{BAD}it read back writer {rank.writer}'s file, not writer {expected}'s, "
                "which it was to read (no such file in this burst)")
    whole = min(size, file_bytes)
    blocks = (size + asked.block - 1) // asked.block
    if rank.bytes != whole:
        return (f"{BAD}it read {figure(rank.bytes)} bytes of writer {expected}'s file of "
                f"{figure(file_bytes)} bytes ({size} written): a read-back reads it whole")
    if rank.bytes < size and rank.bad_blocks < blocks - rank.bytes // asked.block:
        return (f"{BAD}it read {rank.bytes} of writer {expected}'s {size} bytes yet counts "
                f"{rank.bad_blocks} block(s) bad: the blocks it did not read are not as "
                "written")
    proven = bool(asked.challenge) and not rank.bad_blocks and digest == expected_digest(
        asked.token, asked.challenge, expected, size, asked.block)
    if file_bytes < size or (file_bytes > size and not proven):
        return (f"read: writer {expected}'s file is {figure(file_bytes)} bytes, not the {size} its "
                "writer said it wrote")
    # a file longer than written whose written bytes the digest proves: the writer wrote
    # what it said (only the reader says there is more; it disproves no one)
    if asked.challenge and not rank.bad_blocks and not proven:
        return (f"{BAD}its digest of writer {expected}'s file ({str(digest)[:40]!r}) is not "
                "that of the data written, though it says every block was as written")
    above = asked.ceiling.above(rank.bytes, rank.seconds)
    return f"{BAD}read: {above}" if above else ""
