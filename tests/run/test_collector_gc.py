"""The cyclic garbage collector during a contract run: tuned (and what collection built
frozen) while the cases run, put back after; left alone without --cluster."""

from __future__ import annotations

import json

import pytest

from tests.run.test_scale import run


@pytest.mark.slow
def test_the_collector_is_tuned_while_the_cases_run_and_put_back_after(
        pytester: pytest.Pytester) -> None:
    """What collection built is frozen and young collections are rarer while the cases
    run; the process gets its own settings back when the run ends."""
    import gc

    from pytest_cluster.run.collector_gc import RUN_THRESHOLDS

    pytester.syspathinsert()
    pytester.makepyfile(gcspy="""
        import gc, json, pathlib
        def pytest_runtest_call(item):
            pathlib.Path("gc.json").write_text(json.dumps(
                [gc.get_threshold(), gc.get_freeze_count()]))
    """)
    before = (gc.get_threshold(), gc.get_freeze_count())
    run(pytester, 2, "-p", "gcspy")
    during = json.loads((pytester.path / "gc.json").read_text(encoding="utf-8"))
    assert tuple(during[0]) == RUN_THRESHOLDS != before[0]
    assert during[1] > before[1] + 1000
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_without_a_spec_the_collector_is_left_alone(pytester: pytest.Pytester) -> None:
    import gc

    pytester.makepyfile("""
        import gc
        def test_it():
            assert gc.get_freeze_count() == 0
            assert gc.get_threshold()[0] != 20_000
    """)
    assert gc.get_freeze_count() == 0
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
