"""Probe once, assert many: one run of each probe call per node, shared across processes.

Results live as JSON files in one directory that the controller creates and passes to
pytest-xdist workers; a file lock makes the first process run the probe and the others
wait for its results.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar, cast

from pytest_cluster.launchers.result import ProbeResult
from pytest_cluster.probes import ProbeCall

T = TypeVar("T")
#: A document of ours (ProbeCache.document): what its computation returned.
D = TypeVar("D", bound=Mapping[str, object])
Runner = Callable[[ProbeCall, Sequence[str]], dict[str, ProbeResult]]


def write_by_node(target: Path, results: dict[str, ProbeResult]) -> None:
    """`{"node": result, ...}` with a node a line, encoded a node at a time: a thousand
    nodes' GPU measurements are never one string in memory (as one indented text they
    were 31 MB, and raised the run's peak memory by 200 MB while it was made). Replaces
    `target` whole."""
    partial = target.with_suffix(".tmp")
    with partial.open("w", encoding="utf-8") as out:
        write_object(out, ((node, result.to_json()) for node, result in results.items()))
        out.write("\n")
    os.replace(partial, target)


def write_object(out: IO[str], items: Iterable[tuple[str, Any]]) -> None:
    """A JSON object to `out`, a key a line, each value encoded as it is reached (never
    the whole object as one string)."""
    out.write("{")
    for index, (key, value) in enumerate(items):
        out.write(f"{',' if index else ''}\n{json.dumps(key, allow_nan=False)}: "
                  f"{json.dumps(value, sort_keys=True, allow_nan=False)}")
    out.write("\n}")


class ProbeCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._memo: dict[str, dict[str, ProbeResult]] = {}
        self._documents: dict[str, Mapping[str, object]] = {}  # read once per process
        self._kept: dict[Hashable, object] = {}

    def _load(self, path: Path) -> dict[str, ProbeResult]:
        records = json.loads(path.read_text(encoding="utf-8"))
        return {node: ProbeResult.from_json(record) for node, record in records.items()}

    def _once(self, key: str, read: Callable[[Path], T], make: Callable[[Path], T]) -> T:
        """What is stored under `key`: read if some process of this run stored it, else
        made and stored by `make` (given where), under the key's lock: the first process
        makes it, the others wait and read it."""
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.path(key)
        with open(self.directory / f"{key}.lock", "w", encoding="ascii") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return read(target) if target.exists() else make(target)

    def get(self, call: ProbeCall, nodes: Sequence[str], run: Runner) -> dict[str, ProbeResult]:
        """Results of `call` on all `nodes`, running it only if no process has yet."""
        key = call.key()
        if key in self._memo:
            return self._memo[key]

        def make(target: Path) -> dict[str, ProbeResult]:
            results = run(call, nodes)
            write_by_node(target, results)
            (self.directory / f"{key}.call.json").write_text(
                json.dumps({"probe": call.name, "args": list(call.args)}, allow_nan=False),
                encoding="utf-8")
            return results

        self._memo[key] = results = self._once(key, self._load, make)
        return results

    def peek(self, call: ProbeCall) -> dict[str, ProbeResult] | None:
        """The results of `call` if some process of this run has them; never runs it."""
        key = call.key()
        if key not in self._memo:
            target = self.directory / f"{key}.json"
            if not target.exists():
                return None
            self._memo[key] = self._load(target)
        return self._memo[key]

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        """Held while a measurement that loads the nodes runs (GPU load, storage I/O,
        collectives): pytest-xdist workers take turns, so no measurement runs beside
        another one and skews it. Taken inside a result's own lock, never around one."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / "measuring.lock", "w", encoding="ascii") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def document(self, key: str, compute: Callable[[], D]) -> D:
        """A JSON document computed once per run (e.g. a benchmark job over many nodes),
        under the same lock discipline as probe results. Read (or computed) once per
        process: later calls return the same document, whatever the cluster's size. A
        process that reads it gets what `compute` returned in the one that made it, as
        JSON gives it back (its tuples as lists)."""
        if key in self._documents:
            return cast("D", self._documents[key])

        def read(target: Path) -> D:
            found = json.loads(target.read_text(encoding="utf-8"), object_hook=_decoded)
            if not isinstance(found, dict):
                raise ValueError(f"{target}: not a JSON object")
            return cast("D", found)  # as `compute` made it, in the process that did

        def make(target: Path) -> D:
            with self.alone():
                document = compute()
            partial = target.with_suffix(".tmp")
            partial.write_text(json.dumps(_encoded(document), allow_nan=False),
                               encoding="utf-8")
            os.replace(partial, target)
            return document

        self._documents[key] = document = self._once(key, read, make)
        return document

    def kept(self, key: Hashable, make: Callable[[], T]) -> T:
        """What `make` returns, made once per process and kept under `key` (a document's
        record read from its JSON, a key of the spec's sections): every case that asks
        again, at a thousand nodes, gets it without making it again."""
        if key not in self._kept:
            self._kept[key] = make()
        return cast("T", self._kept[key])

    def path(self, key: str) -> Path:
        """Where the document or probe results stored under `key` are."""
        return self.directory / f"{key}.json"


def document_key(prefix: str, *parts: object) -> str:
    """The cache's name for a document computed once per run from `parts` (a section of
    the spec, a job's scope): 'interconnect-1a2b3c4d5e6f7a8b'."""
    text = json.dumps(parts, sort_keys=True, default=str, allow_nan=False)
    return f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


#: A number that is not finite in a document of ours (a search's busbw where no job ran:
#: NaN), written in strict JSON as {NON_FINITE: "nan"} and read back as the number.
NON_FINITE = "non_finite"


def _encoded(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return {NON_FINITE: repr(value)}
    if isinstance(value, dict):
        return {key: _encoded(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encoded(item) for item in value]
    return value


def _decoded(found: dict[str, object]) -> object:
    if len(found) == 1 and found.get(NON_FINITE) in ("nan", "inf", "-inf"):
        return float(str(found[NON_FINITE]))
    return found

