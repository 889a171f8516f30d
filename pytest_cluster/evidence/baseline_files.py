"""The two files of a baseline the comparison reads, taken as the other side may have
made them: whoever handed us the directory could have changed them and made its manifest
again (unsigned), and `pytest-cluster verify` would pass.

Each file is held to its limit of size before it is parsed, parsed strictly
(untrusted_json.py) and checked against its one declared shape below, a JSON Schema
that the jsonschema library checks; what is kept is only
what the comparison reads. Anything else is an InputError naming the file, the field and
what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_cluster.errors import InputError
from pytest_cluster.evidence.results import INTERRUPTED
from pytest_cluster.evidence.untrusted_json import (
    Schema,
    check,
    either,
    integer,
    list_of,
    map_of,
    number,
    optional,
    parse,
    read_bounded,
    record,
    scalar,
    text,
    too_big,
)
from pytest_cluster.hostlist import MAX_NODES
from pytest_cluster.measure.inventory_file import GPU_FIELDS, INVENTORY, UNREADABLE

RESULTS = "results.jsonl"
#: A 1,000-node run of every clause writes about 70 MB of results; 10,000 such nodes'
#: inventory about 60 MB.
MAX_BYTES = {RESULTS: 256 * 2**20, INVENTORY: 64 * 2**20}
WHAT = {RESULTS: "a baseline's results", INVENTORY: "a baseline's inventory"}
MAX_TEXT = 4096  # characters of an identifier, a reason, a case id
MAX_NODE_NAME = 253  # characters of a host name
LAST_SECOND = 253402300799  # 9999-12-31T23:59:59Z: a time units.utc can write

# -- inventory.json ----------------------------------------------------------------------

REASON = text(MAX_TEXT)
UNREADABLE_VALUE = record({UNREADABLE: REASON}, '{"unreadable": WHY}', (UNREADABLE,))
#: A value compared as it is and shown: a serial, a firmware, a rate.
VALUE = either(UNREADABLE_VALUE, scalar(MAX_TEXT))


def _record(what: str, *names: str, **more: Schema) -> Schema:
    return record({**dict.fromkeys(names, VALUE), **more}, f"a mapping of {what}")


def _listed(item: Schema, what: str) -> Schema:
    return either(UNREADABLE_VALUE, list_of(item, f"a list of {what}"))


GPU = _record("a GPU's fields", *GPU_FIELDS)
NIC = _record("a network interface's fields", "name", "address", "firmware", "rate_gbps",
              "link_layer")
PORT = _record("a port's fields", "port", "rate")
HCA = _record("an HCA's fields", "name", "node_guid", "firmware",
              ports=_listed(PORT, "ports (mappings)"))
DISK = _record("a block device's fields", "name", "serial", "model")
FILESYSTEM = _record("a filesystem's fields", "path",
                     block_devices=_listed(DISK, "block devices (mappings)"))
NODE = either(UNREADABLE_VALUE, _record(
    "a node's inventory", "machine_id",
    dmi=either(UNREADABLE_VALUE, _record("DMI fields", "product_serial", "product_uuid")),
    gpus=_listed(GPU, "GPUs (mappings)"),
    interfaces=_listed(NIC, "network interfaces (mappings)"),
    infiniband=_listed(HCA, "HCAs (mappings)"),
    filesystems=_listed(FILESYSTEM, "filesystems (mappings)"),
    software=either(UNREADABLE_VALUE, _record("software versions", "driver"))))
INVENTORY_SHAPE = record(
    {"nodes": map_of(NODE, MAX_NODE_NAME, MAX_NODES, "a mapping of node names to their "
                                                    "inventory")},
    '{"nodes": {NODE: {...}}} as pytest-cluster writes it', ("nodes",))

# -- results.jsonl -----------------------------------------------------------------------

OPTIONAL_TEXT = optional(text(MAX_TEXT))
LINE = record({"type": text(32)}, 'a mapping with "type" (a run, result or end line)',
              ("type",))
LINES = {
    "run": record({"started_at": number(0, LAST_SECOND, "seconds since 1970, UTC"),
                   "cluster": text(MAX_TEXT), "spec_sha256": text(64)}),
    "result": record({
        "case": text(MAX_TEXT), "clause": text(MAX_TEXT), "node": OPTIONAL_TEXT,
        "gpu": optional(integer()), "filesystem": OPTIONAL_TEXT,
        "measured": scalar(MAX_TEXT), "measured_base": scalar(MAX_TEXT),
        "unit": optional(text(64)), "comparison": optional(text(8)),
        "outcome": text(32)}),
    "end": record({"status": text(32)}),
}


@dataclass(frozen=True)
class BaselineResults:
    """What the comparison reads of a baseline's results.jsonl: its run line, result
    lines and end line (None when the run was cut off), each with only the fields read."""

    run: dict[str, Any]
    results: list[dict[str, Any]]
    end: dict[str, Any] | None

    @property
    def status(self) -> str:
        return str(self.end.get("status", INTERRUPTED)) if self.end is not None \
            else INTERRUPTED


def check_sizes(run_dir: Path) -> None:
    """Either file over its limit: an InputError before anything is read of it."""
    for name, limit in MAX_BYTES.items():
        path = run_dir / name
        if path.is_file() and path.stat().st_size > limit:
            raise too_big(name, path.stat().st_size, limit, WHAT[name])


def read_inventory(path: Path) -> dict[str, Any]:
    data = read_bounded(path, MAX_BYTES[INVENTORY], WHAT[INVENTORY])
    kept: dict[str, Any] = _checked(INVENTORY_SHAPE, parse(data, path.name), path.name)
    return kept


def read_results(path: Path) -> BaselineResults:
    """Every line of `path` checked; a last line cut in half (a killed writer) is left
    out, as results.read_results does, and blank lines are."""
    limit = MAX_BYTES[RESULTS]
    run: dict[str, Any] = {}
    results: list[dict[str, Any]] = []
    end: dict[str, Any] | None = None
    size = 0
    try:
        with path.open("rb") as lines:
            for number, line in enumerate(lines, 1):
                size += len(line)
                if size > limit:
                    raise too_big(path.name, size, limit, WHAT[RESULTS])
                if not line.strip():
                    continue
                where = f"{path.name} line {number}"
                try:
                    record = parse(line, where)
                except InputError:
                    if line.endswith(b"\n"):
                        raise
                    continue  # the last line, cut off
                kind = record.get("type") if isinstance(record, dict) else None
                if not isinstance(kind, str) or len(kind) > 32:
                    kind = _checked(LINE, record, where)["type"]
                if kind not in LINES:
                    continue
                kept = _checked(LINES[kind], record, where)
                if (kind == "run") != (not run and not results and end is None):
                    raise InputError(f"{where}: a {kind} line where " + (
                        "the run line was expected first (results.jsonl starts with "
                        "the run line pytest-cluster writes)" if not run else
                        "the run had begun: a second run line (two runs in one file)"))
                if kind == "run":
                    run = kept
                elif kind == "result":
                    results.append(kept)
                else:
                    end = kept
    except OSError as exc:
        raise InputError(f"{path.name}: cannot be read: {exc.strerror or exc}") from None
    if not run:
        raise InputError(f"{path.name}: no run line (expected the results of a run, which "
                         f"start with the run line pytest-cluster writes; this one is "
                         f"{'empty' if not size else 'without one'})")
    return BaselineResults(run, results, end)


def _checked(shape: Schema, value: Any, where: str) -> Any:
    try:
        return check(shape, value)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
