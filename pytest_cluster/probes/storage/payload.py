"""The storage probe's payload: what it prints as its `data`. A part is its figures,
{"error": reason} or {"skipped": "not in contract"}."""

from __future__ import annotations

from typing import TypedDict


class Capacity(TypedDict, total=False):
    total_bytes: int
    free_bytes: int
    free_source: str
    error: str


class Leftover(TypedDict):
    """What an earlier run left, and what the sweep did with it."""

    path: str
    bytes: int
    removed: bool
    why: str


class Transfer(TypedDict, total=False):
    """The write or the read of the test file."""

    bytes: int
    seconds: float
    bytes_per_s: float
    method: str
    error: str
    skipped: str


class Metadata(TypedDict, total=False):
    files: int
    ops_per_s: float
    phase_ops_per_s: dict[str, float | None]  # create, stat, remove
    phase_seconds: dict[str, float]
    method: str
    error: str
    skipped: str


class StorageData(TypedDict, total=False):
    """The probe's payload."""

    path: str
    fs_type: str | None
    error: str
    leftovers: list[Leftover]
    leftovers_error: str
    capacity: Capacity
    write: Transfer
    read: Transfer
    metadata: Metadata
    cleaned_up: bool


class Failed(TypedDict):
    error: str
