"""The two files of a baseline the comparison reads, taken as the other side may have
made them: whoever handed us the directory could have changed them and made its manifest
again (unsigned), and `pytest-cluster verify` would pass.

Each file must be the run's own regular file: a symbolic link is refused, never followed
(its size would be another file's, perhaps one outside the run), and so is a fifo or a
device. Each file is held to its limit of size before it is parsed, parsed strictly
(untrusted_json.py) and checked against its one declared shape below, a JSON Schema
that the jsonschema library checks; what is kept is only
what the comparison reads. Anything else is an InputError naming the file, the field and
what was expected.
"""

from __future__ import annotations

import errno
import math
import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypedDict

from pytest_cluster.errors import InputError
from pytest_cluster.evidence.bundle.tree import kind
from pytest_cluster.evidence.sinks.results import INTERRUPTED, ResultLine, RunLine
from pytest_cluster.evidence.untrusted_json import (
    Schema,
    check,
    cut,
    either,
    found,
    integer,
    json_path,
    list_of,
    map_of,
    number,
    optional,
    parse,
    record,
    scalar,
    text,
    too_big,
)
from pytest_cluster.hostlist import MAX_NODES
from pytest_cluster.measure.inventory_file import (
    GPU_FIELDS,
    INVENTORY,
    UNREADABLE,
    InventoryDocument,
)
from pytest_cluster.units import UNITS, finite, format_number

RESULTS = "results.jsonl"
#: A 1,000-node run of every clause writes about 70 MB of results; 10,000 such nodes'
#: inventory about 60 MB.
MAX_BYTES = {RESULTS: 256 * 2**20, INVENTORY: 64 * 2**20}
WHAT = {RESULTS: "a baseline's results", INVENTORY: "a baseline's inventory"}
MAX_TEXT = 4096  # characters of an identifier, a reason, a case id
MAX_NODE_NAME = 253  # characters of a host name
LAST_SECOND = 253402300799  # 9999-12-31T23:59:59Z: a time units.utc can write

#: The most GPUs per node a spec may name (contract/sections/gpus.py: gpus.count from 1 to 64).
MAX_GPUS = 64
#: What a node may add to a baseline's files: its inventory record (a node of many NICs,
#: HCAs and disks writes tens of kB) and its result lines (a run of every clause about
#: 70 kB a node); the files' limits are these times the nodes the spec allows, plus a
#: run's own lines, never more than MAX_BYTES.
PER_NODE = {RESULTS: 1 * 2**20, INVENTORY: 256 * 2**10}
PER_RUN = 64 * 2**10
#: At most this many entries in one node's list of devices of each kind (a node's
#: interfaces include its virtual ones).
MAX_DEVICES = {"interfaces": 4096, "infiniband": 256, "filesystems": 256}
MAX_PORTS = 256  # of one HCA
MAX_DISKS = 1024  # block devices of one filesystem


@dataclass(frozen=True)
class Limits:
    """What the contract lets a baseline hold: its nodes, and GPUs per node (`gpus_from`
    says which key of the spec allows them); its files' sizes follow from the nodes."""

    nodes: int = MAX_NODES
    gpus_per_node: int = MAX_GPUS
    gpus_from: str = f"the most a spec may name ({MAX_GPUS})"

    def max_bytes(self, name: str) -> int:
        return min(MAX_BYTES[name], PER_RUN + self.nodes * PER_NODE[name])

    def what(self, name: str) -> str:
        """What the file is, and why its limit is what it is."""
        if self.max_bytes(name) == MAX_BYTES[name]:
            return WHAT[name]
        return f"{WHAT[name]} of {self.nodes} node(s) (the spec's cluster.nodes)"


#: No spec to bound a baseline by: the limits of any spec.
ANY_SPEC = Limits()

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

#: A figure's two numbers as a run writes them (evidence/record/check.py): measured in the line's
#: unit, measured_base that times the unit's factor (units.UNITS; none: a count or a
#: fraction, 1), so they agree but for rounding.
IN_BASE = ("a finite number, the figure in its unit's base (as a run writes it: measured x "
           "the unit's factor)")
IN_UNIT = ("a finite number, the figure in its unit (as a run writes it: measured_base / "
           "the unit's factor)")
AGREE = 1e-9  # the relative difference rounding leaves between them
UNITLESS = "count or a fraction"  # what a figure without a unit is (its least value: 0)
#: The least figure in size other than 0 that a run writes: a double's smallest normal
#: number (2.225e-308). Below it, a subnormal (5e-324) is no measurement: against it every
#: figure's relative change is infinite, and comparisons with it were left out in silence.
SMALLEST = sys.float_info.min

OPTIONAL_TEXT = optional(text(MAX_TEXT))
LINE = record({"type": text(32)}, 'a mapping with "type" (a run, result or end line)',
              ("type",))
LINES = {
    "run": record({"started_at": number(0, LAST_SECOND, "seconds since 1970, UTC"),
                   "cluster": text(MAX_TEXT), "spec_sha256": text(64)}),
    "result": record({
        "case": text(MAX_TEXT), "clause": text(MAX_TEXT), "node": OPTIONAL_TEXT,
        "gpu": optional(integer()), "filesystem": OPTIONAL_TEXT,
        "measured": scalar(MAX_TEXT), "measured_base": {**number(), "description": IN_BASE},
        "unit": optional(text(64)), "comparison": optional(text(8)),
        "basis": optional(text(16)), "basis_nodes": optional(integer()),
        "basis_gpus": optional(integer()), "outcome": text(32)}),
    "end": record({"status": text(32)}),
}


def _figure_checked(line: ResultLine, where: str) -> None:
    """A result line with a figure (its measured_base: a run writes one with every number
    it judged) as a run writes it: measured_base and measured finite numbers, its unit one
    the contract may spell (or none), measured_base not below its dimension's least value
    (units.Dim.minimum: no negative rate, size, time or count), 0 or not below SMALLEST
    in size (no subnormal), and measured x the unit's factor. Anything else would be
    compared on a number no run wrote, or left out in silence: an InputError naming the
    line, the field and what was expected."""
    if "measured_base" not in line:
        return  # no figure: a rule's, a version's, a case that could not measure
    base, written, unit = line["measured_base"], line.get("measured"), line.get("unit") or ""
    measured = finite(written)  # measured_base is a number: its shape says so
    if measured is None:
        raise InputError(f"{where}: measured: expected {IN_UNIT}, found {found(written)}")
    if unit and unit not in UNITS:
        raise InputError(f"{where}: unit: expected a unit pytest-cluster writes (as a "
                         f"contract spells it: GB/s, TFLOPS, s, ...) or none, found "
                         f"{found(unit)}")
    dim, factor = UNITS[unit] if unit else (None, 1.0)
    least, what = (dim.minimum, dim.label) if dim is not None else (0.0, UNITLESS)
    if base < least:
        floor = "be negative" if least == 0 else "be below absolute zero"
        raise InputError(f"{where}: measured_base: expected a number of at least {least:g} "
                         f"(a {what} cannot {floor}), found {found(base)}")
    if base and abs(base) < SMALLEST:
        raise InputError(f"{where}: measured_base: expected 0 or a figure of at least "
                         f"{SMALLEST:.4g} (a figure a run can measure: a subnormal number is "
                         f"none, and any figure compared with it is beyond every share of "
                         f"it), found {found(base)}")
    if not math.isclose(base / factor, measured, rel_tol=AGREE):
        raise InputError(f"{where}: measured_base: expected measured x the unit's factor "
                         f"({format_number(measured)}{' ' + unit if unit else ''}: "
                         f"{measured * factor:.4g}), found {found(base)}: not the figure as "
                         "its run wrote it")


class BaselineEnd(TypedDict, total=False):
    """A baseline's end line, with only the fields read (LINES['end'])."""

    status: str


@dataclass(frozen=True)
class BaselineResults:
    """What the comparison reads of a baseline's results.jsonl: its run line, result
    lines and end line (None when the run was cut off), each with only the fields read."""

    run: RunLine  # its keys of LINES['run']
    results: list[ResultLine]  # their keys of LINES['result']
    end: BaselineEnd | None

    @property
    def status(self) -> str:
        return str(self.end.get("status", INTERRUPTED)) if self.end is not None \
            else INTERRUPTED


#: A run's file opened as it is: never through a link, never waiting on a fifo.
OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def not_regular(name: str, mode: int) -> InputError:
    """Why a file of the run that is no regular file is refused; only its name inside
    the run is said, never where a link leads."""
    word = kind(mode)
    if word == "symlink":
        return InputError(f"{name}: a symbolic link, not the run's own file (a baseline's "
                          "files are regular files of its directory: a link is never "
                          "followed)")
    return InputError(f"{name}: a {word}, not a regular file (a baseline's files are "
                      "regular files of its directory)")


def check_sizes(run_dir: Path, limits: Limits = ANY_SPEC) -> None:
    """Either file a link, not a regular file or over its limit (what the spec's nodes may
    write): an InputError before anything is read of it (lstat: a link is never
    followed). A file absent is left to the caller."""
    for name in MAX_BYTES:
        try:
            info = (run_dir / name).lstat()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InputError(f"{name}: cannot be read: {exc.strerror or exc}") from None
        if not stat.S_ISREG(info.st_mode):
            raise not_regular(name, info.st_mode)
        limit = limits.max_bytes(name)
        if info.st_size > limit:
            raise too_big(name, info.st_size, limit, limits.what(name))


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading: InputError when it is a link, not a regular file or
    cannot be read (naming it by its name in the run)."""
    try:
        fd = os.open(path, OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise not_regular(path.name, stat.S_IFLNK) from None
        raise InputError(f"{path.name}: cannot be read: {exc.strerror or exc}") from None
    handle = os.fdopen(fd, "rb")
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        handle.close()
        raise not_regular(path.name, mode)
    return handle


def read_inventory(path: Path, limits: Limits = ANY_SPEC) -> InventoryDocument:
    """inventory.json, opened as it is (open_regular): its size, then its counts and keys
    (bound_inventory), then its shape (jsonschema, the costly part, last)."""
    limit = limits.max_bytes(INVENTORY)
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise too_big(path.name, size, limit, limits.what(INVENTORY))
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise InputError(f"{path.name}: cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise too_big(path.name, len(data), limit, limits.what(INVENTORY))
    document = parse(data, path.name)
    bound_inventory(document, limits, path.name)
    kept: InventoryDocument = _checked(INVENTORY_SHAPE, document, path.name)
    return kept


#: The keys a run writes (measure/inventory.py): of the document, a node, a GPU.
DOCUMENT_KEYS = frozenset({"schema", "cluster", "simulated", "taken_at", "complete", "nodes"})
NODE_KEYS = frozenset({"simulated", "hostname", "machine_id", "dmi", "cpu", "memory_bytes",
                       "os", "kernel", "gpus", "software", "nccl_source", "interfaces",
                       "infiniband", "filesystems", UNREADABLE})
GPU_KEYS = frozenset({*GPU_FIELDS, UNREADABLE})


def _no_other_keys(value: Any, known: frozenset[str], where: str) -> None:
    if not isinstance(value, dict):
        return  # its shape is jsonschema's to say
    other = next((key for key in value if key not in known), None)
    if other is not None:
        raise InputError(f"{where}: the key {cut(other)}, which no run writes (expected "
                         f"some of {', '.join(sorted(known))})")


def _at_most(items: Any, most: int, what: str, where: str) -> None:
    if isinstance(items, list) and len(items) > most:
        raise InputError(f"{where}: {len(items)} {what}, more than {most}")


def bound_inventory(document: Any, limits: Limits, name: str) -> None:
    """The cheap bounds of an inventory, before its shape is checked: no more nodes than
    the spec names, GPUs per node than it allows, devices than MAX_DEVICES, and no key
    that no run writes; InputError naming the file, where, and what was allowed."""
    _no_other_keys(document, DOCUMENT_KEYS, name)
    nodes = document.get("nodes") if isinstance(document, dict) else None
    if not isinstance(nodes, dict):
        return
    if len(nodes) > limits.nodes:
        raise InputError(f"{name}: {len(nodes)} nodes, more than the {limits.nodes} "
                         "the spec names (cluster.nodes): not a baseline of this cluster")
    for node, entry in nodes.items():
        where = f"{name}: {json_path(['nodes', node])}"
        _no_other_keys(entry, NODE_KEYS, where)
        if isinstance(entry, dict):
            _bound_node(entry, limits, where)


def _bound_node(entry: Mapping[str, object], limits: Limits, where: str) -> None:
    """One node's record: its GPUs (counted, their keys known) and its devices."""
    gpus = entry.get("gpus")
    if isinstance(gpus, list) and len(gpus) > limits.gpus_per_node:
        raise InputError(f"{where}.gpus: {len(gpus)} GPUs, more than the "
                         f"{limits.gpus_per_node} per node {limits.gpus_from} allows")
    for index, gpu in enumerate(gpus if isinstance(gpus, list) else ()):
        _no_other_keys(gpu, GPU_KEYS, f"{where}.gpus[{index}]")
    for key, most in MAX_DEVICES.items():
        _at_most(entry.get(key), most, key, f"{where}.{key}")
    _devices_of(entry, where)


def _devices_of(entry: Mapping[str, object], where: str) -> None:
    """The lists inside a node's devices: an HCA's ports, a filesystem's disks."""
    for key, inner, most in (("infiniband", "ports", MAX_PORTS),
                             ("filesystems", "block_devices", MAX_DISKS)):
        items = entry.get(key)
        for index, item in enumerate(items if isinstance(items, list) else ()):
            if isinstance(item, dict):
                _at_most(item.get(inner), most, inner, f"{where}.{key}[{index}].{inner}")


def read_results(path: Path, limits: Limits = ANY_SPEC) -> BaselineResults:
    """Every line of `path` checked; a last line cut in half (a killed writer) is left
    out, as results.read_results does, and blank lines are."""
    limit = limits.max_bytes(RESULTS)
    run: RunLine = {}
    results: list[ResultLine] = []
    end: BaselineEnd | None = None
    size = 0
    try:
        with open_regular(path) as lines:
            for number, line in enumerate(lines, 1):
                size += len(line)
                if size > limit:
                    raise too_big(path.name, size, limit, limits.what(RESULTS))
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
                    _figure_checked(kept, where)
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
