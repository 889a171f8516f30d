"""The contract summary's tallies: per clause, who passed, who failed, the worst value."""

from __future__ import annotations

from typing import Any

from pytest_cluster.evidence.record.summary import clause_tallies
from pytest_cluster.evidence.sinks.results import ResultLine


def rec(node: str, measured: Any, outcome: str = "passed", gpu: int | None = None,
        key: str = "gpus.k", comparison: str = ">=") -> ResultLine:
    record: ResultLine = {"spec_key": key, "node": node, "measured": measured, "outcome": outcome,
              "comparison": comparison, "unit": "TFLOPS", "requirement": ">= 700 TFLOPS"}
    if gpu is not None:
        record["gpu"] = gpu
    return record


def test_numbers_keep_the_worst_and_where() -> None:
    [t] = clause_tallies([rec("n1", 790.0, gpu=0), rec("n1", 640.0, "failed", gpu=1),
                 rec("n2", 795.0, gpu=0)])
    assert t.passed == {"n1 gpu0", "n2 gpu0"}
    assert t.failed == {"n1 gpu1"}
    assert t.worst_text() == "640 TFLOPS (n1 gpu1)"
    [upper] = clause_tallies([rec("n1", 60.0, comparison="<="), rec("n2", 91.0, "failed",
                                                            comparison="<=")])
    assert upper.worst_text() == "91 TFLOPS (n2)"


def test_few_text_values_are_all_shown() -> None:
    [t] = clause_tallies([rec("n1", "2.4.0"), rec("n2", "2.4.0"), rec("n3", "2.3.1")])
    assert t.worst_text() == "2.3.1 (n3); 2.4.0 (n1, n2)"
    [t] = clause_tallies([rec(f"n{i}", "2.4.0") for i in range(1, 7)]
                         + [rec("n9", "2.3", "failed")])
    assert t.worst_text() == "2.3 (n9)"
    [t] = clause_tallies([rec(f"n{i}", "2.4.0") for i in range(1, 7)])
    assert t.worst_text() == "2.4.0 (n1, n2, n3 and 3 more)"


def test_many_text_values_show_the_failing_ones() -> None:
    """A health rule held on every GPU, its values differing only in what it saw: the
    finding once, each number's range, where (not '8 different values'). Failed: the
    failing ones."""
    records = [rec("n1", f"none in 110 samples (max {60 + i} C, {640 + i / 10} W, SM clock "
                   "down to 1755 MHz)", gpu=i) for i in range(8)]
    [t] = clause_tallies(records)
    assert t.worst_text() == ("none in 110 samples (max 60 to 67 C, 640.0 to 640.7 W, SM "
                              "clock down to 1755 MHz) (n1 gpu0, n1 gpu1, n1 gpu2 and 5 more)")
    [mixed] = clause_tallies([rec(f"n{i}", f"{name} {i}") for i, name in
                              enumerate(("alpha", "beta", "gamma", "delta"))])
    assert mixed.worst_text() == "4 different values, all as required"  # nothing shared
    records += [rec("n2", f"hw_slowdown (max {70 + i} C)", "failed", gpu=i) for i in range(7)]
    [t] = clause_tallies(records)
    assert t.worst_text() == (
        "hw_slowdown (max 70 C) (n2 gpu0); hw_slowdown (max 71 C) (n2 gpu1); hw_slowdown "
        "(max 72 C) (n2 gpu2); hw_slowdown (max 73 C) (n2 gpu3); hw_slowdown (max 74 C) "
        "(n2 gpu4); and 2 more")
