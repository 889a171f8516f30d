"""Error counters that must not grow: one GPU probe's answer against a later one's.

A healthy GPU's ECC counts, remapped rows, retired pages, PCIe replays and NVLink error
counters stay where they are; growth between two probes of the same GPU (matched by UUID,
so a swapped board is never compared with its predecessor) is a fault, named with both
numbers. Critical XIDs are events, not counters: any in the later probe counts. Pure
functions over the GPU probe's payload (probes/gpu.py); a soak compares its rounds with
them, first against each later round.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

#: (what it is called, where it is in a GPU's entry of the GPU probe's payload)
COUNTERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ECC corrected", ("ecc", "aggregate", "corrected")),
    ("ECC uncorrected", ("ecc", "aggregate", "uncorrected")),
    ("ECC corrected (volatile)", ("ecc", "volatile", "corrected")),
    ("ECC uncorrected (volatile)", ("ecc", "volatile", "uncorrected")),
    ("rows remapped (correctable)", ("row_remap", "corrected_rows")),
    ("rows remapped (uncorrectable)", ("row_remap", "uncorrected_rows")),
    ("retired pages (single-bit)", ("row_remap", "retired_pages", "multiple_single_bit")),
    ("retired pages (double-bit)", ("row_remap", "retired_pages", "double_bit")),
    ("PCIe replays", ("pcie", "replays")),
    ("NVLink replay errors", ("nvlink", "errors", "replay")),
    ("NVLink recovery errors", ("nvlink", "errors", "recovery")),
    ("NVLink CRC flit errors", ("nvlink", "errors", "crc_flit")),
    ("NVLink CRC data errors", ("nvlink", "errors", "crc_data")),
)


#: A probe's answer as read back: JSON, untrusted, every part checked before it is read.
Answer = Mapping[str, object]


def gpus_of(payload: Answer) -> list[Answer]:
    """The GPU entries of a GPU probe's answer (either probe's: NVML's, torch's) that are
    maps; none when it lists none."""
    listed = payload.get("gpus")
    return [gpu for gpu in listed if isinstance(gpu, dict)] if isinstance(listed, list) \
        else []


def _at(entry: Answer, path: tuple[str, ...]) -> int | None:
    value: object = entry
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def counts(entry: Answer) -> dict[str, int]:
    """The counters one GPU's entry has (one NVML could not read is left out)."""
    found = {name: _at(entry, path) for name, path in COUNTERS}
    return {name: value for name, value in found.items() if value is not None}


VOLATILE = " (volatile)"


def _grown(before: dict[str, int], after: dict[str, int]) -> Iterator[str]:
    """Each counter that grew, once: a volatile ECC count that grew with its aggregate
    one (the same errors, counted since the driver loaded) is named beside it."""
    grew = {name: (old, new) for name, old in before.items()
            if (new := after.get(name)) is not None and new > old}
    for name, (old, new) in grew.items():
        if name.endswith(VOLATILE) and name.removesuffix(VOLATILE) in grew:
            continue
        volatile = grew.get(name + VOLATILE)
        also = f"; volatile {volatile[0]} -> {volatile[1]}" if volatile else ""
        yield f"{name} {old} -> {new} (+{new - old}{also})"


def _xids(payload: Answer, index: object) -> list[int]:
    xid = payload.get("xid")
    events = xid.get("events") if isinstance(xid, dict) else None
    return [int(e["xid"]) for e in events if isinstance(e, dict) and e.get("gpu") == index
            and isinstance(e.get("xid"), int)] if isinstance(events, list) else []


def growth(first: Answer, later: Answer) -> dict[str, list[str]]:
    """Per GPU (by UUID, as '<index> <uuid>'), what grew from `first` to `later` (two
    payloads of the GPU probe on one node); GPUs with no growth are left out. A GPU of
    `first` that `later` lacks is named as gone."""
    then = {g.get("uuid"): g for g in gpus_of(first)}
    found: dict[str, list[str]] = {}
    seen = set()
    for gpu in gpus_of(later):
        uuid = gpu.get("uuid")
        seen.add(uuid)
        where = f"gpu{gpu.get('index')} {uuid}"
        changes = list(_grown(counts(then[uuid]), counts(gpu))) if uuid in then else []
        changes += [f"XID {xid} during the probe" for xid in _xids(later, gpu.get("index"))]
        if changes:
            found[where] = changes
    for uuid, gpu in then.items():
        if uuid not in seen:
            found[f"gpu{gpu.get('index')} {uuid}"] = ["gone: NVML no longer lists it"]
    return found
