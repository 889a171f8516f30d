"""The spec's errors, located and echoing the value as the spec wrote it."""

from __future__ import annotations

import yaml

from pytest_cluster.contract.reading.located_errors import MAX_KEPT, Ctx, as_written


def test_an_error_echoes_the_number_as_written_not_as_yaml_read_it() -> None:
    node = yaml.compose("1.5e+3")
    assert as_written(node, "expected a whole number, got 1500.0") == \
        "expected a whole number, got 1.5e+3"
    assert as_written(node, "expected a whole number, got 1500.05") == \
        "expected a whole number, got 1500.05"  # another number: left as it is


def test_errors_are_given_in_the_files_order_and_counted_past_those_kept() -> None:
    ctx = Ctx("t.yaml")
    ctx.error(yaml.compose("\n\nlate"), "b", "late")
    ctx.error(yaml.compose("early"), "a", "early")
    assert [(e.path, e.line) for e in ctx.in_order()] == [("a", 1), ("b", 3)]
    assert ctx.failed("a") and not ctx.failed("c") and not ctx.full
    for _ in range(MAX_KEPT):
        ctx.error(None, "c", "again")
    assert ctx.full and ctx.count == MAX_KEPT + 2 and len(ctx.errors) == MAX_KEPT
