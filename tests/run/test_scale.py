"""pytester, simulated clusters: what keeps a run's cost per case and its memory flat in the
cluster's size - the slow-node search recorded once and referred to by id, each
node_network line the same size whatever the node count, the controller's line without its
bulk (a case's own bulk let go: tests/run/test_memory.py; the collector: test_collector_gc.py;
JUnit spooled: test_junit_spool.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_cluster.evidence.sinks.results import ResultLine

SPEC = """\
cluster: {{name: scale, nodes: "n[01-{nodes:02d}]", launcher: sim}}
host:
  cpu_cores: ">= 1"
interconnect:
  intra_node: {{kind: nvlink, rate: 450 GB/s}}
  inter_node: {{kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}}
  payloads: [4 GiB]
  node_counts: [2]
  busbw: ">= 80%"
  ranks_per_node: 8
sim:
  gpus_per_node: 8
  faults: [{{node: n02, link_factor: 0.5}}]
"""


def run(pytester: pytest.Pytester, nodes: int, *args: str, apart: bool = False) -> Path:
    """`apart`: in a process of its own (in this one, pytester records every hook call,
    and with it every item)."""
    (pytester.path / "trial.yaml").write_text(SPEC.format(nodes=nodes), encoding="utf-8")
    runpytest = pytester.runpytest_subprocess if apart else pytester.runpytest
    runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", *args)
    return pytester.path / "reports" / "latest"


def results(run_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    """(line as written, line parsed) of each result line."""
    text = (run_dir / "results.jsonl").read_text(encoding="utf-8")
    parsed = [(line, json.loads(line)) for line in text.splitlines()]
    return [(line, record) for line, record in parsed if record["type"] == "result"]


def node_network(run_dir: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    return {record["node"]: (line, record) for line, record in results(run_dir)
            if "test_node_network" in record["nodeid"]}


def test_the_search_is_written_once_and_each_node_refers_to_it(
        pytester: pytest.Pytester) -> None:
    run_dir = run(pytester, 6)
    cases = node_network(run_dir)
    assert sorted(cases) == [f"n{i:02d}" for i in range(1, 7)]
    files = {record["raw"]["search"]["file"] for _, record in cases.values()}
    assert len(files) == 1  # one search, the same for every node
    search = json.loads((run_dir / files.pop()).read_text(encoding="utf-8"))
    assert sorted(search["verdicts"]) == sorted(cases)
    assert search["verdicts"]["n02"]["status"] == "slow"
    for node, (_, record) in cases.items():
        # each node keeps its own verdict, partners and busbw; never the whole search
        assert "verdicts" not in record["raw"]["search"]
        own = record["raw"]["verdict"]
        assert own["node"] == node and own == search["verdicts"][node]
        assert record["measured_base"] == own["busbw"]
        assert record["raw"]["search"]["rounds"] == len(search["rounds"])
    assert cases["n02"][1]["outcome"] == "failed"
    assert "so this node is the slow one" in cases["n02"][1]["message"]
    assert {r["outcome"] for n, (_, r) in cases.items() if n != "n02"} == {"passed"}


@pytest.mark.slow
def test_a_node_network_line_does_not_grow_with_the_cluster(
        pytester: pytest.Pytester) -> None:
    small = max(len(line) for line, _ in node_network(run(pytester, 4)).values())
    large = max(len(line) for line, _ in node_network(run(pytester, 32)).values())
    # 8 times the nodes: a few more characters in names and ids, not 8 times the line
    assert large < small + 100, (small, large)
    assert large < 3000


def test_the_controller_holds_a_line_without_its_bulk() -> None:
    from pytest_cluster.evidence.record.ledger import held

    line = {"type": "result", "case": "acceptance/test_gpus.py::test_gpu_ecc[n1-gpu0]",
            "clause": "gpus.ecc", "node": "n1", "outcome": "failed", "phase": "call",
            "measured": 3.0, "unit": "", "error_kind": None, "method": "NVML " * 40,
            "raw": {"volatile": list(range(100))}, "probe_run": "x" * 32,
            "busbw_GBps[4GiB]": 1.0}
    kept: Mapping[str, object] = held(cast("ResultLine", line))
    assert {k: kept[k] for k in ("case", "clause", "node", "outcome", "phase", "measured",
                                 "unit", "error_kind")} == {
        k: line[k] for k in ("case", "clause", "node", "outcome", "phase", "measured", "unit",
                             "error_kind")}
    assert not {"raw", "method", "probe_run", "busbw_GBps[4GiB]"} & set(kept)
    sweep = {"sweep": [[2**30, 3e11]], "nodes": ["n1"], "details": {"x": 1}}
    charts = held(cast("ResultLine", {**line, "raw": sweep}))["raw"]
    assert charts == {"sweep": [[2**30, 3e11]]}  # the charts'


