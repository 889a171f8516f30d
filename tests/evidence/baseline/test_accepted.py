"""The accepted run a baseline is: its figures, its limits, what makes it a weaker one."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from pytest_cluster.contract import parse_spec
from pytest_cluster.evidence.baseline.accepted import Baseline, figures
from pytest_cluster.evidence.sinks.results import ResultLine
from tests.evidence.baseline.test_compare import SPEC, figure


def test_only_figures_compared_one_way_are_kept() -> None:
    kept = figures([
        {**figure(1.0, 1.0, ""), "outcome": "passed"},
        {**figure(8.0, 1.0, "", "=="), "case": "a::count", "outcome": "passed"},
        cast("ResultLine", {**figure(1.0, 1.0, ""), "case": "a::b", "measured_base": None,
                            "outcome": "failed"}),
        {**figure(1.0, 1.0, ""), "case": "a::c", "outcome": "not_run"},
        {**figure(1.0, 1.0, ""), "case": "a::d", "measured_base": True, "outcome": "passed"},
    ])
    assert list(kept) == ["acceptance/test_gpus.py::test_gpu_matmul[gpu-003-gpu6-bf16]"]


def test_a_weaker_baseline_says_why() -> None:
    spec = parse_spec(SPEC.format(faults="", baseline=""), "t.yaml")
    same = Baseline(Path("b"), "2026-11-02", (), "0" * 64, {"nodes": {}}, {}, None,
                    "base", spec.sha256, "complete")
    assert same.notes(spec) == []
    other = Baseline(Path("b"), "2026-11-02", (), "0" * 64, {"nodes": {}}, {}, None,
                     "other", "f" * 64, "partial")
    assert other.notes(spec) == [
        "it is of cluster other, this run of base",
        f"its spec differs from this run's (sha256 ffffffffffff vs {spec.sha256[:12]}): only "
        "the cases both have are compared",
        "it ran partial: figures it did not measure have nothing to compare with"]


def test_a_baseline_is_bounded_by_what_the_spec_allows() -> None:
    from pytest_cluster.contract import parse_spec
    from pytest_cluster.evidence.baseline.accepted import limits
    exact = parse_spec("cluster: {name: c, nodes: 'n[1-6]', launcher: sim}\n"
                           "gpus: {count: 4}\nsim: {gpus_per_node: 4}\n", "s.yaml")
    assert (limits(exact).nodes, limits(exact).gpus_per_node) == (6, 4)
    assert limits(exact).gpus_from == "the spec's gpus.count (4)"
    sim = parse_spec("cluster: {name: c, nodes: [a, b], launcher: sim}\n"
                         "host: {cpu_cores: '>= 1'}\nsim: {gpus_per_node: 2}\n", "s.yaml")
    assert (limits(sim).nodes, limits(sim).gpus_per_node) == (2, 2)
    assert limits(sim).max_bytes("inventory.json") == 64 * 2**10 + 2 * 256 * 2**10
    real = parse_spec("cluster: {name: c, nodes: [a], launcher: ssh}\n"
                          "host: {cpu_cores: '>= 1'}\n", "s.yaml")
    assert limits(real).gpus_per_node == 64
