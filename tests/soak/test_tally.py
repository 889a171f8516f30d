"""soak/tally.py: a case over the rounds, a port down for the flap time, a figure that sags."""

from __future__ import annotations

from typing import cast

from pytest_cluster.contract.model import SoakSpec
from pytest_cluster.evidence.sinks.results import ResultLine
from pytest_cluster.evidence.timelines import ranges
from pytest_cluster.soak import tally as soak_tally
from pytest_cluster.soak.tally import aggregate


def _tallied(*rounds: ResultLine) -> soak_tally.CaseTally:
    tally = soak_tally.Tally()
    for number, record in enumerate(rounds, 1):
        tally.add(number, 0.0, [record], {})
    return tally.cases["c"]


def test_a_case_over_the_rounds_fails_naming_the_rounds_it_failed_in() -> None:
    ok: ResultLine = {"case": "c", "outcome": "passed", "measured": 1}
    bad = cast("ResultLine", {"case": "c", "outcome": "failed",
                              "message": "Failed: gpu3 ecc 4 > 0", "error_kind": None})
    over = aggregate(_tallied(ok, ok, bad, bad))
    assert over["outcome"] == "failed"
    assert over["rounds_failed"] == [[3, 4]]
    assert over["message"] == "failed in 2 of 4 round(s) (rounds 3-4); rounds 3-4: gpu3 ecc 4 > 0"
    down: ResultLine = {"case": "c", "outcome": "failed", "message": "n3 unreachable"}
    spells = [ok] * 4 + [bad] * 14 + [ok] * 3 + [down] + [ok] * 2
    over = aggregate(_tallied(*spells))
    assert over["rounds_failed"] == [[5, 18], [22, 22]]
    assert over["message"] == ("failed in 15 of 24 round(s) (rounds 5-18, 22); rounds 5-18: "
                               "gpu3 ecc 4 > 0; round 22: n3 unreachable")
    flapping = aggregate(_tallied(*[bad, ok] * 30))
    assert flapping["message"].startswith("failed in 30 of 60 round(s) (rounds 1, 3, 5, 7, ")
    assert flapping["message"].endswith("; round 9: gpu3 ecc 4 > 0; and 25 more spell(s)")
    assert "and 0 more" not in aggregate(_tallied(bad))["message"]
    assert ranges(range(1, 200, 2), most=3) == "1, 3, 5 and 97 more range(s)"
    assert aggregate(_tallied(ok, ok))["outcome"] == "passed"
    skipped: ResultLine = {"case": "c", "outcome": "skipped", "message": "busy"}
    assert aggregate(_tallied(skipped))["outcome"] == "skipped"
    assert aggregate(_tallied(skipped, ok))["outcome"] == "passed"


def _reading(at: float, *states: bool) -> soak_tally.NicReading:
    return soak_tally.NicReading(at, [{"name": f"mlx5_{i}/1", "active": up, "state": "ACTIVE"
                                 if up else "DOWN", "phys_state": "LinkUp" if up else
                                 "Polling", "counters": {}} for i, up in enumerate(states)])


def test_a_port_down_for_the_flap_time_fails_its_node_at_the_round_it_was_seen() -> None:
    """A port not active in readings `flap` apart (and in none between) fails the node,
    named with the round its spell began; a shorter spell, or one broken by a reading
    that saw it up, does not; a port gone from the reading is down; each port once."""
    tally = soak_tally.Tally(flap_s=30.0)
    rounds: list[list[soak_tally.NicReading]] = [
        [_reading(0, True, True, True), _reading(10, True, True, True)],
        [_reading(100, False, True, False), _reading(120, True, True, False)],  # 20 s
        [_reading(200, True, False, False), _reading(229, True, False, False)],
        [_reading(300, True, True, False), _reading(310, True, True)],  # mlx5_2 gone
        [_reading(400, True, True), _reading(500, True, True)],
    ]
    for number, readings in enumerate(rounds, 1):
        tally.add(number, readings[0].at, [], {}, nics={"n1": readings})
    assert tally.growth["n1"] == [
        "mlx5_2/1: down (DOWN, Polling) for at least 100 s, from round 2 "
        "(1970-01-01T00:01:40Z) to round 3 (1970-01-01T00:03:20Z): fabric.flap is 30 s"]
    # mlx5_0 down for 20 s, mlx5_1 for 29 s then up: shorter than the flap time
    (case,) = tally.counter_cases(["n1"])
    assert not case.passed and case.props["rounds_compared"] == 5
    gone = soak_tally.Tally(flap_s=0.0)
    gone.add(1, 0.0, [], {}, nics={"n1": [_reading(0, True, True)]})
    gone.add(2, 9.0, [], {}, nics={"n1": [_reading(9, True)]})
    assert gone.growth["n1"] == [
        "mlx5_1/1: down (gone from the reading) for at least 0 s, from round 2 "
        "(1970-01-01T00:00:09Z) to round 2 (1970-01-01T00:00:09Z): fabric.flap is 0 s"]


def test_a_figure_that_sags_in_one_round_is_named_with_that_round() -> None:
    tally = soak_tally.Tally()
    for number, tflops in enumerate((700.0, 702.0, 560.0, 699.0), 1):
        tally.add(number, 0.0, [{"case": "acceptance/test_gpus.py::test_gpu_matmul[n1-gpu3-bf16]",
                                 "clause": "gpus.matmul.bf16", "node": "n1", "gpu": 3,
                                 "outcome": "passed", "comparison": ">=", "unit": "TFLOPS",
                                 "measured": tflops, "measured_base": tflops * 1e12}], {})
    (case,) = tally.stability_cases(SoakSpec())
    assert not case.passed
    assert case.param == "test_gpu_matmul[n1-gpu3-bf16]"
    assert case.message == (
        "n1 gpu3 gpus.matmul.bf16: worst round 3 560 TFLOPS is 20.0 % below round 1's 700; "
        "spread 9.1 % over 4 rounds (coefficient of variation): beyond worst round at most "
        "10 % worse than the first, spread at most 5 %")
    assert case.props["measured"] == "spread 9.14 %, worst round 3 -20.0 % against round 1"
    assert soak_tally.Tally().stability_cases(SoakSpec()) == []  # no figure, no case
