"""What the rest of the code asks of launchers, and what is kept for them: whether a run is
simulated, each launcher's default interpreter, a result's JSON, the probe cache. Each
launcher module's own tests are in tests/launchers/test_<module>.py (the registry's in
tests/test_launchers.py)."""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.contract import load_spec, parse_spec
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.evidence.record.summary import is_simulated
from pytest_cluster.launchers import ErrorKind, ProbeResult
from pytest_cluster.measure.cache import ProbeCache, write_by_node
from pytest_cluster.probes import ProbeCall
from tests.launchers.test_local import EXAMPLES, cluster


def test_a_run_is_simulated_when_its_launcher_is(monkeypatch: pytest.MonkeyPatch) -> None:
    assert is_simulated(load_spec(EXAMPLES / "sim-h100.yaml")) is True
    assert is_simulated(cluster()) is False
    # asked of the launcher's declaration, not inferred from a name
    monkeypatch.setitem(KINDS, "local", dataclasses.replace(KINDS["local"], simulated=True))
    assert is_simulated(cluster()) is True


def test_default_interpreter_is_the_launchers() -> None:
    """Local nodes are this machine: pytest's own interpreter (and its torch); elsewhere
    python3 on the nodes' PATH."""
    assert KINDS["local"].default_python() == sys.executable
    assert KINDS["ssh"].default_python() == KINDS["slurm"].default_python() == "python3"


@pytest.mark.parametrize(("section", "python"), [
    ("launcher: local", sys.executable),
    ("launcher: ssh", "python3"),
    ("python: python3", "python3"),  # named in the spec: kept as written
])
def test_spec_takes_the_launchers_default_interpreter(section: str, python: str) -> None:
    spec = parse_spec(f"cluster: {{name: x, nodes: a, {section}}}\n"
                      "storage: [{path: /tmp, free: '>= 1 B'}]\n", "t.yaml")
    assert spec.cluster.python == python
    assert spec.storage[0].python == python


def test_result_json_round_trip() -> None:
    result = ProbeResult(node="n1", probe="host", data=None, error=ErrorKind.TIMEOUT,
                         message="m", exit_code=None, stderr_tail="e", duration_s=1.0)
    assert ProbeResult.from_json(result.to_json()) == result


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
