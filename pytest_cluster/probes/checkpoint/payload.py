"""What a checkpoint rank prints, and the reading thread's timing (types)."""

from __future__ import annotations

from typing import TypedDict


class Leftover(TypedDict):
    """A file of an earlier burst, and whether the sweep removed it."""

    path: str
    bytes: int
    removed: bool
    why: str


class RankData(TypedDict, total=False):
    """What a rank prints: who it is, then its phase's figures (write, read or remove), or
    the error that ended the phase."""

    rank: int
    world: int
    host: str
    phase: str
    block: int
    bytes: int  # written, or read back
    seconds: float
    started_at: float
    ended_at: float
    late_s: float
    wait_s: float
    cpu_s: float
    leftovers: list[Leftover]  # write, rank 0
    capacity_bytes: int  # write, rank 0
    writer: int  # read: whose file
    file_bytes: int
    bad_blocks: int
    first_bad_block: int | None
    digest: str  # read, with --challenge: sample_digest of what it read
    removed: int  # remove
    error: str
    errno: str  # the error's name, 'ENOENT' (a read's file not there: not written here)
    simulated: bool  # the sim's answer says so


class Timing(TypedDict, total=False):
    """The reading thread's span, and what it waited for a free buffer."""

    started_at: float
    ended_at: float
    seconds: float
    wait_s: float
    error: Exception
