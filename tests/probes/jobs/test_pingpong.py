"""The ping-pong job program's own arithmetic: its round-robin rounds and a pair's typical
round trip (the rounds as the controller schedules them: tests/measure/network/test_latency.py)."""

from __future__ import annotations

import itertools

import pytest

from pytest_cluster.probes.jobs import pingpong


def test_a_pairs_round_trip_leaves_out_what_the_host_slowed() -> None:
    """Round trips a busy host slowed (a rank woken late: here most of them) leave the
    pair's figure alone; a longer path, slower in every burst, does not."""
    near = [30e-6 if i % 10 == 3 else 900e-6 for i in range(100)]
    assert pingpong.typical(near) == 30e-6
    far = [2030e-6 + (i % 7) * 1e-6 for i in range(100)]
    assert pingpong.typical(far) == 2030e-6
    assert pingpong.typical([5.0]) == 5.0


def test_a_percentile_is_the_value_at_its_share_of_the_ordered_values() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert [pingpong.percentile(values, share) for share in (0.0, 0.5, 0.99, 1.0)] == [
        1.0, 3.0, 5.0, 5.0]


@pytest.mark.parametrize("count", [0, 1, 2, 5, 6])
def test_the_tournament_meets_every_pair_once_an_odd_player_sitting_out(count: int) -> None:
    rounds = [pingpong.pairs_of_round(count, index)
              for index in range(pingpong.rounds_of(count))]
    assert sorted(pair for pairs in rounds for pair in pairs) == \
        list(itertools.combinations(range(count), 2))
    for pairs in rounds:
        assert all(low < high for low, high in pairs)
        players = [player for pair in pairs for player in pair]
        assert len(players) == len(set(players)) == count - count % 2
