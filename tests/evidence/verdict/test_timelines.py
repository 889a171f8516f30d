"""timelines.py: a soak's rounds as each node's spans on one time axis, the time no round
ran not observed, and how durations and round numbers are written."""

from __future__ import annotations

from pathlib import Path

from pytest_cluster.evidence.verdict.sla import FAILED, HEALTHY, UNREACHABLE, Span
from pytest_cluster.evidence.verdict.timelines import Round, clock, ranges, timelines


def _round(number: int, start: float, end: float, **states: str) -> Round:
    return Round(number, Path(f"r{number}"), start, end, "complete", dict(states))


def test_a_rounds_state_lasts_until_the_next_round_and_a_stop_is_not_observed() -> None:
    found = timelines([_round(1, 0, 95, a=HEALTHY, b=HEALTHY),
                       _round(2, 100, 190, a=HEALTHY, b=UNREACHABLE),
                       _round(3, 1000, 1100, a=FAILED, b=HEALTHY)], join_s=60)
    assert found.spans["b"] == [Span(0, 100, HEALTHY), Span(100, 190, UNREACHABLE),
                                Span(1000, 1100, HEALTHY)]
    assert found.window == (0, 1100)
    assert found.unobserved_s == 810  # 190 to 1000: the soak was stopped
    assert found.observed_s == 290


def test_the_pause_before_a_resumed_session_or_after_a_stopped_round_is_not_observed(
        ) -> None:
    """Within `join_s`, yet no pause between rounds of one session: after a round that was
    interrupted (Ctrl-C), and before the first round of a resumed session."""
    stopped = Round(2, Path("r2"), 100, 150, "interrupted", {"a": FAILED})
    found = timelines([_round(1, 0, 95, a=HEALTHY), stopped, _round(3, 156, 200, a=FAILED)])
    assert found.spans["a"] == [Span(0, 100, HEALTHY), Span(100, 150, FAILED),
                                Span(156, 200, FAILED)]
    assert (found.unobserved_s, found.observed_s) == (6, 194)
    resumed = timelines([_round(1, 0, 95, a=HEALTHY), _round(2, 98, 150, a=HEALTHY)],
                        firsts={2})
    assert resumed.spans["a"] == [Span(0, 95, HEALTHY), Span(98, 150, HEALTHY)]
    assert resumed.unobserved_s == 3


def test_a_node_a_round_did_not_judge_is_not_observed_in_it() -> None:
    found = timelines([_round(1, 0, 95, a=HEALTHY, b=HEALTHY), _round(2, 100, 190, a=FAILED),
                       _round(3, 200, 290, a=HEALTHY, b=HEALTHY)])
    assert found.spans["b"] == [Span(0, 100, HEALTHY), Span(200, 290, HEALTHY)]
    assert found.spans["a"] == [Span(0, 100, HEALTHY), Span(100, 200, FAILED),
                                Span(200, 290, HEALTHY)]


def test_rounds_in_any_order_are_taken_by_their_start() -> None:
    rounds = [_round(2, 100, 190, a=FAILED), _round(1, 0, 95, a=HEALTHY)]
    assert timelines(rounds) == timelines(list(reversed(rounds)))
    assert timelines(rounds).window == (0, 190)


def test_no_round_is_no_time() -> None:
    found = timelines([])
    assert (found.spans, found.window, found.unobserved_s, found.observed_s) == (
        {}, (0.0, 0.0), 0.0, 0.0)


def test_a_duration_is_written_as_a_clock() -> None:
    assert [clock(s) for s in (0, 59.6, 3723, 36000, -5)] == [
        "0:00:00", "0:01:00", "1:02:03", "10:00:00", "0:00:00"]


def test_round_numbers_are_written_as_ranges() -> None:
    assert ranges([5, 6, 7, 22, 18, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]) == "5-18, 22"
    assert ranges([]) == ""
    assert ranges(range(1, 200, 2), most=3) == "1, 3, 5 and 97 more range(s)"
