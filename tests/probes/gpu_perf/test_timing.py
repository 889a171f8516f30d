"""probes/gpu_perf/timing.py: timing a measurement with CUDA events, warmed up, and one
failing measurement kept from hiding the others."""

from __future__ import annotations

import statistics
import sys
from typing import Any

import pytest

from pytest_cluster.probes.gpu_perf import timing
from pytest_cluster.probes.gpu_perf.payload import Rate
from tests.probes.gpu_perf.fake import fake_torch, timed


def test_a_measurement_that_fails_is_its_error_never_a_number() -> None:
    def fails() -> Rate:
        raise RuntimeError("CUDA error: an illegal memory access was encountered  ")

    assert timing.errors_to_json(fails) == {
        "error": "RuntimeError: CUDA error: an illegal memory access was encountered"}
    def measured() -> Rate:
        return {"bytes_per_s": 1.0}

    assert timing.errors_to_json(measured) == {"bytes_per_s": 1.0}


def test_an_error_is_kept_short() -> None:
    def fails() -> Rate:
        raise ValueError("x" * 10_000)

    error = timing.errors_to_json(fails)["error"]
    assert len(error) == 500 and error.startswith("ValueError: xxx")


def test_a_summary_is_the_median_the_most_and_the_least() -> None:
    rates = [3.0, 1.0, 10.0, 2.0]
    assert timing.summary(rates) == {"median": statistics.median(rates), "max": 10.0,
                                     "min": 1.0}


class Counted:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def body(self) -> None:
        self.calls.append("body")

    def before(self) -> None:
        self.calls.append("before")


def test_each_call_is_timed_by_its_events_after_the_warm_up() -> None:
    torch = timed([2.0, 4.0, 1.0])
    counted = Counted()
    seconds = timing.timed_events(torch, counted.body, counted.before, warmup=3, iterations=3,
                                  warmup_s=0.0)
    assert seconds == [0.002, 0.004, 0.001]
    warmup, timed_calls = 3, 3
    assert counted.calls == ["before", "body"] * (warmup + timed_calls)


def test_without_before_only_the_body_runs() -> None:
    counted = Counted()
    timing.timed_events(timed([1.0]), counted.body, None, warmup=0, iterations=2,
                        warmup_s=0.0)
    assert counted.calls == ["body", "body"]


def test_torch_is_imported_where_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    torch: Any = fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert timing.load_torch() is torch
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError):
        timing.load_torch()
