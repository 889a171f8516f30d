"""The training job program's link probe rounds: every pair of ranks once, each rank in
one pair of a round at most."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_cluster.probes.jobs.train import pairings


@given(st.integers(min_value=1, max_value=40))
def test_every_rank_meets_every_other_once_in_disjoint_rounds(world: int) -> None:
    """The link probe's rounds (probes/jobs/train.py): each pair once, no rank twice in a
    round, so every exchange has its two links to itself."""
    rounds = pairings(world)
    met = [pair for pairs in rounds for pair in pairs]
    assert sorted(met) == [(a, b) for a in range(world) for b in range(a + 1, world)]
    for pairs in rounds:
        ranks = [rank for pair in pairs for rank in pair]
        assert len(ranks) == len(set(ranks))
    assert len(rounds) == (world - 1 if world % 2 == 0 else world) if world > 1 else True

