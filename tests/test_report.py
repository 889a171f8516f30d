"""The contract summary's tallies: per clause, who passed, who failed, the worst value."""

from __future__ import annotations

from typing import Any

from pytest_cluster.report import tally


def rec(node: str, measured: Any, outcome: str = "passed", gpu: int | None = None,
        key: str = "gpus.k", comparison: str = ">=") -> dict[str, Any]:
    record = {"spec_key": key, "node": node, "measured": measured, "outcome": outcome,
              "comparison": comparison, "unit": "TFLOPS", "requirement": ">= 700 TFLOPS"}
    if gpu is not None:
        record["gpu"] = gpu
    return record


def test_numbers_keep_the_worst_and_where() -> None:
    [t] = tally([rec("n1", 790.0, gpu=0), rec("n1", 640.0, "failed", gpu=1),
                 rec("n2", 795.0, gpu=0)])
    assert t.passed == {"n1 gpu0", "n2 gpu0"}
    assert t.failed == {"n1 gpu1"}
    assert t.worst_text() == "640 TFLOPS (n1 gpu1)"
    [upper] = tally([rec("n1", 60.0, comparison="<="), rec("n2", 91.0, "failed",
                                                            comparison="<=")])
    assert upper.worst_text() == "91 TFLOPS (n2)"


def test_few_text_values_are_all_shown() -> None:
    [t] = tally([rec("n1", "2.4.0"), rec("n2", "2.4.0"), rec("n3", "2.3.1")])
    assert t.worst_text() == "2.3.1 (n3); 2.4.0 (n1, n2)"
    [t] = tally([rec(f"n{i}", "2.4.0") for i in range(1, 7)] + [rec("n9", "2.3", "failed")])
    assert t.worst_text() == "2.3 (n9)"
    [t] = tally([rec(f"n{i}", "2.4.0") for i in range(1, 7)])
    assert t.worst_text() == "2.4.0 (n1, n2, n3 and 3 more)"


def test_many_text_values_show_the_failing_ones() -> None:
    records = [rec("n1", f"none (max {60 + i} C)", gpu=i) for i in range(8)]
    [t] = tally(records)
    assert t.worst_text() == "8 different values, all as required"
    records += [rec("n2", f"hw_slowdown (max {70 + i} C)", "failed", gpu=i) for i in range(7)]
    [t] = tally(records)
    assert t.worst_text() == (
        "hw_slowdown (max 70 C) (n2 gpu0); hw_slowdown (max 71 C) (n2 gpu1); hw_slowdown "
        "(max 72 C) (n2 gpu2); hw_slowdown (max 73 C) (n2 gpu3); hw_slowdown (max 74 C) "
        "(n2 gpu4); and 2 more")


def test_version_summaries_stay_short_on_big_clusters() -> None:
    from acceptance.test_software import _summary

    many = [f"n{i:02d}" for i in range(64)]
    assert _summary({"2.4.0": many}) == "2.4.0 on all 64 node(s)"
    assert _summary({"2.4.0": ["a", "b"]}) == "2.4.0 on a, b"
    assert _summary({"2.4.0": many[:63], "2.3.1": ["n63"]}) == (
        "2.4.0 on 63 nodes (n00, n01, ...); 2.3.1 on n63")
