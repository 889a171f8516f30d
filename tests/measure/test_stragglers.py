"""Who held a training job up (stragglers.py), from sets of progress records and of
per-rank times: the rank that stopped is named, never the ranks waiting for it; a slow
forward pass names its rank, a slow link its node; what cannot be told is said."""

from __future__ import annotations

from pytest_cluster.measure.stragglers import (
    Progress,
    RankTimes,
    name_hang,
    name_straggler,
    rank_list,
    seconds,
)


def _at(node: str, rank: int, step: int, phase: str, phase_s: float = 8.4,
        silent_s: float = 0.2, stalled: bool = False) -> Progress:
    return Progress(node, rank, step, phase, phase_s, silent_s, stalled)


def test_a_stopped_rank_is_named_not_those_that_wait_for_it() -> None:
    records = [_at("node1", 0, 8, "wait", 8.1), _at("node2", 1, 8, "wait", 8.0),
               _at("node3", 2, 8, "forward", 8.4, silent_s=8.4, stalled=True),
               _at("node4", 3, 8, "wait", 8.2)]
    assert name_hang(records, 8.0, 4.0, range(4)) == (
        "node3 rank 2: stuck at step 8 (forward) for 8.4 s (bound 8 s), no sign of life "
        "for 8.4 s: stopped or frozen; ranks 0, 1, 3 wait for it in the all-reduce after "
        "the forward pass")


def test_a_silent_rank_in_the_same_phase_as_the_others_is_still_named() -> None:
    """Stopped inside the gradient all-reduce: its step and phase match the others';
    its heartbeat does not."""
    records = [_at("a", 0, 5, "backward"), _at("b", 1, 5, "backward", silent_s=6.0),
               _at("c", 2, 5, "backward")]
    assert name_hang(records, 5.0, 2.5) == (
        "b rank 1: stuck at step 5 (backward) for 8.4 s (bound 5 s), no sign of life for "
        "6.0 s: stopped or frozen; ranks 0, 2 wait for it in the backward pass's "
        "gradient all-reduce")


def test_a_live_rank_behind_the_others_is_named() -> None:
    """A rank alive (beating) but still in its forward pass: it holds the others up."""
    records = [_at("a", 0, 3, "wait"), _at("a", 1, 3, "forward", 9.5), _at("b", 2, 3, "wait"),
               _at("b", 3, 2, "optimiser", 0.3)]
    assert name_hang(records, 8.0, 4.0) == (
        "b rank 3: stuck at step 2 (optimiser) for 0.30 s (bound 8 s); ranks 0, 2 wait for "
        "it in the all-reduce after the forward pass; rank 1 waits for it in the "
        "forward pass")


def test_when_no_rank_is_behind_none_is_named() -> None:
    together = [_at("a", 0, 4, "backward", 9.0), _at("b", 1, 4, "backward", 9.1)]
    assert name_hang(together, 8.0, 4.0) == (
        "no rank is behind: every rank is at step 4 (backward), for up to 9.1 s (bound "
        "8 s), each with a heartbeat: no single rank holds the others up; its collective "
        "is slower than the bound or does not complete")
    computing = [_at("a", 0, 0, "forward", 0.06), _at("b", 1, 0, "forward", 0.05)]
    assert name_hang(computing, 0.001, 1.0).endswith(
        "no single rank holds the others up; the step's own work is slower than the bound")


def test_ranks_without_progress_are_said() -> None:
    records = [_at("a", 0, 1, "wait"), _at("b", 1, 1, "forward", stalled=True)]
    assert name_hang(records, 8.0, 4.0, range(4)).endswith(
        "; rank 0 waits for it in the all-reduce after the forward pass; no progress from "
        "ranks 2, 3")


def test_many_stuck_ranks_are_counted_past_the_first_eight() -> None:
    records = [_at("n", r, 2, "forward", silent_s=9.0) for r in range(20)]
    records.append(_at("m", 20, 2, "wait"))
    text = name_hang(records, 8.0, 4.0)
    assert text.count(": stuck at") == 8
    assert "; and 12 more rank(s) like them; rank 20 waits for them in the all-reduce" in text


def test_a_progress_record_from_job_node() -> None:
    record = {"rank": 2, "step": 8, "phase": "forward", "since": 1.0, "beat": 1.0,
              "phase_s": 8.4, "silent_s": 8.3}
    assert Progress.of("node3", 2, record, "stalled") == Progress(
        "node3", 2, 8, "forward", 8.4, 8.3, True)
    assert Progress.of("node3", 2, None, 0) is None
    assert Progress.of("node3", 2, {"phase": "forward"}, 0) is None


def test_progress_orders_steps_then_the_link_probe_then_the_end() -> None:
    order = [_at("a", 0, 0, "start"), _at("a", 0, 1, "optimiser"), _at("a", 0, 2, "forward"),
             _at("a", 0, 2, "wait"), _at("a", 0, 0, "link probe"),
             _at("a", 0, 1, "link probe"), _at("a", 0, 0, "final barrier")]
    assert sorted(order, key=lambda p: p.order) == order
    assert [p.at for p in order[-3:]] == ["link probe round 0", "link probe round 1",
                                          "final barrier"]


def _times(node: str, rank: int, forward: float, wait: float,
           exchanges: dict[int, float] | None = None) -> RankTimes:
    return RankTimes(node, rank, forward, wait, exchanges or {})


def _ring_of_four(slow_node: str | None, slow_s: float = 0.42,
                  fast_s: float = 0.004) -> list[RankTimes]:
    """Four nodes, one rank each; every exchange with `slow_node` takes slow_s."""
    nodes = ["node1", "node2", "node3", "node4"]
    return [_times(node, rank, 0.12, 0.01,
                   {peer: slow_s if slow_node in (node, nodes[peer]) else fast_s
                    for peer in range(4) if peer != rank})
            for rank, node in enumerate(nodes)]


def test_a_slow_forward_pass_names_its_rank() -> None:
    ranks = [_times("node1", 0, 0.12, 0.29), _times("node2", 1, 0.41, 0.001),
             _times("node3", 2, 0.13, 0.28), _times("node4", 3, 0.12, 0.30)]
    assert name_straggler(ranks, 1 << 20) == (
        "node2 rank 1 computes slowest: its forward pass takes 0.41 s per step against "
        "0.12 s on the other ranks (median), and they wait 0.29 s per step for it after "
        "the forward pass while it waits 1 ms")


def test_a_slow_rank_that_also_waits_is_not_called_the_cause() -> None:
    """Slow forward, but it waits as long as the others: not what holds them up."""
    ranks = [_times("a", 0, 0.12, 0.02), _times("b", 1, 0.41, 0.02),
             _times("c", 2, 0.13, 0.02)]
    assert name_straggler(ranks, 1 << 20).startswith("no rank stands out: forward pass ")


def test_a_rank_waited_for_without_a_slow_forward_pass_comes_late() -> None:
    """What a slow link did on the namespace cluster: node4 leaves each step's gradient
    all-reduce last, so the others wait for it after the next forward pass; its forward
    pass (12 ms against 8 ms) does not account for that, so it is not called slow."""
    ranks = [_times("node1", 0, 0.0083, 0.11), _times("node2", 1, 0.0081, 0.10),
             _times("node3", 2, 0.0085, 0.11), _times("node4", 3, 0.0121, 0.003)]
    assert name_straggler(ranks, 1 << 20) == (
        "the others wait 0.11 s per step for node4 rank 3 after the forward pass (it waits "
        "3 ms), though its forward pass takes 12.1 ms against their 8.3 ms: it comes late "
        "into its steps, out of the previous step's gradient all-reduce (not slow compute; a "
        "link the link probe could not place, or the host)")


def test_with_a_slow_link_placed_the_late_rank_is_not_named() -> None:
    """Seen on the namespace cluster: node4's link slow, node3 (its ring neighbour)
    came late into its steps; the link explains that, so only node4 is named."""
    ranks = _ring_of_four("node4", slow_s=0.77, fast_s=0.0017)
    late = RankTimes("node3", 2, 0.0727, 0.0127, ranks[2].exchange_s)
    ranks = [RankTimes(r.node, r.rank, 0.0423, 0.24, r.exchange_s) for r in ranks]
    ranks[2] = late
    text = name_straggler(ranks, 1 << 20)
    assert text.startswith("node4's link is the slowest: ") and "node3" not in text


def test_a_slow_link_names_its_node_from_the_pairwise_exchanges() -> None:
    assert name_straggler(_ring_of_four("node4"), 1 << 20) == (
        "node4's link is the slowest: exchanging 1 MiB each way with a rank on another "
        "node takes 0.42 s (median of its 3 exchanges) against 4 ms between the other "
        "nodes (median of 3): every exchange node4 is in is slow, the others' among "
        "themselves are not (in the gradient all-reduce every rank waits alike: a ring "
        "moves at its slowest link)")


def test_exchanges_on_the_same_node_do_not_count_for_its_link() -> None:
    """Two ranks per node: the fast exchange between node4's own ranks is left out."""
    node_of = ["node1", "node1", "node2", "node2", "node4", "node4"]
    ranks = [_times(node, rank, 0.1, 0.01,
                    {peer: 0.0001 if node_of[peer] == node else
                     0.4 if "node4" in (node, node_of[peer]) else 0.004
                     for peer in range(6) if peer != rank})
             for rank, node in enumerate(node_of)]
    assert "node4's link is the slowest: " in name_straggler(ranks, 1 << 20)
    assert "takes 0.40 s (median of its 8 exchanges) against 4 ms between the other " \
           "nodes (median of 4)" in name_straggler(ranks, 1 << 20)


def test_an_even_run_names_none_with_the_ranges() -> None:
    assert name_straggler(_ring_of_four(None), 1 << 20) == (
        "no rank stands out: forward pass 0.12 s to 0.12 s per step, wait after it 10.0 ms "
        "to 10.0 ms, link exchanges of 1 MiB 4 ms to 4 ms")


def test_two_nodes_cannot_place_a_slow_link() -> None:
    ranks = [_times("a", 0, 0.1, 0.01, {1: 0.4}), _times("b", 1, 0.1, 0.01, {0: 0.4})]
    assert name_straggler(ranks, 1 << 20).endswith(
        "; two nodes: a slow link cannot be placed on either (every exchange between them "
        "involves both)")


def test_rank_times_from_a_ranks_line() -> None:
    data = {"forward_s": [0.1, 0.3, 0.2], "wait_s": [0.0, 0.02, 0.01],
            "link": {"bytes": 1024, "exchange_s": {"1": 0.5}}}
    assert RankTimes.of("a", 0, data) == RankTimes("a", 0, 0.2, 0.01, {1: 0.5})
    assert RankTimes.of("a", 0, {}) == RankTimes("a", 0, 0.0, 0.0, {})


def test_durations_and_rank_lists_read_well() -> None:
    assert [seconds(v) for v in (12.34, 8.44, 0.4201, 0.042, 0.0031, 0.00046)] == [
        "12.3 s", "8.4 s", "0.42 s", "42.0 ms", "3.1 ms", "0.46 ms"]
    assert rank_list([3, 0, 1, 7, 8, 9, 10, 12]) == "0, 1, 3, 7-10, 12"


