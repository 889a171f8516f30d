"""measure/cache.py: probe once, assert many. A probe's results and a run's documents are
made by one process and read back the same by the others, under names every process
derives alike; what a process kept it does not make again; a cache file that is not what
the cache wrote is an error, never a reason to measure again."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.launchers import ErrorKind, ProbeResult
from pytest_cluster.measure.cache import ProbeCache, document_key, write_by_node
from pytest_cluster.probes import ProbeCall

ROOT = Path(__file__).resolve().parents[2]


def _count_runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _cache_worker(directory: str, log: str) -> None:
    def run(call: ProbeCall, nodes: Sequence[str]) -> dict[str, ProbeResult]:
        with open(log, "a") as handle:
            handle.write(f"{os.getpid()}\n")
        time.sleep(0.3)
        return {n: ProbeResult(node=n, probe=call.name, data={"pid": os.getpid()}) for n in nodes}

    ProbeCache(Path(directory)).get(ProbeCall("host"), ["n1", "n2"], run)


def test_cache_runs_a_probe_once_across_processes(tmp_path: Path) -> None:
    import multiprocessing

    log = tmp_path / "runs.log"
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_cache_worker, args=(str(tmp_path / "c"), str(log)))
               for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    assert _count_runs(log) == 1


def test_cached_results_are_a_node_a_line_and_read_back_the_same(tmp_path: Path) -> None:
    results = {n: ProbeResult(node=n, probe="host", data={"name": n, "q": 'a"\nb'},
                              simulated=True, exit_code=0)
               for n in ("n1", "n2", 'odd"name')}
    target = tmp_path / "host.json"
    write_by_node(target, results)
    lines = target.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "{" and lines[-1] == "}" and len(lines) == 5
    assert lines[1].startswith('"n1": {') and lines[3].startswith('"odd\\"name": {')
    assert not list(tmp_path.glob("*.tmp"))
    cache = ProbeCache(tmp_path)
    assert cache._load(target) == results  # what another process reads

    def never(call: ProbeCall, nodes: Sequence[str]) -> dict[str, ProbeResult]:
        raise AssertionError("ran again")

    cache.directory = tmp_path / "c"
    cache.get(ProbeCall("host"), list(results), lambda c, n: results)
    assert ProbeCache(tmp_path / "c").get(ProbeCall("host"), list(results), never) == results


def test_a_document_with_numbers_that_are_not_finite_is_kept_as_strict_json(
        tmp_path: Path) -> None:
    """A search's busbw where no job ran is NaN: the run's file of it is strict JSON (no
    NaN token), and another process reads the same numbers back."""
    document: dict[str, Any] = {"busbw": math.nan, "rounds": [[["n1"], math.inf]], "ok": 1.5}
    made = ProbeCache(tmp_path).document("search-x", lambda: document)
    assert made is document
    (written,) = [p for p in tmp_path.rglob("*.json") if "search-x" in p.name]
    text = written.read_text()
    assert "NaN" not in text and "Infinity" not in text
    again = ProbeCache(tmp_path).document("search-x", lambda: {**document, "computed": 1})
    assert math.isnan(again["busbw"]) and again["rounds"] == [[["n1"], math.inf]]
    assert again["ok"] == 1.5


#: Parts of a document's name as the measurements give them: texts, numbers, nested
#: records (their keys in any order), a tuple.
PARTS: tuple[object, ...] = ("text", 3, 2.5, {"b": [1, "x"], "a": None}, ("n1", "n2"))

KEYS_ELSEWHERE = """\
import json, sys
from pytest_cluster.measure.cache import document_key
from pytest_cluster.probes import ProbeCall
parts = json.loads(sys.argv[1])
print(json.dumps([document_key("interconnect", *parts[:-1], tuple(parts[-1])),
                  ProbeCall("storage", ("--path", "/shared")).key()]))
"""


def test_the_cache_names_a_document_and_a_call_alike_in_every_process() -> None:
    """Another interpreter (another hash seed, as an xdist worker has) derives the same
    names, so a worker finds what another stored."""
    here = [document_key("interconnect", *PARTS), ProbeCall("storage", ("--path", "/shared")).key()]
    done = subprocess.run([sys.executable, "-c", KEYS_ELSEWHERE, json.dumps(PARTS)],
                          capture_output=True, text=True, check=True, cwd=ROOT, timeout=60,
                          env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert json.loads(done.stdout) == here


def test_a_documents_name_is_its_prefix_and_changes_with_its_parts_not_their_order() -> None:
    key = document_key("interconnect", *PARTS)
    prefix, digest = key.rsplit("-", 1)
    assert prefix == "interconnect" and len(digest) == 16
    int(digest, 16)  # hexadecimal
    assert document_key("interconnect", "text", 3, 2.5, {"a": None, "b": [1, "x"]},
                        ("n1", "n2")) == key
    assert document_key("interconnect", *PARTS[:-1], ("n1", "n3")) != key
    assert document_key("training", *PARTS) != key


def test_a_document_is_computed_once_and_read_back_by_another_process_the_same(
        tmp_path: Path) -> None:
    """The process that makes it keeps what `compute` returned; another (a cache of its
    own on the same directory) reads it without computing, as JSON gives it back."""
    computed: list[int] = []

    def compute() -> dict[str, object]:
        computed.append(1)
        return {"nodes": ("n1", "n2"), "busbw": 12.5, "by_node": {"n1": {"ok": True}}}

    cache = ProbeCache(tmp_path)
    made = cache.document("search-1", compute)
    assert cache.document("search-1", compute) is made
    assert cache.path("search-1").exists()

    def never() -> dict[str, object]:
        raise AssertionError("computed again")

    read = ProbeCache(tmp_path).document("search-1", never)
    assert read == {"nodes": ["n1", "n2"], "busbw": 12.5, "by_node": {"n1": {"ok": True}}}
    assert made["nodes"] == ("n1", "n2")  # its tuple, in the process that made it
    assert len(computed) == 1
    assert ProbeCache(tmp_path).document("search-2", compute) == made
    assert len(computed) == 2  # another key is another document


def test_what_a_process_kept_it_does_not_make_again(tmp_path: Path) -> None:
    made: list[object] = []

    def make(value: object) -> object:
        made.append(value)
        return [value]

    cache = ProbeCache(tmp_path)
    first = cache.kept(("checkpoint_id", "/shared"), lambda: make(1))
    assert cache.kept(("checkpoint_id", "/shared"), lambda: make(2)) is first == [1]
    assert cache.kept(("checkpoint_id", "/scratch"), lambda: make(3)) == [3]
    assert made == [1, 3]
    assert ProbeCache(tmp_path).kept(("checkpoint_id", "/shared"), lambda: make(4)) == [4]
    assert list(tmp_path.iterdir()) == []  # kept in the process, never written


def test_peek_reads_what_a_process_stored_and_never_runs_the_probe(tmp_path: Path) -> None:
    call = ProbeCall("host")
    assert ProbeCache(tmp_path).peek(call) is None
    results = {"n1": ProbeResult("n1", "host", {"a": 1}),
               "n2": ProbeResult("n2", "host", None, ErrorKind.UNREACHABLE, "no route")}
    ProbeCache(tmp_path).get(call, list(results), lambda c, n: results)
    assert ProbeCache(tmp_path).peek(call) == results
    assert ProbeCache(tmp_path).peek(ProbeCall("host", ("--other",))) is None


@pytest.mark.parametrize(("stored", "message"), [
    ("{\"busbw\": 1", "Expecting"), ("[1, 2]", "not a JSON object"), ("", "Expecting value")])
def test_a_document_file_that_is_no_document_is_an_error_not_a_reason_to_compute(
        tmp_path: Path, stored: str, message: str) -> None:
    """A cut or foreign file where a document is stored raises (a ValueError) rather than
    being taken for absent: the cache never measures again over what it cannot read."""
    cache = ProbeCache(tmp_path)
    cache.path("search-1").write_text(stored, encoding="utf-8")

    def never() -> dict[str, object]:
        raise AssertionError("computed over a stored file")

    with pytest.raises(ValueError, match=message):
        cache.document("search-1", never)


def test_a_probe_results_file_that_is_no_json_is_an_error_not_a_reason_to_run(
        tmp_path: Path) -> None:
    call = ProbeCall("host")
    ProbeCache(tmp_path).path(call.key()).write_text('{"n1": {"node"', encoding="utf-8")

    def never(call: ProbeCall, nodes: Sequence[str]) -> dict[str, ProbeResult]:
        raise AssertionError("ran over a stored file")

    with pytest.raises(ValueError):
        ProbeCache(tmp_path).get(call, ["n1"], never)
    with pytest.raises(ValueError):
        ProbeCache(tmp_path).peek(call)
