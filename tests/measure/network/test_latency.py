"""measure/network/latency.py: the ping-pong's schedule of disjoint pairs, a node's figures
against its peers' median, and the run that leaves out, and plays again without, the
nodes that do not answer (its one job replaced here: no launcher)."""

from __future__ import annotations

import itertools
import json
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_cluster.measure.network import latency
from pytest_cluster.probes.jobs import pingpong
from tests.contract.sections.test_interconnect import LATENCY, ic
from tests.measure.test_prober import Recording


@pytest.mark.parametrize("count", [2, 3, 4, 7, 8, 33, 64])
def test_every_pair_meets_once_in_rounds_of_disjoint_pairs(count: int) -> None:
    rounds = latency.schedule(count)
    assert rounds == tuple(range(pingpong.rounds_of(count)))
    met = [pair for index in rounds for pair in pingpong.pairs_of_round(count, index)]
    assert sorted(met) == sorted(itertools.combinations(range(count), 2))
    for index in rounds:  # each node in one pair of a round at most
        nodes = [n for pair in pingpong.pairs_of_round(count, index) for n in pair]
        assert len(nodes) == len(set(nodes)) >= count - 1


def test_a_large_cluster_plays_a_few_rounds_each_node_with_as_many_peers() -> None:
    rounds = latency.schedule(1024)
    assert len(rounds) == 2 * 10 and len(set(rounds)) == 20
    met: dict[int, set[int]] = {}
    for index in rounds:
        for a, b in pingpong.pairs_of_round(1024, index):
            met.setdefault(a, set()).add(b)
            met.setdefault(b, set()).add(a)
    assert len(met) == 1024 and all(len(peers) == 20 for peers in met.values())


@pytest.mark.parametrize("values", [[1.0, 2.0, 2.0, 3.0, 5.0, 8.0], [4.0] * 5,
                                    [float(i % 7) for i in range(40)]])
def test_the_median_without_a_nodes_pairs_is_the_plain_median_of_the_rest(
        values: list[float]) -> None:
    every = sorted(values)
    for count in range(len(every) + 1):
        for mine in {tuple(sorted(c)) for c in itertools.islice(
                itertools.combinations(every, count), 50)}:
            rest = list(every)
            for value in mine:
                rest.remove(value)
            expected = statistics.median(rest) if rest else None
            assert latency.median_without(every, mine) == expected


def test_a_pair_measured_twice_counts_its_smaller_figure() -> None:
    links = [("a", "b", 8, 10e-6), ("a", "c", 8, 500e-6), ("b", "c", 8, 9e-6),
             ("c", "a", 8, 12e-6)]
    run = latency.LatencyRun(("a", "b", "c"), "gloo", (8,), (0, 1, 2), 3, tuple(links))
    assert run.peers("a", 8) == {"b": 10e-6, "c": 12e-6}
    assert run.peers("c", 8) == {"a": 12e-6, "b": 9e-6}
    assert run.matrix(8)[0] == [None, 10.0, 12.0]


def test_a_node_far_in_the_first_job_only_is_measured_again_and_not_blamed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Four nodes (every pair in one job): node b stands out of the first job (a busy host
    woke its rank late), so every pair is measured again before any node is blamed; the
    second job finds b near: b passes. A node far in both jobs stays far."""
    spec = ic(LATENCY)
    jobs: list[tuple[str, ...]] = []

    def measured(far: dict[str, float]) -> Any:
        def one_job(launcher: Any, spec: Any, nodes: Any, base: latency.LatencyRun) -> Any:
            jobs.append(tuple(nodes))
            scale = far if len(jobs) == 1 else {n: f for n, f in far.items() if n != "b"}
            links = [(x, y, 8, 10e-6 * max(scale.get(x, 1), scale.get(y, 1)))
                     for i, x in enumerate(nodes) for y in nodes[i + 1:]]
            return replace(base, links=(*base.links, *links))
        return one_job

    monkeypatch.setattr(latency, "_one_job", measured({"b": 20}))
    run = latency.run_latency(None, spec, ["a", "b", "c", "d"])  # type: ignore[arg-type]
    assert jobs == [("a", "b", "c", "d")] * 2 and run.retested == ("b",)
    assert not run.far(8, 1.5)
    jobs.clear()
    monkeypatch.setattr(latency, "_one_job", measured({"b": 20, "f": 30}))
    run = latency.run_latency(None, spec, list("abcdef"))  # type: ignore[arg-type]
    assert run.retested == ("f", "b") and jobs == [tuple("abcdef")] * 2
    assert set(run.far(8, 1.5)) == {"f"}


def test_the_ping_pong_runs_only_among_the_nodes_that_answer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The nodes left out run in no job and are listed with why; with fewer than 2 left
    no job runs and the run says why, naming them."""
    jobs: list[tuple[str, ...]] = []

    def one_job(launcher: Any, spec: Any, nodes: Any, base: latency.LatencyRun) -> Any:
        jobs.append(tuple(nodes))
        return replace(base, links=tuple((x, y, 8, 10e-6) for i, x in enumerate(nodes)
                                         for y in nodes[i + 1:]))

    monkeypatch.setattr(latency, "_one_job", one_job)
    gone = {"c": "host probe unreachable: ssh: connection refused"}
    run = latency.run_latency(None, ic(LATENCY), list("abcd"), gone)  # type: ignore[arg-type]
    assert jobs == [("a", "b", "d")] and run.ok and run.left_out == gone
    assert run.nodes == ("a", "b", "d") and run.of_rounds == 3
    assert latency.LatencyRun.from_json(json.loads(json.dumps(run.to_json()))) == run
    jobs.clear()
    run = latency.run_latency(None, ic(LATENCY), list("ac"), gone)  # type: ignore[arg-type]
    assert jobs == [] and not run.ok and run.error == (
        "fewer than 2 nodes could take part, no pair to measure (left out: c)")


def test_a_failed_ping_pong_is_played_again_without_the_nodes_that_stopped_answering(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After a failed job, `recheck` is asked about its nodes: those it names are left
    out and the ping-pong is played once more (once: a second failure stands); when it
    names none, the failure stands and no job runs again."""
    jobs: list[tuple[str, ...]] = []

    def one_job(launcher: Any, spec: Any, nodes: Any, base: latency.LatencyRun) -> Any:
        jobs.append(tuple(nodes))
        if "b" in nodes or len(jobs) > 2:
            return replace(base, error="b rank 1 exited with code 1: Connection reset")
        return replace(base, links=tuple((x, y, 8, 10e-6) for i, x in enumerate(nodes)
                                         for y in nodes[i + 1:]))

    monkeypatch.setattr(latency, "_one_job", one_job)
    asked: list[list[str]] = []

    def recheck(nodes: list[str]) -> dict[str, str]:
        asked.append(nodes)
        return {"b": "host probe unreachable: gone", "z": "not of the job"}

    spec, launcher = ic(LATENCY), cast(Any, None)  # _one_job is replaced: no launcher
    run = latency.run_latency(launcher, spec, list("abcd"), {"d": "host probe timeout"},
                              recheck)
    assert jobs == [("a", "b", "c"), ("a", "c")] and asked == [["a", "b", "c"]]
    assert run.ok and run.nodes == ("a", "c") and list(run.left_out) == ["d", "b"]
    assert run.left_out["b"] == ("host probe unreachable: gone (read again after the "
                                 "ping-pong failed: b rank 1 exited with code 1: "
                                 "Connection reset)")
    assert run.details["first_error"] == "b rank 1 exited with code 1: Connection reset"
    jobs.clear()
    run = latency.run_latency(launcher, spec, list("abc"), None, lambda nodes: {})
    assert jobs == [("a", "b", "c")] and run.error.startswith("b rank 1") and not run.left_out
    jobs.clear()
    run = latency.run_latency(launcher, spec, list("abcde"), None,
                              lambda nodes: {"e": "host probe unreachable"})
    assert jobs == [tuple("abcde"), tuple("abcd")] and run.error.startswith("b rank 1")
    assert list(run.left_out) == ["e"]


def test_each_pair_is_read_from_its_lower_rank_and_a_nodes_bad_output_is_said() -> None:
    """One-way is half the typical round trip, on the nodes the job ran the ranks on; a
    pair naming no higher rank of the job, or a figure that is not a time, is left out
    and said of the node that reported it."""
    data = [{"rank": 0, "pairs": [{"peer": 1, "sizes": {"8": {"typical_rtt_s": 20e-6}}},
                                  {"peer": 0, "sizes": {"8": {"typical_rtt_s": 1e-6}}}]},
            {"rank": 1, "pairs": [{"peer": 2, "sizes": {"8": {"typical_rtt_s": "fast"}}}]},
            {"rank": 2, "pairs": []}]
    said: dict[str, str] = {}
    assert latency.links_of(["a", "b", "c"], data, said) == [("a", "b", 8, 10e-6)]
    assert said == {
        "a": "a pair with rank 0, no other rank of this job (bad output of the node)",
        "b": "a round trip to c at 8 B of 'fast': not a time (bad output of the node)"}


def test_the_ping_pong_of_a_prober_runs_among_the_nodes_that_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """latency.run over a Prober: its nodes less those whose host probe did not answer
    (left out with why), once per run, read once per process."""
    cluster = Recording(tmp_path, silent=["sim-gpu-02"])
    jobs: list[tuple[str, ...]] = []

    def one_job(launcher: Any, spec: Any, nodes: Any, base: latency.LatencyRun) -> Any:
        jobs.append(tuple(nodes))
        return replace(base, links=tuple((x, y, 8, 10e-6) for i, x in enumerate(nodes)
                                         for y in nodes[i + 1:]))

    monkeypatch.setattr(latency, "_one_job", one_job)
    run = latency.run(cluster)
    answering = tuple(node for node in cluster.nodes if node != "sim-gpu-02")
    assert jobs == [answering] and run.ok and run.nodes == answering
    assert run.left_out == cluster.left_out() == {
        "sim-gpu-02": "host probe unreachable: no route"}
    assert latency.run(cluster) is run and jobs == [answering]
